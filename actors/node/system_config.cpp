#include "actors/node/system_config.hpp"

#include <sched.h>

#include <caf/actor_system_config.hpp>
#include <caf/io/middleman.hpp>
#include <caf/thread_hook.hpp>

#include "actors/errors.hpp"
#include "actors/messages.hpp"

namespace deepinfer::actors {

namespace {

/// Puts every thread the actor system starts under SCHED_BATCH (threads they start inherit it).
class batch_threads final : public caf::thread_hook {
public:
  void init(caf::actor_system&) override {
    // nop
  }
  void thread_started() override {
    sched_param param{};
    (void)sched_setscheduler(0, SCHED_BATCH, &param); // best effort: the default policy otherwise
  }
  void thread_terminates() override {
    // nop
  }
};

} // namespace

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
  if (s.batch_threads)
    cfg->add_thread_hook<batch_threads>();
  return cfg;
}

} // namespace deepinfer::actors
