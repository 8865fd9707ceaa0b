#include "launcher/launch_plan.hpp"

#include "launcher/model_cache.hpp"

#include <algorithm>
#include <sstream>
#include <string>

#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <unistd.h>

namespace deepinfer::launcher {

bool is_local_host(const std::string& host) {
  if (host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0)
    return true;
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) == 0 && host == name)
    return true;
  // Compare against every address of every local interface.
  ifaddrs* ifs = nullptr;
  if (::getifaddrs(&ifs) != 0)
    return false;
  bool found = false;
  for (auto* i = ifs; i != nullptr && !found; i = i->ifa_next) {
    if (i->ifa_addr == nullptr)
      continue;
    auto family = i->ifa_addr->sa_family;
    if (family != AF_INET && family != AF_INET6)
      continue;
    char buf[NI_MAXHOST] = {};
    auto len = family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
    if (::getnameinfo(i->ifa_addr, static_cast<socklen_t>(len), buf, sizeof(buf), nullptr, 0,
                      NI_NUMERICHOST) == 0)
      found = host == buf;
  }
  ::freeifaddrs(ifs);
  return found;
}

std::string shell_quote(const std::string& arg) {
  if (!arg.empty() && arg.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                            "0123456789_-./:=@,+") == std::string::npos)
    return arg;
  std::string out = "'";
  for (auto c : arg) {
    if (c == '\'')
      out += "'\\''";
    else
      out += c;
  }
  return out + "'";
}

std::vector<node_launch> make_launch_plan(const cluster_manifest& m, const std::string& self_exe,
                                          const std::vector<std::string>& extra_args) {
  std::vector<node_launch> plan;
  for (auto& n : m.nodes) {
    node_launch l;
    l.node = &n;
    l.local = n.launch == launch_method::local
              || (n.launch == launch_method::automatic && is_local_host(n.host));
    if (l.local) {
      l.argv = {self_exe, "--manifest", m.source_path, "--node", n.name};
      l.argv.insert(l.argv.end(), extra_args.begin(), extra_args.end());
    } else {
      // The remote side runs the same launcher on the same manifest (a shared mount or a copy at
      // [remote] manifest); BatchMode makes a missing key an error instead of a password prompt;
      // -tt gives the remote node a terminal, so it gets SIGHUP when the session drops and never
      // outlives the launcher that started it.
      std::string remote = shell_quote(m.remote.command) + " --manifest " + shell_quote(m.remote.manifest)
                           + " --node " + shell_quote(n.name) + " --hangup-stops";
      for (auto& a : extra_args)
        remote += " " + shell_quote(a);
      auto target = n.ssh_user.empty() ? n.host : n.ssh_user + "@" + n.host;
      l.argv = {"ssh", "-tt", "-o", "BatchMode=yes", "-o", "ConnectTimeout=5", "-p",
                std::to_string(n.ssh_port)};
      l.argv.insert(l.argv.end(), m.remote.ssh_options.begin(), m.remote.ssh_options.end());
      l.argv.insert(l.argv.end(), {target, "--", "exec " + remote});
    }
    plan.push_back(std::move(l));
  }
  return plan;
}

namespace {

/// Whether the model is there for this machine's nodes (remote nodes read their own disks): a
/// serving node without it exits with status 78 at start.
std::string model_here(const std::string& path) {
  switch (locate_model(path)) {
    case model_source::directory:
      return "";
    case model_source::preset:
      return " [the seeded " + preset_name(path) + " preset, made in the cache on first run]";
    case model_source::missing:
      break;
  }
  return " [NOT FOUND here: no config.json; serving nodes on this machine would exit with status 78]";
}

} // namespace

