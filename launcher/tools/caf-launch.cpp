// caf-launch: starts DeepInfer-CAF. With no arguments: the embedded default (every role in one
// process, HTTP on 127.0.0.1:8000). With --manifest: every node of a cluster (local children,
// remote nodes over ssh), supervised; with --manifest and --node: one node in this process.
#include <csignal>
#include <cstdlib>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include <CLI/CLI.hpp>

#include "actors/node/node_runtime.hpp"
#include "engine/backends/make_backend.hpp"
#include "engine/decoder_mode.hpp"
#include "engine/speculative_mode.hpp"
#include "engine/kernels/isa.hpp"
#include "launcher/cpu_list.hpp"
#include "launcher/launch_plan.hpp"
#include "launcher/log.hpp"
#include "launcher/logging.hpp"
#include "launcher/manifest.hpp"
#include "launcher/model_cache.hpp"
#include "launcher/process_supervisor.hpp"
#include "launcher/serving_flags.hpp"

using namespace deepinfer;
using namespace deepinfer::launcher;

namespace {

constexpr int usage_error = 2;

struct options {
  std::string manifest;
  std::string node;
  std::string http;
  std::string log_level;
  bool dry_run = false;
  int scheduler_threads = 0;
  int heartbeat_ms = 0;
  int connection_timeout_ms = 0;
  std::string model_dir;
  std::string kv_root;
  std::string decoder_mode; // empty: bounded
  std::string speculative;  // empty: variable when the model has a draft head, else off
  std::string async_scheduling; // empty: on
  std::string cpu_isa;      // empty: the manifest node's cpu_isa, else auto
  std::string backend;      // empty: the manifest node's backend, else cpu
  std::string cpus;         // empty: the manifest node's cpus, else every CPU the process may use
  std::string kv_transport;
  int prefill_step_ms = 0;  // 0: the manifest's step_budget_ms (100 ms without a manifest)
  double prefill_quota_s = 0; // embedded default only; 0: [balancer.prefill]'s default
  bool prefill_whole_job_fits = false; // embedded default only
  bool no_serve = false;
  int ranks = 2;            // ranks (EP size) of each instance of the embedded default
  int instances = 1;        // prefill and decode instances of the embedded default
  bool no_batch_threads = false;
  bool hangup_stops = false; // set for nodes started over ssh: their session's end must stop them
  serving_flags serving;
};

/// ${DEEPINFER_CACHE:-$HOME/.cache/deepinfer}
std::string cache_dir() {
  if (const char* c = std::getenv("DEEPINFER_CACHE"); c && *c)
    return c;
  const char* home = std::getenv("HOME");
  return std::string{home ? home : "."} + "/.cache/deepinfer";
}

/// Blocks SIGINT/SIGTERM (stop) and SIGHUP in this thread before any other starts, so every
/// thread inherits the mask and only `run_node`'s wait (or the supervisor loop) receives them.
/// SIGHUP reloads the API keys where a keys file is configured (the supervisor passes it on to
/// its nodes), and stops the process like SIGTERM everywhere else: a terminal or ssh session
/// that hangs up still ends what it started.
sigset_t block_stop_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  return set;
}

int run_node(actors::node_runtime_config cfg, const sigset_t& stop_signals, bool hangup_stops) {
  const bool reloads = !hangup_stops && cfg.http && !cfg.http->api_keys_file.empty();
  if (cfg.http)
    fit_open_files(*cfg.http);
  actors::node_runtime node{std::move(cfg)};
  if (auto err = node.start()) {
    log().critical("cannot start: {}", *err);
    std::cerr << "caf-launch: " << *err << "\n";
    return 1;
  }
  if (auto port = node.http_port())
    log().info("serving HTTP on port {}", port);
  int sig = 0;
  while (sigwait(&stop_signals, &sig) == 0 && sig == SIGHUP && reloads)
    node.reload_api_keys(); // logs what it did; a bad file keeps the keys in use
  if (sig == SIGHUP) // a hangup ends the process at once, as SIGHUP's default action always did
    std::_Exit(128 + SIGHUP);
  log().info("received {}; shutting down", strsignal(sig));
  // SIGTERM (an orchestrator's stop, a scale-down) drains a decode node first: its requests
  // finish in the grace period or move to other decode instances with their KV (issue 17).
  // SIGINT (Ctrl-C, the launcher stopping the whole cluster) stops at once.
  if (sig == SIGTERM)
    node.drain();
  node.stop(std::chrono::milliseconds{1500});
  return 0;
}

