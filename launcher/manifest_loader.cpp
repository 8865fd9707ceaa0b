// Parses a cluster manifest (TOML) into `cluster_manifest`, resolving defaults (DESIGN.md) and
// rejecting unknown keys. Validation across nodes lives in manifest_validate.cpp.
#include <array>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "engine/kernels/isa.hpp"
#include "launcher/cpu_list.hpp"
#include "launcher/manifest.hpp"
#include "launcher/toml_reader.hpp"

namespace deepinfer::launcher {

void validate_manifest(cluster_manifest& m, toml_reader& root, std::vector<toml_reader>& nodes);

namespace {

/// The enum value spelled `value`, or nullopt; `expected` lists the spellings for the error.
template <class Enum, size_t N>
std::optional<Enum> find_enum(const std::string& value, const std::array<Enum, N>& all,
                              std::string& expected) {
  for (auto e : all) {
    if (value == to_string(e))
      return e;
    expected += (expected.empty() ? "" : ", ") + std::string{to_string(e)};
  }
  return std::nullopt;
}

template <class Enum, size_t N>
Enum parse_enum(toml_reader& r, const std::string& key, const std::string& value,
                const std::array<Enum, N>& all) {
  std::string expected;
  if (auto e = find_enum(value, all, expected))
    return *e;
  r.fail(key, "unknown value '" + value + "' (expected one of " + expected + ")");
}

void read_caf(toml_reader& r, actors::system_settings& s) {
  using std::chrono::milliseconds;
  if (auto v = r.integer("scheduler_threads", 1, 256))
    s.scheduler_threads = static_cast<unsigned>(*v);
  if (auto v = r.string("scheduler_policy")) {
    if (*v != "sharing" && *v != "stealing")
      r.fail("scheduler_policy", "unknown policy '" + *v + "' (expected sharing or stealing)");
    s.scheduler_policy = *v;
  }
  if (auto v = r.integer("middleman_workers", 0, 64))
    s.middleman_workers = static_cast<unsigned>(*v);
  if (auto v = r.integer("heartbeat_interval_ms", 10, 600000))
    s.heartbeat_interval = milliseconds{*v};
  if (auto v = r.integer("connection_timeout_ms", 10, 3600000))
    s.connection_timeout = milliseconds{*v};
  if (auto v = r.boolean("batch_threads"))
    s.batch_threads = *v;
  if (s.connection_timeout <= s.heartbeat_interval)
    r.fail("connection_timeout_ms", "must be larger than heartbeat_interval_ms (several "
                                    "heartbeats must be missed before a peer counts as dead)");
  r.finish();
}

void read_http(toml_reader& r, actors::http_endpoint& h) {
  using std::chrono::milliseconds;
  if (auto v = r.integer("body_limit_bytes", 1024, int64_t{1} << 34))
    h.body_limit_bytes = static_cast<std::size_t>(*v);
  if (auto v = r.integer("threads", 1, 64))
    h.threads = static_cast<unsigned>(*v);
  if (auto v = r.integer("max_connections", 1, 1 << 20))
    h.max_connections = static_cast<std::size_t>(*v);
  if (auto v = r.integer("idle_timeout_ms", 10, 86400000))
    h.idle_timeout = milliseconds{*v};
  if (auto v = r.integer("header_timeout_ms", 10, 3600000))
    h.header_timeout = milliseconds{*v};
  if (auto v = r.integer("body_timeout_ms", 10, 3600000))
    h.body_timeout = milliseconds{*v};
  if (auto v = r.strings("allowed_hosts"))
    h.allowed_hosts = *v;
  if (auto v = r.strings("cors_origins"))
    h.cors_origins = *v;
  if (auto v = r.boolean("admin"))
    h.admin = *v;
  if (auto v = r.string("api_keys_file"))
    h.api_keys_file = *v;
  if (auto v = r.boolean("protect_metrics"))
    h.protect_metrics = *v;
  r.finish();
}

void read_requests(toml_reader& r, actors::request_limits& q) {
  using std::chrono::milliseconds;
  if (auto v = r.integer("json_max_depth", 1, static_cast<int64_t>(recipe::json_limits::max_depth_ceiling)))
    q.json.max_depth = static_cast<std::size_t>(*v);
  if (auto v = r.integer("stall_timeout_ms", 100, 86400000))
    q.stall_timeout = milliseconds{*v};
  if (auto v = r.integer("deadline_ms", 0, 86400000))
    q.deadline = milliseconds{*v};
  if (auto v = r.integer("default_max_tokens", 1, 1 << 20))
    q.default_max_tokens = static_cast<int32_t>(*v);
  if (auto v = r.integer("max_batch_prompts", 1, 4096))
    q.max_batch_prompts = static_cast<int32_t>(*v);
  if (auto v = r.integer("max_prompt_logprobs_tokens", 1, 1 << 20))
    q.max_prompt_logprobs_tokens = static_cast<int32_t>(*v);
  if (auto v = r.strings("api_keys")) {
    for (std::size_t i = 0; i < v->size(); ++i)
      if ((*v)[i].size() < 8)
        r.fail_element("api_keys", i, "an API key needs at least 8 characters");
    q.api_keys = *v;
  }
  if (auto v = r.integer("responses_ttl_s", 1, 30 * 86400))
    q.responses_ttl = std::chrono::seconds{*v};
  if (auto v = r.integer("responses_store_mib", 0, 1 << 20))
    q.responses_max_bytes = static_cast<std::size_t>(*v) << 20;
  if (auto v = r.boolean("server_timing"))
    q.server_timing = *v;
  r.finish();
}

void read_admission(toml_reader& r, actors::admission_control::config& a) {
  if (auto v = r.integer("prefill_tokens_per_rank", 1, int64_t{1} << 40))
    a.prefill_tokens_per_rank = *v;
  if (auto v = r.integer("decode_sequences_per_rank", 1, 1 << 20))
    a.decode_sequences_per_rank = *v;
  if (auto v = r.integer("max_waiting", 0, 1 << 20))
    a.max_waiting = static_cast<std::size_t>(*v);
  if (auto v = r.integer("queue_timeout_ms", 1, 86400000))
    a.queue_timeout = std::chrono::milliseconds{*v};
  r.finish();
}

void read_kv(toml_reader& r, kv_params& kv) {
  if (auto v = r.string("root"))
    kv.root = *v;
  // Not a setting: the KV format's block (prefix-cache keys, SWA snapshot boundaries, the
  // engine's pool) is 128 tokens. Accepted when it says so, so older manifests still load.
  if (auto v = r.integer("block_tokens", 1, 1 << 20); v && *v != 128)
    r.fail("block_tokens", "the KV block is 128 tokens in this format (DESIGN §4: cache keys, SWA snapshots and "
                           "the engines' pools depend on it); remove the key");
  if (auto v = r.number("ttl_agent_hours", 0, 1e6))
    kv.ttl_agent_hours = *v;
  if (auto v = r.number("ttl_chatbot_hours", 0, 1e6))
    kv.ttl_chatbot_hours = *v;
  if (auto v = r.number("gc_low_watermark", 0, 1))
    kv.gc_low_watermark = *v;
  if (auto v = r.number("gc_high_watermark", 0, 1))
    kv.gc_high_watermark = *v;
  if (kv.gc_low_watermark >= kv.gc_high_watermark)
    r.fail("gc_low_watermark", "must be below gc_high_watermark");
  if (auto v = r.integer("disk_budget_gib", 0, int64_t{1} << 40))
    kv.disk_budget_gib = static_cast<uint64_t>(*v);
  if (auto v = r.number("swa_ttl_seconds", 0, 1e6))
    kv.swa_ttl_seconds = *v;
  if (auto v = r.integer("swa_memory_mib", 0, int64_t{1} << 30))
    kv.swa_memory_mib = static_cast<uint64_t>(*v);
  if (auto v = r.integer("write_queue_mib", 1, int64_t{1} << 30))
    kv.write_queue_mib = static_cast<uint64_t>(*v);
  if (auto v = r.boolean("fsync"))
    kv.fsync = *v;
  r.finish();
}

/// The expert-parallel keys both `[balancer.prefill]` and `[balancer.decode]` take.
void read_expert_parallel(toml_reader& r, expert_parallel_params& ep) {
  if (auto v = r.integer("redundant_experts_per_rank", 0, 1024))
    ep.redundant_experts_per_rank = static_cast<uint32_t>(*v);
  if (auto v = r.integer("ep_window_steps", 1, 1 << 30))
    ep.window_steps = static_cast<uint32_t>(*v);
  if (auto v = r.integer("ep_replace_steps", 1, 1 << 30))
    ep.replace_steps = static_cast<uint32_t>(*v);
}

void read_balancer(toml_reader& r, balancer_params& b) {
  if (auto p = r.table("prefill")) {
    if (auto v = p->integers("bucket_bounds", 1, int64_t{1} << 40)) {
      if (v->size() != 3 || !((*v)[0] < (*v)[1] && (*v)[1] < (*v)[2]))
        p->fail("bucket_bounds", "needs three increasing token counts (default 16384, 65536, 262144)");
      b.prefill_bucket_bounds.assign(v->begin(), v->end());
    }
    if (auto v = p->number("step_budget_ms", 0.1, 1e5))
      b.prefill_step_budget_ms = *v;
    if (auto v = p->number("quota_per_rank_s", 0.001, 1e6))
      b.prefill_quota_per_rank_s = *v;
    if (auto v = p->boolean("whole_job_fits"))
      b.prefill_whole_job_fits = *v;
    if (auto v = p->integer("round_ms", 10, 3'600'000))
      b.prefill_round_ms = static_cast<uint32_t>(*v);
    read_expert_parallel(*p, b.prefill_ep);
    p->finish();
  }
  if (auto d = r.table("decode")) {
    if (d->number("kv_weight", 0, 1e6))
      d->fail("kv_weight", "removed: the decode balancer places by each rank's KV pool (what its requests may "
                           "reach must fit) and then by load, with no weight to set; remove the key");
    if (auto v = d->integer("max_batch", 1, 1 << 20))
      b.decode_max_batch = static_cast<uint32_t>(*v);
    read_expert_parallel(*d, b.decode_ep);
    d->finish();
  }
  r.finish();
}

void read_autoscaler(toml_reader& r, autoscaler_params& a) {
  auto count = [&](const char* key, uint32_t& out) {
    if (auto v = r.integer(key, 0, 1 << 20))
      out = static_cast<uint32_t>(*v);
  };
  count("min_prefill_instances", a.min_prefill_instances);
  count("max_prefill_instances", a.max_prefill_instances);
  count("min_decode_instances", a.min_decode_instances);
  count("max_decode_instances", a.max_decode_instances);
  count("ready_pool", a.ready_pool);
  count("max_step", a.max_step);
  if (auto v = r.number("quota_high_water", 0, 1))
    a.quota_high_water = *v;
  if (auto v = r.number("decode_grace_seconds", 0, 86400))
    a.decode_grace_seconds = *v;
  if (auto v = r.number("interval_seconds", 0.01, 86400))
    a.interval_seconds = *v;
  if (auto v = r.number("prefill_missed_tokens_per_s", 1, 1e12))
    a.prefill_missed_tokens_per_s = *v;
  if (auto v = r.number("decode_requests_per_instance", 0.01, 1e9))
    a.decode_requests_per_instance = *v;
  if (auto v = r.number("headroom", 1, 100))
    a.headroom = *v;
  if (auto v = r.number("queue_time_target_seconds", 0.001, 86400))
    a.queue_time_target_seconds = *v;
  if (a.min_prefill_instances > a.max_prefill_instances)
    r.fail("min_prefill_instances", "must not exceed max_prefill_instances");
  if (a.min_decode_instances > a.max_decode_instances)
    r.fail("min_decode_instances", "must not exceed max_decode_instances");
  r.finish();
}

node_spec read_node(toml_reader& r) {
  node_spec n;
  n.line = r.line();
  if (auto v = r.string("name"))
    n.name = *v;
  else
    r.fail("name", "every node needs a name");
  if (auto v = r.string("host"); v && !v->empty() &&
                                 v->find_first_of(" \t\r\n") == std::string::npos)
    n.host = *v;
  else if (v)
    r.fail("host", "'" + *v + "' is not a host (an address or name this machine can reach, without spaces)");
  else
    r.fail("host", "every node needs a host (an address or name this machine can reach)");
  if (auto v = r.integer("port", 1, 65535))
    n.port = static_cast<uint16_t>(*v);
  else
    r.fail("port", "every node needs a port (its CAF listen port)");
  if (auto roles = r.strings("roles")) {
    constexpr auto& all = actors::all_node_roles;
    for (size_t i = 0; i < roles->size(); ++i) {
      std::string expected;
      auto role = find_enum((*roles)[i], all, expected);
      if (!role)
        r.fail_element("roles", i, "unknown value '" + (*roles)[i] + "' (expected one of " + expected + ")");
      n.roles.push_back(*role);
    }
  }
  if (auto v = r.boolean("standby"))
    n.standby = *v;
  if (n.has(node_role::pool))
    n.standby = true;
  else if (n.standby)
    n.roles.push_back(node_role::pool);
  if (n.roles.empty())
    r.fail("roles", "every node needs at least one role (entrypoint, prefill, decode, vision, "
                    "kvstore, controller, pool, so)");
  if (auto v = r.integer("ranks", -(int64_t{1} << 31), int64_t{1} << 31)) {
    if (*v < 1)
      r.fail("ranks", "an instance needs at least one rank, got " + std::to_string(*v));
    if (*v > 1024)
      r.fail("ranks", "at most 1024 ranks per instance, got " + std::to_string(*v));
    n.ranks = static_cast<uint32_t>(*v);
  }
  if (auto v = r.integer("instances", 1, 64)) {
    if (n.standby && *v > 1)
      r.fail("instances", "a ready-pool node becomes one instance; give it `instances = 1` or leave the key out");
    n.instances = static_cast<uint32_t>(*v);
  }
  if (auto v = r.string("backend"))
    n.backend = parse_enum(r, "backend", *v, std::array{backend_kind::cpu, backend_kind::cuda});
  if (auto v = r.string("cpu_isa")) {
    if (*v != "auto" && !engine::kernels::parse_cpu_isa(*v))
      r.fail("cpu_isa", "unknown value '" + *v + "' (expected one of auto, portable, avx2, avx512)");
    n.cpu_isa = *v;
  }
  if (auto v = r.string("cpus")) {
    if (auto list = parse_cpu_list(*v))
      n.cpus = cpu_list_text(*list);
    else
      r.fail("cpus", list.error());
  }
  if (auto v = r.string("http")) {
    n.http = parse_host_port(*v);
    if (!n.http)
      r.fail("http", "expected HOST:PORT, got '" + *v + "'");
  }
  if (auto v = r.string("launch"))
    n.launch = parse_enum(r, "launch", *v,
                          std::array{launch_method::automatic, launch_method::local, launch_method::ssh});
  if (auto v = r.string("ssh_user"))
    n.ssh_user = *v;
  if (auto v = r.integer("ssh_port", 1, 65535))
    n.ssh_port = static_cast<uint16_t>(*v);
  r.finish();
  return n;
}

} // namespace

manifest_result parse_manifest(std::string_view text, const std::string& display_name) {
  toml::table doc;
  try {
    doc = toml::parse(text, display_name);
  } catch (const toml::parse_error& e) {
    return manifest_error{display_name, static_cast<int>(e.source().begin.line), "",
                          "invalid TOML: " + std::string{e.description()}};
  }
  try {
    cluster_manifest m;
    m.source_path = display_name;
    toml_reader root{doc, "", display_name};
    if (auto v = root.string("model"))
      m.model_path = *v;
    if (auto v = root.string("model_name"))
      m.model_name = *v;
    if (auto v = root.string("template")) {
      if (*v != "dsv41" && *v != "dsv32")
        root.fail("template", "unknown template '" + *v + "' (expected dsv41 or dsv32)");
      m.template_version = *v;
    }
    if (auto v = root.string("log_level")) {
      static const std::set<std::string> levels{"trace", "debug", "info", "warn", "error", "critical", "off"};
      if (!levels.count(*v))
        root.fail("log_level", "unknown level '" + *v + "' (trace, debug, info, warn, error, critical, off)");
      m.log_level = *v;
    }
    if (auto v = root.string("kv_transport")) {
      auto mode = actors::parse_kv_transport_mode(*v);
      if (!mode)
        root.fail("kv_transport", "unknown transport '" + *v + "' (expected auto, caf_message or rdma)");
      m.kv_transport = *mode;
    }
    if (auto v = root.integer("rdma_port", 0, 65535))
      m.rdma_port = static_cast<uint16_t>(*v);
    if (auto t = root.table("caf"))
      read_caf(*t, m.caf);
    if (auto t = root.table("http"))
      read_http(*t, m.http);
    if (auto t = root.table("requests"))
      read_requests(*t, m.requests);
    if (auto t = root.table("admission"))
      read_admission(*t, m.admission);
    if (auto t = root.table("kv"))
      read_kv(*t, m.kv);
    if (auto t = root.table("balancer"))
      read_balancer(*t, m.balancer);
    if (auto t = root.table("autoscaler"))
      read_autoscaler(*t, m.autoscaler);
    if (auto t = root.table("so")) {
      if (auto v = t->integer("cache_mib", 1, 1 << 20))
        m.so_cache_mib = static_cast<uint64_t>(*v);
      if (auto v = t->integer("compile_timeout_ms", 1, 600000))
        m.so_compile_timeout_ms = static_cast<uint32_t>(*v);
      if (auto v = t->integer("json_whitespace", -1, 4096))
        m.so_json_whitespace = static_cast<int32_t>(*v);
      t->finish();
    }
    if (auto t = root.table("vision")) {
      if (auto v = t->integer("max_pixels", 1, int64_t{1} << 28))
        m.vision.max_pixels = *v;
      if (auto v = t->integer("max_images_per_request", 0, 1024))
        m.vision.max_images_per_request = static_cast<int32_t>(*v);
      if (auto v = t->integer("max_image_bytes", 1, int64_t{1} << 30))
        m.vision.max_bytes = *v;
      if (auto v = t->number("fetch_timeout_s", 0.001, 3600))
        m.image_fetch.timeout = std::chrono::milliseconds{static_cast<int64_t>(*v * 1000 + 0.5)};
      if (auto v = t->integer("fetch_max_redirects", 0, 20))
        m.image_fetch.max_redirects = static_cast<int>(*v);
      if (auto v = t->boolean("fetch_private_addresses"))
        m.image_fetch.private_hosts = *v ? actors::http::private_addresses::allow : actors::http::private_addresses::refuse;
      if (auto v = t->string("fetch_ca_file"))
        m.image_fetch.ca_file = *v;
      if (auto v = t->string("balancer"))
        m.vision_balancer = parse_enum(*t, "balancer", *v,
          std::array{balancers::vision_policy::patches, balancers::vision_policy::round_robin});
      if (auto v = t->string("scheduling")) {
        if (*v != "idle" && *v != "normal")
          t->fail("scheduling", "unknown value '" + *v + "' (expected idle or normal)");
        m.vision_priority.idle = *v == "idle";
      }
      if (auto v = t->integer("nice", 0, 19))
        m.vision_priority.nice = static_cast<int>(*v);
      if (auto v = t->integer("background_body_bytes", 0, int64_t{1} << 40))
        m.vision_background_body_bytes = static_cast<uint64_t>(*v);
      t->finish();
    }
    if (auto t = root.table("supervision")) {
      if (auto v = t->string("restart"))
        m.supervision.restart = parse_enum(*t, "restart", *v,
          std::array{restart_policy::never, restart_policy::on_failure, restart_policy::always});
      if (auto v = t->integer("restart_delay_ms", 0, 3600000))
        m.supervision.restart_delay_ms = static_cast<uint32_t>(*v);
      if (auto v = t->integer("max_restarts_per_minute", 0, 100000))
        m.supervision.max_restarts_per_minute = static_cast<uint32_t>(*v);
      t->finish();
    }
    if (auto t = root.table("remote")) {
      if (auto v = t->string("command"))
        m.remote.command = *v;
      if (auto v = t->string("manifest"))
        m.remote.manifest = *v;
      if (auto v = t->strings("ssh_options"))
        m.remote.ssh_options = *v;
      t->finish();
    }
    auto nodes = root.tables("nodes");
    for (auto& n : nodes)
      m.nodes.push_back(read_node(n));
    validate_manifest(m, root, nodes);
    root.finish();
    return m;
  } catch (manifest_error& e) {
    return std::move(e);
  }
}

manifest_result load_manifest(const std::string& path) {
  std::ifstream in{path, std::ios::binary};
  if (!in)
    return manifest_error{path, 0, "", "cannot open the manifest file (check the path)"};
  std::ostringstream text;
  text << in.rdbuf();
  auto result = parse_manifest(text.str(), path);
  if (auto* m = std::get_if<cluster_manifest>(&result)) {
    // Children and remote hosts get the absolute path: they may run in another directory.
    std::error_code ec;
    auto abs = std::filesystem::absolute(path, ec);
    m->source_path = ec ? path : abs.lexically_normal().string();
    if (m->remote.manifest.empty())
      m->remote.manifest = m->source_path;
  }
  return result;
}

} // namespace deepinfer::launcher
