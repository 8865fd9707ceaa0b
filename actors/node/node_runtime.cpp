#include "actors/node/node_runtime.hpp"

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include <unistd.h>

#include <caf/actor_cast.hpp>
#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/io/middleman.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>

#include "actors/balancer/balancer_metrics.hpp"
#include "actors/control/controller.hpp"
#include "actors/entrypoint/admin_routes.hpp"
#include "actors/entrypoint/entrypoint.hpp"
#include "actors/http/api_keys.hpp"
#include "actors/errors.hpp"
#include "actors/control/instance_supervisor.hpp"
#include "actors/log.hpp"
#include "actors/node/detached_actors.hpp"
#include "actors/node/node_agent.hpp"
#include "actors/http/metrics_registry.hpp"
#include "actors/http/router.hpp"
#include "actors/transport/kv_transport.hpp"
#include "actors/node/instance_config.hpp"
#include "actors/node/kv_gc_worker.hpp"
#include "actors/node/node_http.hpp"
#include "actors/node/node_instances.hpp"
#include "actors/node/prefix_cache_config.hpp"
#include "actors/node/stop_watchdog.hpp"
#include "actors/node/structured_output.hpp"
#include "actors/so/so_compiler.hpp"
#include "actors/control/snapshot_server.hpp"
#include "actors/swa/swa_shard.hpp"
#include "kv/prefix_cache.hpp"
#include "engine/cost_profile.hpp"
#include "engine/model/model_config.hpp"
#include "actors/node/system_config.hpp"

namespace deepinfer::actors {

namespace {

uint64_t make_incarnation() {
  using namespace std::chrono;
  return static_cast<uint64_t>(duration_cast<nanoseconds>(system_clock::now().time_since_epoch()).count());
}

} // namespace

struct node_runtime::impl {
  node_runtime_config cfg;
  std::unique_ptr<caf::actor_system_config> sys_cfg;
  std::unique_ptr<caf::actor_system> sys;
  std::shared_ptr<cluster_snapshot> snap = std::make_shared<cluster_snapshot>();
  node_agent_actor agent;
  controller_actor local_controller;
  /// This node's instance supervisors.
  node_instances instances;
  /// Builds an instance's supervisor config (set once the node's shared parts exist; a pool
  /// assignment before that is refused and asked again by the controller).
  std::mutex factory_mtx;
  std::function<instance_supervisor_config(const instance_spec&)> supervisor_config;

  /// The agent's `assign`: starts the pool instance of `role`.
  caf::expected<instance_supervisor_actor> start_pool_instance(node_role role, node_agent_actor observer) {
    auto spec = std::find_if(cfg.pool_instances.begin(), cfg.pool_instances.end(),
                             [&](const instance_spec& s) { return s.role == role; });
    if (spec == cfg.pool_instances.end())
      return make_error(errc::pool_refused, "node " + cfg.self.name + " may not become a " + to_string(role)
                                              + " instance (see its roles in the manifest)");
    std::function<instance_supervisor_config(const instance_spec&)> make;
    {
      std::lock_guard<std::mutex> guard{factory_mtx};
      make = supervisor_config;
    }
    if (!make)
      return make_error(errc::pool_refused, "node " + cfg.self.name + " is still starting");
    auto sup = spawn_instance_supervisor(*sys, make(*spec), std::move(observer));
    instances.add(role, sup);
    return sup;
  }

  void pool_instance_stopped(node_role role) { instances.remove(role); }

  std::unique_ptr<entrypoint> serving;
  std::unique_ptr<node_http> http;
  /// The API keys every keyed route checks (the entrypoint's, the admin routes', /metrics).
  std::shared_ptr<http::api_keys> keys;
  /// The KV store's GC on a kvstore node (joined before the cache it runs on goes).
  std::unique_ptr<kv_gc_worker> gc;
  /// The structured-output compiler actor (serving nodes; stopped at shutdown).
  so_compiler_actor so_compiler;
  /// The detached actors spawned here (ranks, the compiler): a stop waits until CAF lets go of them.
  std::shared_ptr<detached_actors> detached = std::make_shared<detached_actors>();

  // Bootstrap thread state: reaching the controller blocks (remote_actor), so it never runs on
  // a scheduler thread (CAF 0.17 pitfall P4).
  std::thread bootstrap;
  std::mutex mtx;
  std::condition_variable cv;
  bool stopping = false;
  bool controller_lost = false;
  controller_actor controller;  // the handle the bootstrap thread last handed to the agent
  bool stopped = false;

  /// Set once the first connection to the controller was made: a later one follows a loss.
  bool reconnecting = false;

