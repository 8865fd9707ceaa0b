#include "actors/control/controller.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>

#include <caf/actor_system.hpp>
#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/balancer/balancer_actors.hpp"
#include "actors/http/metrics_registry.hpp"
#include "actors/log.hpp"
#include "actors/control/membership.hpp"
#include "actors/control/pool_scaler.hpp"

namespace deepinfer::actors {

namespace {

int64_t now_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

struct registered_agent {
  std::string node;
  uint64_t incarnation = 0;
  node_agent_actor handle;
};

/// How long an assigned pool node may take to load the model and answer.
constexpr auto assign_timeout = std::chrono::minutes{5};
/// What an unassign may take beyond its grace (the handoff itself, a prefill's last chunks).
constexpr auto unassign_slack = std::chrono::minutes{2};

struct scaler_state {
  autoscaler_settings cfg;
  std::optional<balancers::autoscaler> policy;
  pool_scaler pool;
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point last = started;
  int prefill_target = -1, decode_target = -1;
  std::vector<node_role> waiting;
  bool pool_short = false;
  http::metrics_registry::gauge* prefill_gauge = nullptr;
  http::metrics_registry::gauge* decode_gauge = nullptr;
  http::metrics_registry::gauge* pool_gauge = nullptr;
};

struct controller_state {
  membership members{now_ms};
  std::map<caf::actor_addr, registered_agent> agents;
  balancer_actors_config balancer_cfg;
  prefill_balancer_actor prefill_balancer;
  decode_balancer_actor decode_balancer;
  scaler_state scaler;
  static inline const char* name = "deepinfer.controller";
};

using controller_pointer = controller_actor::stateful_pointer<controller_state>;

void broadcast(controller_pointer self) {
  auto& view = self->state.members.view();
  for (auto& [addr, agent] : self->state.agents)
    self->send(agent.handle, view_atom::value, view);
  if (self->state.prefill_balancer)
    self->send(self->state.prefill_balancer, view_atom::value, view);
  if (self->state.decode_balancer)
    self->send(self->state.decode_balancer, view_atom::value, view);
}

/// Starts whichever balancer is not running (at start, and after one died: its state is soft)
/// and names both in the view.
void start_balancers(controller_pointer self) {
  auto& st = self->state;
  if (!st.prefill_balancer) {
    st.prefill_balancer = spawn_prefill_balancer(self->system(), st.balancer_cfg);
    self->monitor(st.prefill_balancer);
    // It goes with the controller (views elsewhere hold handles that would keep it alive).
    self->attach_functor([b = st.prefill_balancer](const caf::error&) {
      caf::anon_send_exit(b, caf::exit_reason::user_shutdown);
    });
  }
  if (!st.decode_balancer) {
    st.decode_balancer = spawn_decode_balancer(self->system(), st.balancer_cfg);
    self->monitor(st.decode_balancer);
    self->attach_functor([b = st.decode_balancer](const caf::error&) {
      caf::anon_send_exit(b, caf::exit_reason::user_shutdown);
    });
  }
  st.members.set_balancers(caf::actor_cast<caf::strong_actor_ptr>(st.prefill_balancer),
                           caf::actor_cast<caf::strong_actor_ptr>(st.decode_balancer));
  broadcast(self);
}

void forget_agent_of(controller_pointer self, const std::string& node) {
  auto& agents = self->state.agents;
  for (auto i = agents.begin(); i != agents.end();) {
    if (i->second.node == node) {
      self->demonitor(i->first);
      i = agents.erase(i);
    } else {
      ++i;
    }
  }
}

node_agent_actor agent_of(controller_pointer self, const std::string& node) {
  for (auto& [addr, agent] : self->state.agents)
    if (agent.node == node)
      return agent.handle;
  return {};
}

void send_assignment(controller_pointer self, const pool_scaler::action& a) {
  auto& sc = self->state.scaler;
  auto agent = agent_of(self, a.node);
  if (!agent) {
    (a.what == pool_scaler::action::kind::assign ? sc.pool.assigned(a.node, false) : sc.pool.released(a.node));
    return;
  }
  const auto role = to_string(a.role);
  if (a.what == pool_scaler::action::kind::assign) {
    log().info("autoscaler: node={} from the ready pool becomes a {} instance", a.node, role);
    self->request(agent, assign_timeout, assign_atom::value, pool_assignment{a.role, -1})
      .then(
        [=](std::string& instance) {
          self->state.scaler.pool.assigned(a.node, true);
          log().info("autoscaler: instance={} started on ready-pool node={}", instance, a.node);
        },
        [=](caf::error& e) {
          self->state.scaler.pool.assigned(a.node, false);
          log().warn("autoscaler: node={} could not become a {} instance: {}; it stays in the pool", a.node, role,
                     self->system().render(e));
        });
    return;
  }
  const auto grace = std::chrono::milliseconds{static_cast<int64_t>(sc.cfg.policy.decode_grace_s * 1000.0)};
  log().info("autoscaler: the {} instance of node={} drains{} and returns the node to the ready pool", role, a.node,
             a.role == node_role::decode ? " (grace " + std::to_string(grace.count()) + " ms, then its requests move)" : "");
  self->request(agent, grace + unassign_slack, unassign_atom::value, pool_assignment{a.role, grace.count()})
    .then(
      [=](uint64_t moved) {
        self->state.scaler.pool.released(a.node);
        log().info("autoscaler: node={} is back in the ready pool ({} request(s) handed off)", a.node, moved);
      },
      [=](caf::error& e) {
        self->state.scaler.pool.released(a.node);
        log().warn("autoscaler: node={} did not drain cleanly: {}; counted back in the pool", a.node,
                   self->system().render(e));
      });
}

/// One autoscaler decision (DESIGN §6.5) from what the balancers saw since the last one.
void autoscale(controller_pointer self) {
  auto& st = self->state;
  auto& sc = st.scaler;
  using seconds = std::chrono::duration<double>;
  const auto now = std::chrono::steady_clock::now();
  const double dt = std::max(seconds(now - sc.last).count(), 1e-3);
  sc.last = now;
  const auto demand = st.balancer_cfg.demand->take();
  const auto& view = st.members.view();
  const auto have = sc.pool.count(view);
  // Only a cluster with a ready pool is told it waits or runs short (one without has nothing to
  // assign: the targets are exported for its operator).
  const bool has_pool = std::any_of(view.nodes.begin(), view.nodes.end(),
                                    [](const node_status& n) { return n.info.roles.has(node_role::pool); });
  balancers::autoscaler::observation obs;
  obs.now_s = seconds(now - sc.started).count();
  obs.missed_tok_per_s = static_cast<double>(demand.missed_tokens) / dt;
  obs.queue_time_s = demand.queue_p90_s;
  for (auto& l : st.balancer_cfg.decode_loads->get())
    obs.requests_in_flight += static_cast<double>(l.requests);
  double quota = 0.0;
  for (auto& l : st.balancer_cfg.prefill_loads->get())
    quota += l.quota_s;
  const double capacity = have.prefill_ranks * st.balancer_cfg.router.prefill.quota_per_rank_s;
  obs.quota_use = capacity > 0 ? quota / capacity : 0.0;
  obs.prefill = have.prefill;
  obs.decode = have.decode;
  obs.prefill_starting = have.prefill_starting;
  obs.decode_starting = have.decode_starting;
  const auto d = sc.policy->decide(obs);
  if (d.prefill != sc.prefill_target || d.decode != sc.decode_target)
    log().info("autoscaler: targets prefill {} -> {} decode {} -> {} (missed {:.0f} tok/s, prefill queue p90 {:.2f} s, "
               "quota use {:.2f}, {} decode requests in flight; {} idle in the ready pool)",
               have.prefill, d.prefill, have.decode, d.decode, obs.missed_tok_per_s, obs.queue_time_s, obs.quota_use,
               obs.requests_in_flight, have.idle_pool);
  sc.prefill_target = d.prefill;
  sc.decode_target = d.decode;
  if (sc.prefill_gauge) {
    sc.prefill_gauge->set(d.prefill);
    sc.decode_gauge->set(d.decode);
  }
  auto plan = sc.pool.plan(view, d.prefill, d.decode);
  for (auto& a : plan.actions)
    send_assignment(self, a);
  if (plan.waiting != sc.waiting && has_pool) {
    for (auto role : plan.waiting)
      log().warn("autoscaler: scaling {} up waits: no idle ready-pool node may take it (add nodes with "
                 "roles = [\"pool\"] or standby = true to the manifest)", to_string(role));
    sc.waiting = plan.waiting;
  }
  const auto idle = sc.pool.count(view).idle_pool;
  if (sc.pool_gauge)
    sc.pool_gauge->set(idle);
  const bool short_now = has_pool && idle < sc.cfg.policy.ready_pool;
  if (short_now != sc.pool_short) {
    if (short_now)
      log().warn("autoscaler: {} idle node(s) in the ready pool, fewer than ready_pool = {}: start more pool nodes",
                 idle, sc.cfg.policy.ready_pool);
    else
      log().info("autoscaler: the ready pool holds {} idle node(s) again (ready_pool = {})", idle,
                 sc.cfg.policy.ready_pool);
    sc.pool_short = short_now;
  }
  self->delayed_send(self, sc.cfg.interval, scale_atom::value);
}

controller_actor::behavior_type controller(controller_pointer self, balancer_actors_config cfg,
                                           autoscaler_settings scaling) {
  self->state.balancer_cfg = std::move(cfg);
  if (scaling.interval.count() > 0) {
    auto& sc = self->state.scaler;
    sc.policy.emplace(scaling.policy);
    if (auto& m = scaling.metrics) {
      auto& targets = m->add_gauge("deepinfer_autoscaler_target",
                                   "Instances of the role the autoscaler's last decision asked for.", {"role"});
      sc.prefill_gauge = &targets.with({"prefill"});
      sc.decode_gauge = &targets.with({"decode"});
      sc.pool_gauge = &m->add_gauge("deepinfer_ready_pool_nodes",
                                    "Alive ready-pool nodes that serve no instance now.").with({});
    }
    sc.cfg = std::move(scaling);
    log().info("autoscaler: one decision every {} ms; prefill {}..{} at {:.0f} missed tok/s each, decode {}..{} at "
               "{:.0f} requests each, headroom {:.2f}, step up {} down {}, no scale-down above quota use {:.2f}",
               sc.cfg.interval.count(), sc.cfg.policy.min_prefill, sc.cfg.policy.max_prefill,
               sc.cfg.policy.prefill_missed_tok_per_s, sc.cfg.policy.min_decode, sc.cfg.policy.max_decode,
               sc.cfg.policy.decode_requests, sc.cfg.policy.headroom, sc.cfg.policy.max_step_up,
               sc.cfg.policy.max_step_down, sc.cfg.policy.no_scale_down_quota_use);
    self->delayed_send(self, sc.cfg.interval, scale_atom::value);
  }
  self->set_down_handler([=](caf::down_msg& dm) {
    auto& st = self->state;
    if (dm.source == st.prefill_balancer.address() || dm.source == st.decode_balancer.address()) {
      log().warn("{} balancer down reason={}; restarting it",
                 dm.source == st.prefill_balancer.address() ? "prefill" : "decode", self->system().render(dm.reason));
      if (dm.source == st.prefill_balancer.address())
        st.prefill_balancer = nullptr;
      else
        st.decode_balancer = nullptr;
      start_balancers(self);
      return;
    }
    auto i = self->state.agents.find(dm.source);
    if (i == self->state.agents.end())
      return;
    auto agent = std::move(i->second);
    self->state.agents.erase(i);
    auto reason = self->system().render(dm.reason);
    self->state.scaler.pool.forget(agent.node);
    if (self->state.members.mark_dead(agent.node, agent.incarnation, reason)) {
      log().warn("node={} dead reason={}", agent.node, reason);
      broadcast(self);
    }
  });
  start_balancers(self);
  return {
    [=](register_atom, node_info& info, caf::strong_actor_ptr& agent_ptr) -> membership_view {
      auto agent = caf::actor_cast<node_agent_actor>(agent_ptr);
      forget_agent_of(self, info.name);
      // A new incarnation serves nothing the autoscaler gave the old one.
      self->state.scaler.pool.forget(info.name);
      if (agent) {
        self->monitor(agent);
        self->state.agents[agent.address()] = {info.name, info.incarnation, agent};
      }
      auto joins = self->state.members.join(info);
      log().info("node={} joined host={} port={} pid={} joins={}", info.name, info.host, info.port,
                 info.pid, joins);
      broadcast(self);
      return self->state.members.view();
    },
    [=](caf::leave_atom, std::string& node) -> caf::ok_atom {
      forget_agent_of(self, node);
      self->state.scaler.pool.forget(node);
      if (self->state.members.mark_left(node)) {
        log().info("node={} left", node);
        broadcast(self);
      }
      return caf::ok_atom::value;
    },
    [=](report_atom, instance_status& status) {
      if (self->state.members.report(status)) {
        log().info("instance={} state={} ranks={}/{} generation={}", status.instance,
                   to_string(status.state), status.healthy_ranks, status.configured_ranks,
                   status.generation);
        broadcast(self);
      }
    },
    [=](caf::get_atom, view_atom) -> membership_view { return self->state.members.view(); },
    [=](scale_atom) { autoscale(self); },
  };
}

} // namespace

controller_actor spawn_controller(caf::actor_system& sys, const balancer_actors_config& balancers,
                                  autoscaler_settings autoscaler) {
  return sys.spawn(controller, balancers, std::move(autoscaler));
}

} // namespace deepinfer::actors
