#include "actors/system_config.hpp"

#include <caf/actor_system_config.hpp>
#include <caf/io/middleman.hpp>

#include "actors/errors.hpp"
#include "actors/messages.hpp"

namespace deepinfer::actors {

std::unique_ptr<caf::actor_system_config> make_actor_system_config(const system_settings& s) {
  auto cfg = std::make_unique<caf::actor_system_config>();
  cfg->load<caf::io::middleman>();
  cfg->add_message_types<caf::id_block::deepinfer>();
  cfg->add_error_category(caf::atom("deepinfer"), render_errc);
  cfg->set("scheduler.max-threads", static_cast<size_t>(s.scheduler_threads));
  cfg->set("scheduler.policy", caf::atom_from_string(s.scheduler_policy));
  cfg->set("middleman.workers", static_cast<size_t>(s.middleman_workers));
  cfg->set("middleman.heartbeat-interval", caf::timespan{s.heartbeat_interval});
  cfg->set("middleman.connection-timeout", caf::timespan{s.connection_timeout});
  return cfg;
}

} // namespace deepinfer::actors