/// Keeps this node's process on `list` (the node's `cpus`, or --cpus), logged; an exit status when
/// it cannot (the reason on stderr). Nothing for an empty list.
std::optional<int> keep_node_on_cpus(const std::string& list) {
  if (list.empty())
    return std::nullopt;
  auto cpus = parse_cpu_list(list);
  auto kept = cpus ? keep_process_on(*cpus) : expected<bool, std::string>{cpus.error()};
  if (!kept) {
    std::cerr << "caf-launch: --cpus / cpus: " << kept.error() << "\n";
    return config_error_status;
  }
  log().info("cpus: this node runs on CPUs {}", cpu_list_text(*cpus));
  return std::nullopt;
}

/// The CPU kernels for `name` ("auto" or an ISA), logged once; nullopt (with the reason on stderr)
/// when this CPU cannot run them.
std::optional<engine::kernels::cpu_isa> choose_isa(const std::string& name) {
  const auto c = engine::kernels::choose_cpu_isa(name);
  if (!c.isa) {
    std::cerr << "caf-launch: --cpu-isa / cpu_isa: " << c.error << "\n";
    return std::nullopt;
  }
  log().info("cpu kernels: {} (asked: {}; cpu has: {})", engine::kernels::to_string(*c.isa), name,
             engine::kernels::cpu_feature_summary());
  return c.isa;
}

/// The one place a serving node's config is finished, in every mode: `sc` comes with what the
/// manifest (or the embedded default) says, `model_dir` empty or "tiny" for the seeded tiny model
/// (made in the cache on first run; every node makes the identical bytes); the flags override
/// the rest. `isa` and `backend` are the node's `cpu_isa` and `backend` when --cpu-isa and
/// --backend are not given. An exit status when it cannot be served (the reason on stderr);
/// nullopt when `sc` is ready.
std::optional<int> finish_serving_config(const options& o, actors::serving_config& sc, const std::string& isa,
                                         engine::backend_kind backend, actors::kv_transport_mode transport) {
  // First, before a model is made: a CUDA node without a usable device says so and stops, rather
  // than start ranks that fail one by one (or quietly compute on the CPU).
  sc.backend = o.backend.empty() ? backend : *engine::parse_backend_kind(o.backend);
  if (sc.backend == engine::backend_kind::cuda) {
    auto probe = engine::make_cuda_backend(engine::backend_config{engine::backend_kind::cuda, 1, std::nullopt, 0});
    if (!probe.value) {
      std::cerr << "caf-launch: --backend cuda / backend = \"cuda\": " << probe.error << "\n";
      return config_error_status;
    }
    log().info("backend: cuda ({})", probe.value->name());
  }
  // A preset's name (tiny, small, bench_v4) is its seeded model, made in the cache on first run,
  // unless a model directory of that name is here.
  switch (locate_model(sc.model_dir)) {
    case model_source::directory:
      break;
    case model_source::preset: {
      auto made = ensure_preset_model(cache_dir(), preset_name(sc.model_dir));
      if (!made.error.empty()) {
        std::cerr << "caf-launch: " << made.error << "\n";
        return 1;
      }
      sc.model_dir = made.dir;
      break;
    }
    case model_source::missing:
      std::cerr << "caf-launch: model '" << sc.model_dir << "': no config.json there on this machine; point the "
                << "manifest's `model` (or --model) at a model directory (deepinfer-mkmodel --config tiny|small|bench_v4 "
                << "--out DIR writes one), or name a preset: \"tiny\", \"small\", \"bench_v4\"\n";
      return config_error_status;
  }
  sc.tokenizer_path =
    cache_dir() + "/tokenizer/tokenizer_" + (sc.template_version == "dsv32" ? "v32" : "v41") + ".json";
  if (!o.kv_root.empty())
    sc.kv_root = o.kv_root;
  sc.decoder_mode = *engine::parse_decoder_mode(o.decoder_mode.empty() ? "bounded" : o.decoder_mode);
  if (!o.speculative.empty())
    sc.speculative = engine::parse_speculative_mode(o.speculative);
  sc.async_scheduling = o.async_scheduling != "off";
  sc.cpu_isa = choose_isa(o.cpu_isa.empty() ? isa : o.cpu_isa);
  if (!sc.cpu_isa)
    return usage_error;
  sc.kv_transport = o.kv_transport.empty() ? transport : *actors::parse_kv_transport_mode(o.kv_transport);
  return std::nullopt;
}

