#pragma once

// The actor-system config of the actors' unit tests (one process, no io module).

#include <caf/actor_system_config.hpp>
#include <caf/atom.hpp>

#include "actors/errors.hpp"
#include "actors/messages.hpp"

namespace deepinfer::actors::testing {

/// Our message types and error category; `deterministic`: CAF's testing scheduler (nothing runs
/// until the test runs the coordinator).
struct test_system_config : caf::actor_system_config {
  explicit test_system_config(bool deterministic = false) {
    add_message_types<caf::id_block::deepinfer>();
    add_error_category(caf::atom("deepinfer"), render_errc);
    if (deterministic)
      set("scheduler.policy", caf::atom("testing"));
  }
};

} // namespace deepinfer::actors::testing
