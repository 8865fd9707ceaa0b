// deepinfer-sim: discrete-event simulator of the serving cluster in virtual time (DESIGN §8).
//
//   deepinfer-sim --trace FILE|agent|rates [--config FILE.json] --out DIR [--policy P] [--oracle]
//                 [--compare] [--time-scale X] [--max-requests N] [--horizon S] [--progress]
//                 [--rates DIR|CSV --lengths FILE] [--autoscale [--static-peak] [--static-search]]
//
// FILE: Mooncake JSONL or Azure CSV; `agent` uses the built-in agent-session generator; `rates`
// draws arrivals from ServeGen rate curves (--rates) with lengths from a trace (--lengths).
// --compare runs quota_buckets, round_robin, least_outstanding and the oracle on the same input
// and writes summary.json + summary.md with one row each.
// --autoscale applies the autoscaler's decisions (provisioning delays, drains, handoffs);
// --static-peak re-runs the input on a static cluster of the autoscaled run's peak instance
// counts, --static-search also finds the smallest static prefill count (decode at the peak) that
// meets the TTFT SLO attainment goal; both write elastic.json + elastic.md.
#include "balancers/sim/agent_workload.hpp"
#include "balancers/sim/rate_workload.hpp"
#include "balancers/sim/report.hpp"
#include "balancers/sim/simulator.hpp"
#include "balancers/sim/trace_workload.hpp"
#include "recipe/base/cli.hpp"
#include "recipe/base/json_fields.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>

namespace sim = deepinfer::balancers::sim;