void apply_flag_overrides(const options& o, actors::system_settings& s) {
  if (o.scheduler_threads > 0)
    s.scheduler_threads = static_cast<unsigned>(o.scheduler_threads);
  if (o.heartbeat_ms > 0)
    s.heartbeat_interval = std::chrono::milliseconds{o.heartbeat_ms};
  if (o.connection_timeout_ms > 0)
    s.connection_timeout = std::chrono::milliseconds{o.connection_timeout_ms};
  if (o.no_batch_threads)
    s.batch_threads = false;
}

} // namespace

int main(int argc, char** argv) {
  CLI::App app{"caf-launch: start a DeepInfer-CAF node or cluster.\n"
               "No arguments: the embedded default (every role in one process, HTTP on 127.0.0.1:8000).",
               "caf-launch"};
  options o;
  app.add_option("--manifest", o.manifest, "Cluster manifest (TOML); without --node, starts and "
                                           "supervises every node it lists");
  app.add_option("--node", o.node, "Run only this node of the manifest, in this process")->needs("--manifest");
  app.add_option("--http", o.http, "HTTP listen address HOST:PORT of this process's entrypoint "
                                   "(default 127.0.0.1:8000, or the manifest's `http`)");
  app.add_option("--log-level", o.log_level, "trace|debug|info|warn|error|critical|off "
                                             "(default: the manifest's log_level, else info)");
  app.add_flag("--dry-run", o.dry_run, "Validate the manifest and print the resolved plan; start nothing")
    ->needs("--manifest");
  app.add_option("--scheduler-threads", o.scheduler_threads, "CAF scheduler threads (overrides the manifest)");
  app.add_option("--heartbeat-ms", o.heartbeat_ms, "CAF middleman heartbeat interval in ms "
                                                   "(must be the same on every node)");
  app.add_option("--connection-timeout-ms", o.connection_timeout_ms,
                 "CAF middleman connection timeout in ms (must be the same on every node)");
  app.add_option("--model", o.model_dir, "Model directory of the embedded default, or a preset's name "
                                         "(tiny, small, bench_v4: its seeded model, made on first run in the "
                                         "cache; default tiny)");
  app.add_option("--kv-root", o.kv_root, "KV block store root (default: $DEEPINFER_CACHE/kv for the "
                                       "embedded default, the manifest's [kv] root for a node)");
  app.add_option("--decoder-mode", o.decoder_mode,
                 "bounded|exact: how prefills run the decoder (default bounded, the seeds' production "
                 "mode: over the prompt's last 128 tokens; exact, for measurement: its windows equal a "
                 "full run's)")
    ->check(CLI::IsMember({"exact", "bounded"}));
  app.add_option("--speculative", o.speculative,
                 "off|fixed|variable: speculative decoding on decode ranks with the model's draft head "
                 "(default variable when the model has one; fixed verifies all 5 drafts; greedy output "
                 "is the same in every mode)")
    ->check(CLI::IsMember({"off", "fixed", "variable"}));
  app.add_option("--async-scheduling", o.async_scheduling,
                 "on|off: decode ranks step their batch on a compute thread while the rank's thread "
                 "streams the step before (default on; the output is the same token for token)")
    ->check(CLI::IsMember({"on", "off"}));
  app.add_option("--cpu-isa", o.cpu_isa,
                 "auto|portable|avx2|avx512: the CPU kernels (overrides the manifest node's cpu_isa; "
                 "default auto, the best this CPU runs; every choice computes the same bits)")
    ->check(CLI::IsMember({"auto", "portable", "avx2", "avx512"}));
  app.add_option("--backend", o.backend,
                 "cpu|cuda: where the ranks' matrix products run (overrides the manifest node's backend; "
                 "default cpu; cuda computes the same bits, one rank per GPU, and fails at start without "
                 "a usable device)")
    ->check(CLI::IsMember({"cpu", "cuda"}));
  app.add_option("--cpus", o.cpus,
                 "CPUs this node's process runs on, as `taskset -c` lists them (0-3,6; overrides the manifest "
                 "node's cpus; default every CPU it may use): co-located nodes on cores of their own");
  app.add_option("--kv-transport", o.kv_transport,
                 "auto|caf_message|rdma: how KV crosses processes (overrides the manifest's "
                 "kv_transport; auto uses RDMA between nodes that both have an RDMA device)")
    ->check(CLI::IsMember({"auto", "caf_message", "rdma"}));
  app.add_option("--prefill-step-ms", o.prefill_step_ms,
                 "Time budget of one chunked-prefill step in ms (default 100): a new prompt waits "
                 "about this long behind a long one")
    ->check(CLI::Range(1, 60000));
  app.add_flag("--no-batch-threads", o.no_batch_threads,
               "CAF threads (ranks, actors) keep the default scheduling policy instead of SCHED_BATCH "
               "(overrides the manifest's caf.batch_threads)");
  app.add_flag("--hangup-stops", o.hangup_stops,
               "SIGHUP stops this node even with an API keys file (the launcher passes it to the nodes it "
               "starts over ssh, so they end with their session)");
  app.add_flag("--no-serve", o.no_serve, "Run without the model (membership, supervision and HTTP only), "
                                         "for the embedded default or every node of a manifest");
  auto* quota_flag = app.add_option("--prefill-quota-s", o.prefill_quota_s,
                                    "Compute-quota (fitted seconds of prefill) a prefill rank of the embedded default may "
                                    "hold before its instance stops pulling (default 4; a manifest sets "
                                    "[balancer.prefill] quota_per_rank_s)")
    ->check(CLI::Range(0.001, 1e6));
  auto* fits_flag = app.add_flag("--prefill-whole-job-fits", o.prefill_whole_job_fits,
                                 "A prefill instance of the embedded default pulls only a job that fits in its quota "
                                 "left, or any job when it holds none; a short prompt that finds no room overruns "
                                 "the quota by up to one prefill step (a manifest sets [balancer.prefill] "
                                 "whole_job_fits; see bench/RESULTS.md, whole-job quota)");
  auto* ranks_flag = app.add_option("--ranks", o.ranks, "Ranks of each prefill and decode instance of the embedded default: "
                                     "its expert-parallel size (default 2; a manifest sets each node's ranks)")
    ->check(CLI::Range(1, 64));
  auto* instances_flag = app.add_option("--instances", o.instances, "Prefill instances and decode instances of the embedded default, "
                                             "each an expert-parallel group of --ranks ranks (default 1; "
                                             "--instances 2 --ranks 1: two independent engines of each role)")
    ->check(CLI::Range(1, 16));
  o.serving.add_to(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    auto rc = app.exit(e);
    return rc == 0 ? 0 : usage_error;
  }

  std::optional<host_port> http_override;
  if (!o.http.empty()) {
    http_override = parse_host_port(o.http);
    if (!http_override) {
      std::cerr << "caf-launch: --http expects HOST:PORT, got '" << o.http << "'\n";
      return usage_error;
    }
  }

  // 1. The embedded default.
  if (o.manifest.empty()) {
    if (!setup_logging(o.log_level.empty() ? "info" : o.log_level, "local")) {
      std::cerr << "caf-launch: unknown --log-level '" << o.log_level << "'\n";
      return usage_error;
    }
    if (auto rc = keep_node_on_cpus(o.cpus))
      return *rc;
    auto stop_signals = block_stop_signals();
    balancer_params balancer;
    if (o.prefill_quota_s > 0)
      balancer.prefill_quota_per_rank_s = o.prefill_quota_s;
    balancer.prefill_whole_job_fits = o.prefill_whole_job_fits;
    if (o.prefill_step_ms > 0)
      balancer.prefill_step_budget_ms = o.prefill_step_ms;
    auto cfg = make_embedded_config(http_override.value_or(host_port{"127.0.0.1", 8000}),
                                    "deepseek-v4.1-flash", static_cast<uint32_t>(o.ranks),
                                    static_cast<uint32_t>(o.instances), balancer);
    apply_flag_overrides(o, cfg.caf);
    if (!o.no_serve) {
      actors::serving_config sc;
      sc.model_name = "deepseek-v4.1-flash";
      sc.model_dir = o.model_dir;
      sc.kv_root = cache_dir() + "/kv";
      sc.prefill_step = prefill_step_of(balancer);
      if (auto rc = finish_serving_config(o, sc, "auto", engine::backend_kind::cpu, actors::kv_transport_mode::automatic))
        return *rc;
      cfg.serving = sc;
    }
    actors::serving_config unused;
    auto& serving = cfg.serving ? *cfg.serving : unused;
    o.serving.apply(*cfg.http, serving.requests, serving.admission);
    return run_node(std::move(cfg), stop_signals, o.hangup_stops);
  }

  // 2. A manifest: validate first, whatever the mode. Its nodes have their own shapes.
  if (ranks_flag->count() > 0 || instances_flag->count() > 0) {
    std::cerr << "caf-launch: --ranks and --instances shape the embedded default; with --manifest set `ranks` "
                 "and `instances` on the manifest's [[nodes]]\n";
    return usage_error;
  }
  if (quota_flag->count() > 0 || fits_flag->count() > 0) {
    std::cerr << "caf-launch: --prefill-quota-s and --prefill-whole-job-fits set the embedded default's prefill "
                 "balancer; with --manifest set quota_per_rank_s and whole_job_fits in [balancer.prefill]\n";
    return usage_error;
  }
  auto loaded = load_manifest(o.manifest);
  if (auto* err = std::get_if<manifest_error>(&loaded)) {
    std::cerr << "caf-launch: " << err->to_string() << "\n";
    return usage_error;
  }
  auto& m = std::get<cluster_manifest>(loaded);
  // The flag is the step budget everywhere: the nodes' prefill steps and the prefill balancer's
  // reserve for short prompts (make_balancer_config) both read it from here.
  if (o.prefill_step_ms > 0)
    m.balancer.prefill_step_budget_ms = o.prefill_step_ms;
  if (o.node.empty() && !o.no_serve)
    for (auto& w : m.warnings())
      std::cerr << "caf-launch: warning: " << w << "\n";
  apply_flag_overrides(o, m.caf);
  auto level = o.log_level.empty() ? m.log_level : o.log_level;
  if (!setup_logging(level, o.node.empty() ? "launcher" : o.node)) {
    std::cerr << "caf-launch: unknown --log-level '" << level << "'\n";
    return usage_error;
  }

  // 2a. One node in this process.
  if (!o.node.empty()) {
    auto* node = m.find_node(o.node);
    if (!node) {
      std::cerr << "caf-launch: " << m.source_path << ": no node named '" << o.node << "'\n";
      return usage_error;
    }
    if (auto rc = keep_node_on_cpus(o.cpus.empty() ? node->cpus : o.cpus))
      return *rc;
    auto cfg = make_node_config(m, *node);
    if (!o.no_serve
        && (node->has(node_role::entrypoint) || node->has(node_role::prefill) || node->has(node_role::decode) ||
            node->has(node_role::vision) || node->has(node_role::so) || node->standby)) {
      // Every serving node loads the same model (a vision node its encoder: without it, its
      // ranks refuse every image and the prefill ranks encode them instead; an `so` node its
      // tokenizer, whose vocabulary the constraints compile over).
      actors::serving_config sc;
      sc.model_name = m.model_name;
      sc.template_version = m.template_version;
      sc.model_dir = m.model_path;
      sc.kv_root = m.kv.root;
      sc.snapshot_ttl = std::chrono::milliseconds{static_cast<int64_t>(m.kv.swa_ttl_seconds * 1000)};
      sc.kv_ttl_agent = std::chrono::milliseconds{static_cast<int64_t>(m.kv.ttl_agent_hours * 3'600'000)};
      sc.kv_ttl_chatbot = std::chrono::milliseconds{static_cast<int64_t>(m.kv.ttl_chatbot_hours * 3'600'000)};
      sc.kv_disk_budget_bytes = m.kv.disk_budget_gib << 30;
      sc.kv_gc_low_watermark = m.kv.gc_low_watermark;
      sc.kv_gc_high_watermark = m.kv.gc_high_watermark;
      sc.kv_fsync = m.kv.fsync;
      sc.swa_memory_bytes = m.kv.swa_memory_mib << 20;
      sc.kv_write_queue_bytes = m.kv.write_queue_mib << 20;
      sc.rdma_port = m.rdma_port;
      sc.requests = m.requests;
      sc.admission = m.admission;
      sc.so_cache_bytes = static_cast<std::size_t>(m.so_cache_mib) << 20;
      sc.so_compile_timeout = std::chrono::milliseconds{m.so_compile_timeout_ms};
      sc.so_json_whitespace =
          m.so_json_whitespace < 0 ? std::nullopt : std::optional<uint32_t>{static_cast<uint32_t>(m.so_json_whitespace)};
      sc.vision = m.vision;
      sc.image_fetch = m.image_fetch;
      sc.vision_balancer = m.vision_balancer;
      sc.vision_priority = m.vision_priority;
      sc.background_body_bytes = static_cast<std::size_t>(m.vision_background_body_bytes);
      sc.prefill_step = prefill_step_of(m.balancer);
      if (auto rc = finish_serving_config(o, sc, node->cpu_isa, node->backend, m.kv_transport))
        return *rc;
      cfg.serving = sc;
    }
    {
      actors::serving_config unused;
      actors::http_endpoint no_http;
      auto& serving = cfg.serving ? *cfg.serving : unused;
      o.serving.apply(cfg.http ? *cfg.http : no_http, serving.requests, serving.admission);
    }
    if (http_override) {
      if (!cfg.http) {
        std::cerr << "caf-launch: --http: node '" << o.node << "' has no entrypoint role\n";
        return usage_error;
      }
      cfg.http->host = http_override->host;
      cfg.http->port = http_override->port;
    }
    auto stop_signals = block_stop_signals();
    return run_node(std::move(cfg), stop_signals, o.hangup_stops);
  }

  // 2b. The whole cluster: every node as a child process or over ssh, supervised.
  std::vector<std::string> extra;
  if (!o.log_level.empty())
    extra = {"--log-level", o.log_level};
  if (o.no_serve)
    extra.push_back("--no-serve");
  if (o.no_batch_threads)
    extra.push_back("--no-batch-threads");
  // Every flag that changes a node's behaviour reaches the children; each node resolves
  // --cpu-isa against its own CPU and --backend cuda against its own devices.
  for (auto [flag, value] : {std::pair{"--kv-transport", &o.kv_transport}, std::pair{"--decoder-mode", &o.decoder_mode},
                             std::pair{"--speculative", &o.speculative},
                             std::pair{"--async-scheduling", &o.async_scheduling},
                             std::pair{"--kv-root", &o.kv_root}, std::pair{"--cpu-isa", &o.cpu_isa},
                             std::pair{"--backend", &o.backend}, std::pair{"--cpus", &o.cpus}})
    if (!value->empty())
      extra.insert(extra.end(), {flag, *value});
  if (o.prefill_step_ms > 0)
    extra.insert(extra.end(), {"--prefill-step-ms", std::to_string(o.prefill_step_ms)});
  for (auto& a : o.serving.arguments())
    extra.push_back(a);
  for (auto [flag, value] : {std::pair{"--scheduler-threads", o.scheduler_threads},
                             std::pair{"--heartbeat-ms", o.heartbeat_ms},
                             std::pair{"--connection-timeout-ms", o.connection_timeout_ms}})
    if (value > 0)
      extra.insert(extra.end(), {flag, std::to_string(value)});
  std::error_code ec;
  auto self_exe = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  auto plan = make_launch_plan(m, ec ? std::string{argv[0]} : self_exe, extra);
  if (http_override) {
    // --http applies to the entrypoint this launcher starts; ambiguous with several.
    std::vector<node_launch*> eps;
    for (auto& l : plan)
      if (l.node->has(node_role::entrypoint))
        eps.push_back(&l);
    if (eps.size() != 1) {
      std::cerr << "caf-launch: --http is ambiguous with " << eps.size()
                << " entrypoint nodes; use --node NAME --http HOST:PORT\n";
      return usage_error;
    }
    eps.front()->argv.insert(eps.front()->argv.end(), {"--http", o.http});
  }
  if (o.dry_run) {
    std::cout << describe_plan(m, plan);
    return 0;
  }
  block_stop_signals();
  std::vector<child_spec> children;
  for (auto& l : plan)
    children.push_back({l.node->name, l.argv});
  process_supervisor::config sc;
  sc.policy = m.supervision.restart;
  sc.restart_delay = std::chrono::milliseconds{m.supervision.restart_delay_ms};
  sc.max_restarts_per_minute = m.supervision.max_restarts_per_minute;
  // A keys file anywhere: SIGHUP means "reload" and goes to the nodes; otherwise it stops them.
  sc.forward_hangup = !m.http.api_keys_file.empty() || o.serving.api_keys_file.has_value();
  process_supervisor sup{sc, std::move(children)};
  return sup.run();
}