std::string describe_plan(const cluster_manifest& m, const std::vector<node_launch>& plan) {
  std::ostringstream out;
  auto& c = m.controller();
  out << "manifest: " << m.source_path << "\n"
      << "model: " << m.model_path << " (name " << m.model_name << ", template "
      << m.template_version << ")" << model_here(m.model_path) << "\n"
      << "controller: " << c.name << " at " << c.host << ":" << c.port << "\n"
      << "caf: scheduler_threads=" << m.caf.scheduler_threads << " scheduler_policy="
      << m.caf.scheduler_policy << " middleman_workers=" << m.caf.middleman_workers
      << " heartbeat_interval_ms=" << m.caf.heartbeat_interval.count()
      << " connection_timeout_ms=" << m.caf.connection_timeout.count()
      << " batch_threads=" << (m.caf.batch_threads ? "true" : "false") << "\n"
      << "http: body_limit_bytes=" << m.http.body_limit_bytes << " threads=" << m.http.threads
      << " max_connections=" << m.http.max_connections << " idle_timeout_ms=" << m.http.idle_timeout.count()
      << " header_timeout_ms=" << m.http.header_timeout.count() << " body_timeout_ms=" << m.http.body_timeout.count()
      << " allowed_hosts=" << m.http.allowed_hosts.size() << " cors_origins=" << m.http.cors_origins.size() << "\n"
      << "requests: json_max_depth=" << m.requests.json.max_depth << " stall_timeout_ms="
      << m.requests.stall_timeout.count() << " deadline_ms=" << m.requests.deadline.count()
      << " default_max_tokens=" << m.requests.default_max_tokens << " max_batch_prompts="
      << m.requests.max_batch_prompts << " api_keys=" << m.requests.api_keys.size() << "\n"
      << "admission: prefill_tokens_per_rank=" << m.admission.prefill_tokens_per_rank
      << " decode_sequences_per_rank=" << m.admission.decode_sequences_per_rank
      << " max_waiting=" << m.admission.max_waiting << " queue_timeout_ms=" << m.admission.queue_timeout.count()
      << "\n"
      << "kv_transport: " << actors::to_string(m.kv_transport) << " rdma_port=" << m.rdma_port << "\n"
      << "kv: root=" << m.kv.root
      << " ttl_agent_hours=" << m.kv.ttl_agent_hours << " ttl_chatbot_hours=" << m.kv.ttl_chatbot_hours
      << " gc_watermarks=" << m.kv.gc_low_watermark << ".." << m.kv.gc_high_watermark
      << " swa_ttl_seconds=" << m.kv.swa_ttl_seconds << " swa_memory_mib=" << m.kv.swa_memory_mib
      << " fsync=" << (m.kv.fsync ? "true" : "false") << "\n"
      << "vision: max_pixels=" << m.vision.max_pixels << " max_images_per_request=" << m.vision.max_images_per_request
      << " max_image_bytes=" << m.vision.max_bytes << " fetch_timeout_ms=" << m.image_fetch.timeout.count()
      << " fetch_max_redirects=" << m.image_fetch.max_redirects << " fetch_private_addresses="
      << (m.image_fetch.private_hosts == actors::http::private_addresses::allow ? "true" : "false")
      << " fetch_ca_file=" << (m.image_fetch.ca_file.empty() ? "(system)" : m.image_fetch.ca_file)
      << " balancer=" << balancers::to_string(m.vision_balancer) << " scheduling="
      << (m.vision_priority.idle ? std::string{"idle"} : "normal nice=" + std::to_string(m.vision_priority.nice))
      << " background_body_bytes=" << m.vision_background_body_bytes << "\n";
  auto& b = m.balancer;
  out << "balancer.prefill: bucket_bounds=" << b.prefill_bucket_bounds[0] << ","
      << b.prefill_bucket_bounds[1] << "," << b.prefill_bucket_bounds[2]
      << " step_budget_ms=" << b.prefill_step_budget_ms << " quota_per_rank_s=" << b.prefill_quota_per_rank_s
      << " whole_job_fits=" << (b.prefill_whole_job_fits ? "true" : "false")
      << " round_ms=" << b.prefill_round_ms << " redundant_experts_per_rank="
      << b.prefill_ep.redundant_experts_per_rank << " ep_window_steps=" << b.prefill_ep.window_steps
      << " ep_replace_steps=" << b.prefill_ep.replace_steps << "\n"
      << "balancer.decode: max_batch=" << b.decode_max_batch
      << " redundant_experts_per_rank="
      << b.decode_ep.redundant_experts_per_rank << " ep_window_steps=" << b.decode_ep.window_steps
      << " ep_replace_steps=" << b.decode_ep.replace_steps << "\n";
  auto& a = m.autoscaler;
  out << "autoscaler: prefill=" << a.min_prefill_instances << ".." << a.max_prefill_instances
      << " decode=" << a.min_decode_instances << ".." << a.max_decode_instances
      << " ready_pool=" << a.ready_pool << " quota_high_water=" << a.quota_high_water
      << " decode_grace_seconds=" << a.decode_grace_seconds << " interval_seconds="
      << a.interval_seconds << " max_step=" << a.max_step << " prefill_missed_tokens_per_s="
      << a.prefill_missed_tokens_per_s << " decode_requests_per_instance=" << a.decode_requests_per_instance
      << " headroom=" << a.headroom << " queue_time_target_seconds=" << a.queue_time_target_seconds << "\n"
      << "supervision: restart=" << to_string(m.supervision.restart) << " restart_delay_ms="
      << m.supervision.restart_delay_ms << " max_restarts_per_minute="
      << m.supervision.max_restarts_per_minute << "\n"
      << "nodes: " << plan.size() << "\n";
  for (auto& l : plan) {
    auto& n = *l.node;
    out << "- " << n.name << " " << n.host << ":" << n.port << " roles=";
    for (size_t i = 0; i < n.roles.size(); ++i)
      out << (i ? "," : "") << to_string(n.roles[i]);
    out << " ranks=" << n.ranks;
    if (n.instances > 1)
      out << " instances=" << n.instances;
    out << " backend=" << to_string(n.backend) << " cpu_isa=" << n.cpu_isa;
    if (!n.cpus.empty())
      out << " cpus=" << n.cpus;
    if (n.standby) {
      out << " ready-pool=";
      auto may = n.pool_roles();
      for (size_t i = 0; i < may.size(); ++i)
        out << (i ? "|" : "") << to_string(may[i]);
    }
    if (n.http)
      out << " http=" << n.http->host << ":" << n.http->port;
    out << "\n  " << (l.local ? "local child: " : "ssh: ");
    for (size_t i = 0; i < l.argv.size(); ++i)
      out << (i ? " " : "") << shell_quote(l.argv[i]);
    out << "\n";
  }
  return out.str();
}

