#pragma once

#include <memory>

#include <caf/fwd.hpp>

#include "actors/node/system_settings.hpp"

namespace deepinfer::actors {

/// An actor-system config with the io module, our message types and error category, built only
/// from `settings` (never from an ini file: actor_system_config reads one only from parse(),
/// which we never call). Every process of a cluster must build it from the same settings.
std::unique_ptr<caf::actor_system_config> make_actor_system_config(const system_settings& settings);

} // namespace deepinfer::actors