namespace {

struct options {
  std::string trace;
  std::string config;
  std::string out = "sim-out";
  std::string policy = "quota_buckets";
  bool oracle = false;
  bool compare = false;
  bool progress = false;
  bool autoscale = false;
  bool static_peak = false;
  bool static_search = false;
  double slo_goal = 0.95;
  std::string rates;
  std::string lengths;
  double time_scale = 1.0;
  int64_t max_requests = 0;
  double horizon = 0.0;
};

sim::prefill_policy parse_policy(const std::string& s) {
  if (s == "round_robin")
    return sim::prefill_policy::round_robin;
  if (s == "least_outstanding")
    return sim::prefill_policy::least_outstanding;
  if (s == "quota_buckets")
    return sim::prefill_policy::quota_buckets;
  throw std::runtime_error("unknown policy " + s);
}

// Applies the optional JSON config: flat keys named like the config fields. A key it does not
// know (a typo would otherwise run the default silently) or a value of the wrong type is an
// error that names the key.
void apply(const nlohmann::json& j, sim::sim_config& c, sim::agent_workload::config& a,
           sim::rate_workload::config& rw) {
  if (!j.is_object())
    throw std::runtime_error("--config: the file must hold one JSON object of flat keys");
  deepinfer::json_fields fields{j};
  auto get = [&](const char* k, auto& field) {
    try {
      fields.get(k, field);
    } catch (const nlohmann::json::exception&) {
      throw std::runtime_error(std::string{"--config: key '"} + k + "': " + j.at(k).dump() + " is not a " +
                               (std::is_same_v<std::decay_t<decltype(field)>, bool> ? "boolean" : "number"));
    }
  };
  get("prefill_instances", c.prefill_instances);
  get("prefill_dp", c.prefill_dp);
  get("decode_instances", c.decode_instances);
  get("decode_dp", c.decode_dp);
  get("step_budget_s", c.step_budget_s);
  get("round_s", c.round_s);
  get("quota_per_rank_s", c.quota_per_rank_s);
  get("whole_job_fits", c.whole_job_fits);
  get("short_reserve_s", c.short_reserve_s);
  get("decode_moe_lb", c.decode.moe_lb);
  get("cache_capacity_blocks", c.cache.capacity_blocks);
  get("cache_ttl_s", c.cache.ttl_s);
  get("swa_ttl_s", c.cache.swa_ttl_s);
  get("sample_s", c.sample_s);
  get("autoscale_s", c.autoscale_s);
  get("agent_session_rate", a.session_rate);
  get("agent_duration_s", a.duration_s);
  get("agent_turns_mean", a.turns_mean);
  get("agent_output_mean", a.output_mean);
  get("agent_tool_mean", a.tool_mean);
  get("agent_first_user_mean", a.first_user_mean);
  get("agent_seed", a.seed);
  // autoscaler (balancers::autoscaler::config) and how instances come and go
  auto& k = c.scaling;
  get("prefill_missed_tok_per_s", k.prefill_missed_tok_per_s);
  get("decode_requests", k.decode_requests);
  get("headroom", k.headroom);
  get("min_prefill", k.min_prefill);
  get("max_prefill", k.max_prefill);
  get("min_decode", k.min_decode);
  get("max_decode", k.max_decode);
  get("max_step_up", k.max_step_up);
  get("max_step_down", k.max_step_down);
  get("no_scale_down_quota_use", k.no_scale_down_quota_use);
  get("queue_time_target_s", k.queue_time_target_s);
  get("ready_pool", k.ready_pool);
  get("decode_grace_s", k.decode_grace_s);
  get("provision_from_pool_s", c.provision.from_pool_s);
  get("provision_cold_s", c.provision.cold_s);
  get("handoff_latency_s", c.provision.handoff_latency_s);
  get("handoff_bytes_per_token", c.provision.handoff_bytes_per_token);
  get("handoff_bytes_per_s", c.provision.handoff_bytes_per_s);
  get("ttft_slo_s", c.ttft_slo_s);
  get("tpot_slo_s", c.tpot_slo_s);
  // rate-curve workload
  get("rate_window_s", rw.window_s);
  get("rate_start_s", rw.start_s);
  get("rate_duration_s", rw.duration_s);
  get("rate_scale", rw.rate_scale);
  get("rate_seed", rw.seed);
  if (auto key = fields.unknown_key())
    throw std::runtime_error("--config: unknown key '" + *key + "' (the keys: " + fields.known_keys() + ")");
}

nlohmann::json run_once(const options& o, sim::sim_config cfg, const sim::agent_workload::config& acfg,
                        const sim::rate_workload::config& rcfg, const std::string& plot_dir) {
  std::unique_ptr<sim::workload> wl;
  if (o.trace == "agent")
    wl = std::make_unique<sim::agent_workload>(acfg);
  else if (o.trace == "rates")
    wl = std::make_unique<sim::rate_workload>(rcfg);
  else
    wl = std::make_unique<sim::trace_workload>(
        sim::trace_workload::config{.path = o.trace, .time_scale = o.time_scale, .max_requests = o.max_requests});
  const auto t0 = std::chrono::steady_clock::now();
  sim::simulator s(cfg, *wl);
  auto res = s.run();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  auto j = sim::report::summarize(res, cfg, wall);
  if (!plot_dir.empty()) {
    std::filesystem::create_directories(plot_dir);
    sim::report::write_plots(res, plot_dir, res.workload + ", " + sim::report::policy_name(cfg.policy), cfg.autoscale);
  }
  return j;
}

// The autoscaled run against static clusters on the same input: at its peak instance counts, and
// (with --static-search) at the smallest prefill count meeting the SLO goal with decode at the peak.
nlohmann::json elastic(const options& o, const sim::sim_config& cfg, const sim::agent_workload::config& acfg,
                       const sim::rate_workload::config& rcfg) {
  nlohmann::json out;
  auto scaled = cfg;
  scaled.autoscale = sim::autoscale_mode::applied;
  out["autoscaled"] = run_once(o, scaled, acfg, rcfg, o.out);
  std::cerr << "[deepinfer-sim] autoscaled run done\n";
  if (!o.static_peak && !o.static_search)
    return out;
  const auto static_run = [&](int prefill, int decode, const std::string& dir) {
    auto c = cfg;
    c.autoscale = sim::autoscale_mode::advisory;
    c.prefill_instances = prefill;
    c.decode_instances = decode;
    auto j = run_once(o, c, acfg, rcfg, dir);
    std::cerr << "[deepinfer-sim] static " << prefill << "+" << decode << " done\n";
    return j;
  };
  const int peak_p = out["autoscaled"]["peak_prefill_instances"].get<int>();
  const int peak_d = out["autoscaled"]["peak_decode_instances"].get<int>();
  out["static_peak"] = static_run(peak_p, peak_d, o.out + "/static_peak");
  if (o.static_search) {
    // TTFT attainment does not fall as prefill instances are added: bisect on the prefill count.
    int lo = 1, hi = peak_p;
    nlohmann::json best = out["static_peak"];
    if (best["ttft_slo_attainment"].get<double>() >= o.slo_goal) {
      while (lo < hi) {
        const int mid = (lo + hi) / 2;
        auto j = static_run(mid, peak_d, "");
        if (j["ttft_slo_attainment"].get<double>() >= o.slo_goal) {
          hi = mid;
          best = j;
        } else {
          lo = mid + 1;
        }
      }
      out["static_smallest"] = best;
    }
  }
  return out;
}

void write_elastic_md(const nlohmann::json& out, const std::string& path, double goal) {
  std::ofstream md(path);
  md << "| run | prefill inst | decode inst | rank-hours | + pool | TTFT SLO (s) | attainment | TTFT p99 (s) | "
        "TPOT p50 (ms) | TPOT p99 (ms) | lost | handoffs | scale ups / downs |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const auto* k : {"autoscaled", "static_peak", "static_smallest"}) {
    if (!out.contains(k))
      continue;
    const auto& j = out[k];
    char row[512];
    std::snprintf(row, sizeof row, "| %s | %d | %d | %.1f | %.1f | %.2f | %.4f | %.3f | %.2f | %.2f | %ld | %ld | %ld / %ld |\n", k,
                  j["peak_prefill_instances"].get<int>(), j["peak_decode_instances"].get<int>(),
                  j["rank_hours"].get<double>(), j["rank_hours_with_pool"].get<double>(), j["ttft_slo_s"].get<double>(),
                  j["ttft_slo_attainment"].get<double>(), j["ttft_p99_s"].get<double>(), 1e3 * j["tpot_p50_s"].get<double>(),
                  1e3 * j["tpot_p99_s"].get<double>(), static_cast<long>(j["requests_lost"].get<int64_t>()),
                  static_cast<long>(j["handoffs"].get<int64_t>()), static_cast<long>(j["scale_ups"].get<int64_t>()),
                  static_cast<long>(j["scale_downs"].get<int64_t>()));
    md << row;
  }
  const double a = out["autoscaled"]["rank_hours"].get<double>();
  for (const auto* k : {"static_peak", "static_smallest"})
    if (out.contains(k)) {
      const double s = out[k]["rank_hours"].get<double>();
      md << "\nrank-hours saved vs " << k << ": " << (s > 0.0 ? 100.0 * (1.0 - a / s) : 0.0) << " % (with the pool: "
         << (s > 0.0 ? 100.0 * (1.0 - out["autoscaled"]["rank_hours_with_pool"].get<double>() / s) : 0.0)
         << " %); SLO attainment goal " << goal << "\n";
    }
}

} // namespace