actors::balancer_actors_config make_balancer_config(const balancer_params& b) {
  actors::balancer_actors_config cfg;
  auto& p = cfg.router.prefill;
  for (size_t i = 0; i < p.bounds.size() && i < b.prefill_bucket_bounds.size(); ++i)
    p.bounds[i] = static_cast<int64_t>(b.prefill_bucket_bounds[i]);
  p.quota_per_rank_s = b.prefill_quota_per_rank_s;
  p.whole_job_fits = b.prefill_whole_job_fits;
  // A short prompt an engine takes over its quota is run within about one step.
  p.short_reserve_s = b.prefill_step_budget_ms / 1000.0;
  cfg.router.decode.max_batch = b.decode_max_batch;
  cfg.round = std::chrono::milliseconds{b.prefill_round_ms};
  return cfg;
}

std::chrono::microseconds prefill_step_of(const balancer_params& b) {
  return std::chrono::microseconds{static_cast<int64_t>(b.prefill_step_budget_ms * 1000.0)};
}

actors::autoscaler_settings make_autoscaler_settings(const autoscaler_params& a) {
  actors::autoscaler_settings out;
  auto& p = out.policy;
  p.prefill_missed_tok_per_s = a.prefill_missed_tokens_per_s;
  p.decode_requests = a.decode_requests_per_instance;
  p.headroom = a.headroom;
  p.min_prefill = static_cast<int>(a.min_prefill_instances);
  p.max_prefill = static_cast<int>(a.max_prefill_instances);
  p.min_decode = static_cast<int>(a.min_decode_instances);
  p.max_decode = static_cast<int>(a.max_decode_instances);
  p.max_step_up = p.max_step_down = static_cast<int>(a.max_step);
  p.no_scale_down_quota_use = a.quota_high_water;
  p.queue_time_target_s = a.queue_time_target_seconds;
  p.ready_pool = static_cast<int>(a.ready_pool);
  p.decode_grace_s = a.decode_grace_seconds;
  out.interval = std::chrono::milliseconds{static_cast<int64_t>(a.interval_seconds * 1000.0)};
  return out;
}

