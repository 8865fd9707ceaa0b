#pragma once

#include <caf/fwd.hpp>

#include "actors/balancer/balancer_actors.hpp"
#include "actors/interfaces.hpp"

namespace deepinfer::actors {

/// Spawns the controller: it keeps the membership view (see `membership`), monitors the agent of
/// every registered node (a SIGKILLed peer is reported by CAF within milliseconds; a frozen one
/// only through middleman heartbeats) and pushes the view to every live agent on each change.
/// It runs the cluster's prefill and decode balancers (supervised: one that dies is started
/// again, its soft state rebuilt) and names them in the view.
controller_actor spawn_controller(caf::actor_system& sys, const balancer_actors_config& balancers = {});

} // namespace deepinfer::actors