int main(int argc, char** argv) try {
  options o;
  CLI::App app{"deepinfer-sim: discrete-event simulator of the serving cluster in virtual time (DESIGN §8). "
               "--compare runs quota_buckets, round_robin, least_outstanding and the oracle on the same "
               "input and writes summary.json + summary.md with one row each.",
               "deepinfer-sim"};
  app.add_option("--trace", o.trace,
                 "Mooncake JSONL or Azure CSV trace, `agent` for the agent-session generator, or `rates` for "
                 "ServeGen rate curves (--rates, --lengths)")
    ->required();
  app.add_option("--rates", o.rates, "ServeGen client directory (*-trace.csv) or aggregate CSV, for --trace rates");
  app.add_option("--lengths", o.lengths, "trace whose (input, output) lengths --trace rates draws");
  app.add_flag("--autoscale", o.autoscale, "apply the autoscaler's decisions (provisioning, drains, handoffs)");
  app.add_flag("--static-peak", o.static_peak, "with --autoscale: also a static run at the autoscaled peak");
  app.add_flag("--static-search", o.static_search,
               "with --autoscale: also the smallest static prefill count meeting the SLO goal (decode at the peak)");
  app.add_option("--slo-goal", o.slo_goal, "TTFT SLO attainment a static cluster must meet in --static-search")
    ->capture_default_str();
  app.add_option("--config", o.config, "JSON file of flat keys named like the config fields");
  app.add_option("--out", o.out, "directory for the report and plots")->capture_default_str();
  app.add_option("--policy", o.policy, "prefill placement")
    ->check(CLI::IsMember({"quota_buckets", "round_robin", "least_outstanding"}))
    ->capture_default_str();
  app.add_flag("--oracle", o.oracle, "perfect balancing inside every step (efficiency reference)");
  app.add_flag("--compare", o.compare, "run every policy and the oracle on the same input");
  app.add_flag("--progress", o.progress, "progress line on stderr");
  app.add_option("--time-scale", o.time_scale, "divide the trace's arrival times by this")
    ->check(CLI::PositiveNumber)
    ->capture_default_str();
  app.add_option("--max-requests", o.max_requests, "read at most this many trace rows (0: all)")
    ->check(CLI::NonNegativeNumber)
    ->capture_default_str();
  app.add_option("--horizon", o.horizon, "stop at this virtual time in seconds (0: run until drained)")
    ->check(CLI::NonNegativeNumber)
    ->capture_default_str();
  if (auto rc = deepinfer::parse_command_line(app, argc, argv))
    return *rc;
  sim::sim_config cfg;
  sim::agent_workload::config acfg;
  sim::rate_workload::config rcfg;
  if (!o.config.empty()) {
    std::ifstream in(o.config);
    if (!in)
      throw std::runtime_error("cannot open config " + o.config);
    apply(nlohmann::json::parse(in), cfg, acfg, rcfg);
  }
  rcfg.rates = o.rates;
  rcfg.lengths = o.lengths;
  if (o.trace == "rates" && (o.rates.empty() || o.lengths.empty()))
    throw std::runtime_error("--trace rates needs --rates and --lengths");
  cfg.policy = parse_policy(o.policy);
  cfg.oracle = o.oracle;
  cfg.horizon_s = o.horizon;
  cfg.progress = o.progress;
  std::filesystem::create_directories(o.out);
  nlohmann::json out;
  if (o.autoscale) {
    out = elastic(o, cfg, acfg, rcfg);
    if (out.contains("static_peak"))
      write_elastic_md(out, o.out + "/elastic.md", o.slo_goal);
    std::ofstream(o.out + "/elastic.json") << out.dump(2) << "\n";
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  if (!o.compare) {
    out = run_once(o, cfg, acfg, rcfg, o.out);
  } else {
    out = nlohmann::json::array();
    for (const auto* p : {"quota_buckets", "round_robin", "least_outstanding"}) {
      auto c = cfg;
      c.policy = parse_policy(p);
      c.oracle = false;
      out.push_back(run_once(o, c, acfg, rcfg, c.policy == cfg.policy ? o.out : ""));
      std::cerr << "[deepinfer-sim] " << p << " done\n";
    }
    auto c = cfg;
    c.oracle = true;
    out.push_back(run_once(o, c, acfg, rcfg, ""));
    // Throughput at saturation is work / rank-seconds, so the oracle's busy time over ours is the
    // throughput ratio of DESIGN §9's "~80 % of a perfectly balanced run".
    const double ob = out[3]["prefill_busy_rank_s"].get<double>() + out[3]["decode_busy_rank_s"].get<double>();
    for (size_t k = 0; k < 3; ++k) {
      const double b = out[k]["prefill_busy_rank_s"].get<double>() + out[k]["decode_busy_rank_s"].get<double>();
      out[k]["efficiency_vs_oracle_run"] = b > 0.0 ? ob / b : 0.0;
    }
    std::ofstream md(o.out + "/summary.md");
    md << "| policy | hit ratio | TTFT p50 (s) | TTFT p99 (s) | decode tok/s/rank | prefill eff | decode eff | "
          "balancing eff (in-run) | eff vs oracle run | wall (s) |\n|---|---|---|---|---|---|---|---|---|---|\n";
    for (const auto& j : out) {
      char row[512];
      std::snprintf(row, sizeof row, "| %s%s | %.4f | %.3f | %.3f | %.0f | %.3f | %.3f | %.3f | %s | %.1f |\n",
                    j["policy"].get<std::string>().c_str(), j["oracle"].get<bool>() ? " (oracle)" : "",
                    j["hit_ratio"].get<double>(), j["ttft_p50_s"].get<double>(), j["ttft_p99_s"].get<double>(),
                    j["decode_tok_s_per_rank"].get<double>(), j["prefill_efficiency"].get<double>(),
                    j["decode_efficiency"].get<double>(), j["balancing_efficiency"].get<double>(),
                    j.contains("efficiency_vs_oracle_run")
                        ? std::to_string(j["efficiency_vs_oracle_run"].get<double>()).substr(0, 5).c_str()
                        : "1",
                    j["wall_s"].get<double>());
      md << row;
    }
  }
  std::ofstream(o.out + (o.compare ? "/summary.json" : "/report.json")) << out.dump(2) << "\n";
  std::cout << out.dump(2) << "\n";
  return 0;
} catch (const std::exception& e) {
  std::cerr << "deepinfer-sim: " << e.what() << "\n";
  return 2;
}