engine::ep_settings make_ep_settings(const expert_parallel_params& p) {
  return {static_cast<int>(p.redundant_experts_per_rank), static_cast<int>(p.window_steps),
          static_cast<int>(p.replace_steps)};
}

namespace {

/// `count` copies of `specs` (a node's prefill and decode instances), numbered 1..count in that
/// order: prefill, decode, prefill.2, decode.2, ...
void add_instances(actors::node_runtime_config& cfg, uint32_t count, const std::vector<actors::instance_spec>& specs) {
  for (uint32_t k = 1; k <= std::max(count, 1u); ++k)
    for (auto s : specs) {
      s.ordinal = k;
      cfg.instances.push_back(s);
    }
}

} // namespace

actors::node_runtime_config make_node_config(const cluster_manifest& m, const node_spec& node) {
  actors::node_runtime_config cfg;
  cfg.balancers = make_balancer_config(m.balancer);
  cfg.self.name = node.name;
  cfg.self.host = node.host;
  cfg.self.port = node.port;
  cfg.self.roles = actors::role_set{node.roles};
  cfg.hosts_controller = node.has(node_role::controller);
  auto& ctl = m.controller();
  cfg.controller_host = ctl.host;
  cfg.controller_port = ctl.port;
  const auto grace = std::chrono::milliseconds{static_cast<int64_t>(m.autoscaler.decode_grace_seconds * 1000.0)};
  auto spec = [&](node_role role) {
    return actors::instance_spec{role, node.ranks,
                                 make_ep_settings(role == node_role::prefill ? m.balancer.prefill_ep : m.balancer.decode_ep),
                                 grace};
  };
  // A ready-pool node starts none: the controller assigns it one of these (issue 17).
  if (node.standby)
    for (auto role : node.pool_roles())
      cfg.pool_instances.push_back(spec(role));
  else {
    std::vector<actors::instance_spec> specs;
    for (auto role : {node_role::prefill, node_role::decode})
      if (node.has(role))
        specs.push_back(spec(role));
    add_instances(cfg, node.instances, specs);
  }
  if (cfg.hosts_controller)
    cfg.autoscaler = make_autoscaler_settings(m.autoscaler);
  if (node.has(node_role::vision))
    cfg.instances.push_back({node_role::vision, node.ranks}); // each rank one "card" of the machine (DESIGN §6.3)
  if (node.has(node_role::entrypoint) && node.http) {
    actors::http_endpoint http = m.http;
    http.host = node.http->host;
    http.port = node.http->port;
    http.models = {m.model_name};
    cfg.http = http;
  }
  cfg.caf = m.caf;
  return cfg;
}

actors::node_runtime_config make_embedded_config(const host_port& http, const std::string& model_name,
                                                  uint32_t ranks, uint32_t instances,
                                                  const balancer_params& b) {
  actors::node_runtime_config cfg;
  cfg.self.name = "local";
  cfg.self.host = "127.0.0.1";
  cfg.self.port = 0;  // one process: nothing to publish
  cfg.self.roles = {node_role::controller, node_role::entrypoint, node_role::prefill, node_role::decode,
                    node_role::vision, node_role::kvstore, node_role::so};
  cfg.hosts_controller = true;
  cfg.balancers = make_balancer_config(b);
  // One vision instance (one rank) encodes the images (issue 21).
  add_instances(cfg, instances, {{node_role::prefill, ranks, make_ep_settings(b.prefill_ep)},
                                  {node_role::decode, ranks, make_ep_settings(b.decode_ep)}});
  cfg.instances.push_back({node_role::vision, 1});
  actors::http_endpoint ep;
  ep.host = http.host;
  ep.port = http.port;
  ep.models = {model_name};
  cfg.http = ep;
  return cfg;
}

} // namespace deepinfer::launcher