  /// After this node lost its links (frozen, partitioned) and registered again: connects to every
  /// other alive node of the view once more. Its peers dropped their connections to it, and CAF
  /// 0.17 drops a message to a node it has no route to without a word (pitfall P7): a prefill
  /// rank's KV handed to a decode rank would be lost with each request it serves.
  void reconnect_peers() {
    auto& mm = sys->middleman();
    // The view comes with the registration's answer.
    for (int i = 0; i < 40 && snap->get().view.nodes.empty(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds{50});
    // All at once, each on its own thread: a peer that is gone too blocks its connect for the
    // connection timeout, and the others must not wait behind it.
    std::vector<std::thread> connects;
    for (auto& n : snap->get().view.nodes) {
      if (n.state != node_state::alive || n.info.name == cfg.self.name || n.info.port == 0
          || (n.info.host == cfg.controller_host && n.info.port == cfg.controller_port))
        continue;
      connects.emplace_back([this, &mm, name = n.info.name, host = n.info.host, port = n.info.port] {
        auto peer = mm.remote_actor<node_agent_actor>(host, port);
        log().info("node={} connected again to node={} after losing its links: {}", cfg.self.name, name,
                   peer ? "ok" : sys->render(peer.error()));
      });
    }
    for (auto& t : connects)
      t.join();
  }

  void run_bootstrap() {
    auto& mm = sys->middleman();
    std::unique_lock<std::mutex> lock{mtx};
    while (!stopping) {
      lock.unlock();
      auto ctl = mm.remote_actor<controller_actor>(cfg.controller_host, cfg.controller_port);
      lock.lock();
      if (stopping)
        break;
      if (!ctl) {
        log().debug("node={} controller {}:{} unreachable: {}", cfg.self.name,
                    cfg.controller_host, cfg.controller_port, sys->render(ctl.error()));
        cv.wait_for(lock, cfg.reconnect_interval, [&] { return stopping; });
        continue;
      }
      controller = *ctl;
      controller_lost = false;
      caf::anon_send(agent, ctl_up_atom::value, caf::actor_cast<caf::strong_actor_ptr>(*ctl));
      if (reconnecting) {
        lock.unlock();
        reconnect_peers();
        lock.lock();
      }
      reconnecting = true;
      cv.wait(lock, [&] { return stopping || controller_lost; });
      if (!stopping)
        cv.wait_for(lock, cfg.reconnect_interval, [&] { return stopping; });
    }
  }
};

node_runtime::node_runtime(node_runtime_config cfg) : impl_(std::make_unique<impl>()) {
  impl_->cfg = std::move(cfg);
}

node_runtime::~node_runtime() {
  stop();
}

std::optional<std::string> node_runtime::start() {
  auto& d = *impl_;
  auto& cfg = d.cfg;
  cfg.self.pid = static_cast<int32_t>(::getpid());
  cfg.self.incarnation = make_incarnation();
  // 0. The fitted prefill cost model of this node's engine setup, measured on first serve (before
  // any actor runs, so nothing else loads the CPU meanwhile) and read from the model directory
  // afterwards: this node's prefill ranks chunk with it, its entrypoint prices with it.
  const auto is_prefill = [](const auto& spec) { return spec.role == node_role::prefill; };
  const bool prefills = std::any_of(cfg.instances.begin(), cfg.instances.end(), is_prefill)
                        || std::any_of(cfg.pool_instances.begin(), cfg.pool_instances.end(), is_prefill);
  if (cfg.serving && !cfg.serving->prefill_cost && (cfg.http || prefills)) {
    engine::cost_profile::config setup{cfg.serving->threads_per_rank, cfg.serving->cpu_isa};
    setup.backend = cfg.serving->backend;
    auto fit = engine::cost_profile::ensure(cfg.serving->model_dir, setup);
    if (!fit.fit)
      return "cannot fit the prefill cost model of " + cfg.serving->model_dir + ": " + fit.error;
    if (!fit.warning.empty())
      log().warn("node={} prefill cost model not kept: {}", cfg.self.name, fit.warning);
    cfg.serving->prefill_cost = fit.fit->model;
  }
  d.sys_cfg = make_actor_system_config(cfg.caf);
  d.sys = std::make_unique<caf::actor_system>(*d.sys_cfg);
  auto& sys = *d.sys;

  // 0a. The process's prefix cache (block store + SWA snapshots) and the actor that serves its
  // snapshots to other nodes.
  std::shared_ptr<kv::prefix_cache> cache;
  auto metrics = std::make_shared<http::metrics_registry>();
  if (cfg.serving && !cfg.serving->kv_root.empty()) {
    auto pc = prefix_cache_config_of(*cfg.serving);
    if (!pc)
      return pc.error();
    std::string err;
    cache = kv::prefix_cache::open(*pc, &err);
    if (!cache)
      return err;
    if (cfg.self.roles.has(node_role::kvstore))
      d.gc = std::make_unique<kv_gc_worker>(cache, cfg.serving->kv_gc_interval, *metrics);
    cfg.self.snapshots = serve_snapshots(sys, cache, d.snap);
  }

  // 0a'. How KV crosses processes: with RDMA, this node's listener (the decode side reads from
  // it) is advertised in node_info, so prefill ranks elsewhere know they may use RDMA toward it.
  if (cfg.serving) {
    if (auto err = configure_kv_transports(cfg.serving->kv_transport, cfg.self.host, cfg.serving->rdma_port))
      return *err;
    if (cfg.serving->kv_transport != kv_transport_mode::caf_message)
      cfg.self.rdma = local_rdma_endpoint();
  }

  // 0b. This entrypoint's shard of the SWA directory; its handle travels in node_info, so every
  // node finds the shards through the membership view.
  if (cfg.http && cfg.serving)
    cfg.self.swa_shard = caf::actor_cast<caf::strong_actor_ptr>(
      spawn_swa_shard(sys, cfg.serving->snapshot_ttl.count()));

  // 0c. The process's structured-output compiler (issue 19): its cache, which the ranks mask
  // tokens with (the vocabulary is loaded at the first constrained request), and the actor that
  // fills it on its own thread. An `so` node advertises the actor: entrypoints compile there.
  std::shared_ptr<structured_output> so;
  so_compiler_actor so_compiler;
  if (cfg.serving && !cfg.serving->tokenizer_path.empty()) {
    recipe::so::compiler::config soc;
    soc.cache_bytes = cfg.serving->so_cache_bytes;
    soc.timeout = cfg.serving->so_compile_timeout;
    so = std::make_shared<structured_output>(cfg.serving->tokenizer_path, soc);
    so_compiler = spawn_so_compiler(sys, so, metrics);
    d.detached->add(so_compiler.address());
    d.so_compiler = so_compiler;
    if (cfg.self.roles.has(node_role::so))
      cfg.self.so_compiler = caf::actor_cast<caf::strong_actor_ptr>(so_compiler);
  }

  // 1. The agent first: instance supervisors report to it.
  node_agent_config agent_cfg;
  agent_cfg.self = cfg.self;
  agent_cfg.snapshot = d.snap;
  agent_cfg.on_controller_lost = [&d] {
    std::lock_guard<std::mutex> guard{d.mtx};
    d.controller_lost = true;
    d.cv.notify_all();
  };
  if (!cfg.pool_instances.empty()) {
    agent_cfg.start_instance = [&d](node_role role, node_agent_actor observer) {
      return d.start_pool_instance(role, std::move(observer));
    };
    agent_cfg.instance_stopped = [&d](node_role role) { d.pool_instance_stopped(role); };
  }
  d.agent = spawn_node_agent(sys, std::move(agent_cfg));

  // 2. The controller, published on this node's port, or a link to the remote one.
  auto& mm = sys.middleman();
  if (cfg.hosts_controller) {
    auto balancers = cfg.balancers;
    export_balancer_loads(*metrics, balancers.prefill_loads, balancers.decode_loads);
    auto scaling = cfg.autoscaler;
    scaling.metrics = metrics;
    d.local_controller = spawn_controller(sys, balancers, std::move(scaling));
    d.controller = d.local_controller;
    if (cfg.self.port != 0) {
      auto port = mm.publish(d.local_controller, cfg.self.port, cfg.self.host.c_str(), true);
      if (!port)
        return "cannot listen on " + cfg.self.host + ":" + std::to_string(cfg.self.port) + ": "
               + sys.render(port.error());
    }
    caf::anon_send(d.agent, ctl_up_atom::value,
                   caf::actor_cast<caf::strong_actor_ptr>(d.local_controller));
  } else {
    if (cfg.self.port != 0) {
      auto port = mm.publish(d.agent, cfg.self.port, cfg.self.host.c_str(), true);
      if (!port)
        return "cannot listen on " + cfg.self.host + ":" + std::to_string(cfg.self.port) + ": "
               + sys.render(port.error());
    }
    d.bootstrap = std::thread([&d] { d.run_bootstrap(); });
  }

  // 3. Instances; with a model, every rank shares the process's prefix cache.
  auto supervisor_config = [&cfg, cache, so, metrics, so_compiler, detached = d.detached](const instance_spec& spec) {
    return make_instance_config(cfg, spec, {cache, so, metrics, so_compiler, detached});
  };
  for (auto& spec : cfg.instances)
    d.instances.add(spec.role, spawn_instance_supervisor(sys, supervisor_config(spec), d.agent));
  {
    std::lock_guard<std::mutex> guard{d.factory_mtx};
    d.supervisor_config = supervisor_config;
  }

  // 4. HTTP last: it answers only once the node can describe itself.
  std::function<void(http::router&)> extra_routes;
  if (cfg.http) {
    d.keys = std::make_shared<http::api_keys>(cfg.serving ? cfg.serving->requests.api_keys : std::vector<std::string>{},
                                              cfg.http->api_keys_file);
    if (auto err = d.keys->reload())
      return *err;
    if (d.keys->required())
      log().info("node={} requires API keys: {} accepted{}", cfg.self.name, d.keys->size(),
                 cfg.http->api_keys_file.empty() ? "" : " (SIGHUP reloads " + cfg.http->api_keys_file + ")");
  }
  if (cfg.http && cfg.serving) {
    // The entrypoint serves through whatever prefill and decode instances the membership view
    // shows running: this node's own (embedded default) or other nodes' (a manifest's split).
    std::string err;
    d.serving = entrypoint::create(sys, *cfg.serving, d.snap, cache, metrics, &err);
    if (!d.serving)
      return err;
    d.serving->set_structured_output(so, so_compiler);
    d.serving->set_api_keys(d.keys);
    extra_routes = [ep = d.serving.get()](http::router& r) { ep->add_routes(r); };
  }
  if (cfg.http && cfg.http->admin)
    extra_routes = [inner = std::move(extra_routes), &sys, snap = d.snap, keys = d.keys](http::router& r) {
      if (inner)
        inner(r);
      add_admin_routes(r, sys, snap, keys);
    };
  if (cfg.http) {
    if (cfg.serving && cfg.http->max_model_len == 0)
      cfg.http->max_model_len = cfg.serving->context_limit;
    d.http = std::make_unique<node_http>(*cfg.http, d.snap, std::move(extra_routes), metrics, d.keys);
    if (auto err = d.http->start())
      return "cannot serve HTTP on " + cfg.http->host + ":" + std::to_string(cfg.http->port) + ": "
             + *err;
  }
  if (auto n = rdma_device_count(); n > 0)
    log().info("node={} sees {} RDMA device(s); RDMA KV endpoint: {}", cfg.self.name, n,
               cfg.self.rdma.empty() ? "none (KV crosses processes as CAF messages)" : cfg.self.rdma);
  log().info("node={} started roles={} controller={}", cfg.self.name, cfg.self.roles.size(),
             cfg.hosts_controller ? "local" : cfg.controller_host + ":" + std::to_string(cfg.controller_port));
  return std::nullopt;
}

void node_runtime::stop(std::chrono::milliseconds deadline) {
  auto& d = *impl_;
  if (d.stopped || !d.sys)
    return;
  d.stopped = true;
  auto t0 = std::chrono::steady_clock::now();
  stop_watchdog watchdog{d.cfg.self.name, std::max(deadline, std::chrono::milliseconds{1000})};
  auto phase = [&](const char* what) { watchdog.enter(what, d.sys->registry().running()); };
  // 1. Stop taking requests; answer those in flight.
  if (d.http)
    d.http->stop(deadline / 2);
  // 2. Tell the controller we leave (bounded wait), so it shows `left` rather than `dead`.
  controller_actor ctl;
  {
    std::lock_guard<std::mutex> guard{d.mtx};
    d.stopping = true;
    ctl = d.controller;
    d.cv.notify_all();
  }
  phase("leave");
  if (ctl && !d.cfg.hosts_controller) {
    caf::scoped_actor self{*d.sys};
    auto left = deadline - std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::steady_clock::now() - t0);
    self->request(ctl, std::max(left / 2, std::chrono::milliseconds{50}), caf::leave_atom::value,
                  d.cfg.self.name)
      .receive([](caf::ok_atom) {}, [](caf::error&) {});
  }
  phase("bootstrap thread (a connect to the controller or a peer)");
  if (d.bootstrap.joinable())
    d.bootstrap.join();
  phase("exit messages");
  // 3. Stop every actor we spawned; the actor system's destructor waits for them.
  // The controller first, so it does not record its own node's agent as dead.
  if (d.local_controller)
    caf::anon_send_exit(d.local_controller, caf::exit_reason::user_shutdown);
  {
    std::lock_guard<std::mutex> guard{d.factory_mtx};
    d.supervisor_config = nullptr; // it holds the cache and the compiler
  }
  for (auto& sup : d.instances.take_all())
    caf::anon_send_exit(sup, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(d.agent, caf::exit_reason::user_shutdown);
  for (auto& a : {d.cfg.self.swa_shard, d.cfg.self.snapshots})
    if (a)
      caf::anon_send_exit(caf::actor_cast<caf::actor>(a), caf::exit_reason::user_shutdown);
  if (d.so_compiler)
    caf::anon_send_exit(d.so_compiler, caf::exit_reason::user_shutdown);
  d.so_compiler = nullptr;
  d.cfg.self.swa_shard = nullptr;
  d.cfg.self.snapshots = nullptr;
  d.cfg.self.so_compiler = nullptr;
  d.agent = nullptr;
  d.local_controller = nullptr;
  d.controller = nullptr;
  ctl = nullptr;
  phase("HTTP server");
  d.http.reset();
  d.serving.reset();
  phase("KV GC worker");
  d.gc.reset();
  d.snap->clear_view();
  // 4. CAF's destructor stops the middleman before it waits for detached actors, whose
  // threads end only once nothing references them (detached_actors.hpp): wait for that first.
  phase("detached actors (until CAF lets go of them)");
  const auto spent = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0);
  if (auto held = d.detached->wait_released(std::max(deadline - spent, std::chrono::milliseconds{1000})); held > 0)
    log().warn("node={} {} detached actor(s) still referenced after the stop's deadline; the actor system may "
               "not finish stopping", d.cfg.self.name, held);
  phase("actor system (waits for every actor)");
  d.sys.reset();
  log().info("node={} stopped", d.cfg.self.name);
}

uint16_t node_runtime::http_port() const {
  return impl_->http ? impl_->http->port() : 0;
}

cluster_snapshot::state node_runtime::snapshot() const {
  return impl_->snap->get();
}

caf::actor_system& node_runtime::system() {
  return *impl_->sys;
}

std::optional<std::string> node_runtime::reload_api_keys() {
  auto& d = *impl_;
  if (!d.keys || d.keys->file().empty())
    return std::nullopt;
  if (auto err = d.keys->reload()) {
    log().warn("node={} API keys not reloaded: {}; the {} keys in use stay", d.cfg.self.name, *err, d.keys->size());
    return err;
  }
  log().info("node={} API keys reloaded from {}: {} accepted", d.cfg.self.name, d.keys->file(), d.keys->size());
  return std::nullopt;
}

bool node_runtime::inject_rank_failure(node_role role, uint32_t rank,
                                       const std::string& reason) {
  auto sup = impl_->instances.first(role);
  if (!sup)
    return false;
  caf::anon_send(*sup, fail_atom::value, rank, reason);
  return true;
}

std::optional<uint64_t> node_runtime::drain(std::chrono::milliseconds handoff_limit) {
  auto& d = *impl_;
  auto sups = d.sys ? d.instances.all(node_role::decode) : std::vector<instance_supervisor_actor>{};
  if (sups.empty())
    return std::nullopt;
  auto grace = std::chrono::milliseconds{0};
  for (auto* specs : {&d.cfg.instances, &d.cfg.pool_instances})
    for (auto& spec : *specs)
      if (spec.role == node_role::decode)
        grace = std::max(grace, spec.drain_grace);
  const auto t0 = std::chrono::steady_clock::now();
  uint64_t moved = 0;
  caf::scoped_actor self{*d.sys};
  // Every decode instance of the node drains at once: the grace runs once, not per instance.
  std::vector<decltype(self->request(sups[0], grace + handoff_limit, drain_atom::value, int64_t{-1}))> answers;
  for (auto& sup : sups)
    answers.push_back(self->request(sup, grace + handoff_limit, drain_atom::value, int64_t{-1}));
  for (auto& answer : answers)
    answer.receive([&](uint64_t n) { moved += n; },
                   [&](caf::error& e) {
                     log().warn("node={} drain did not complete: {}; stopping anyway", d.cfg.self.name, d.sys->render(e));
                   });
  log().info("node={} drain took {} ms: {} request(s) handed off", d.cfg.self.name,
             std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count(),
             moved);
  return moved;
}

std::optional<instance_status> node_runtime::instance(node_role role) {
  auto sup = impl_->instances.first(role);
  if (!sup)
    return std::nullopt;
  std::optional<instance_status> result;
  caf::scoped_actor self{*impl_->sys};
  self->request(*sup, std::chrono::seconds(2), status_atom::value)
    .receive([&](instance_status& s) { result = std::move(s); }, [](caf::error&) {});
  return result;
}

} // namespace deepinfer::actors
