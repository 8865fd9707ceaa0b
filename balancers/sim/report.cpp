#include "balancers/sim/report.hpp"

#include "balancers/sim/stats.hpp"
#include "balancers/sim/svg_chart.hpp"

#include <algorithm>
#include <fstream>
#include <numeric>

namespace deepinfer::balancers::sim {

std::string report::policy_name(prefill_policy p) {
  switch (p) {
  case prefill_policy::quota_buckets: return "quota_buckets";
  case prefill_policy::round_robin: return "round_robin";
  case prefill_policy::least_outstanding: return "least_outstanding";
  }
  return "?";
}

nlohmann::json report::summarize(sim_result& r, const sim_config& cfg, double wall_s) {
  nlohmann::json j;
  const double span = std::max(1e-9, r.last_event - r.first_arrival);
  // Ranks on average over the run: the configured cluster when static, the fleet's mean when the
  // autoscaler is applied.
  const bool applied = cfg.autoscale == autoscale_mode::applied;
  const double dranks = applied ? r.decode_rank_s / span : static_cast<double>(cfg.decode_instances * cfg.decode_dp);
  const double pranks = applied ? r.prefill_rank_s / span : static_cast<double>(cfg.prefill_instances * cfg.prefill_dp);
  const auto ratio = [](double a, double b) { return b > 0.0 ? a / b : 0.0; };
  j["workload"] = r.workload;
  j["policy"] = policy_name(cfg.policy);
  j["oracle"] = cfg.oracle;
  j["prefill_ranks"] = pranks;
  j["decode_ranks"] = dranks;
  j["requests"] = r.requests;
  j["completed"] = r.completed;
  j["mean_input_tokens"] = ratio(static_cast<double>(r.input_tokens), static_cast<double>(r.requests));
  j["hit_ratio"] = ratio(static_cast<double>(r.hit_tokens), static_cast<double>(r.input_tokens));
  j["ideal_hit_ratio"] = ratio(static_cast<double>(r.ideal_hit_tokens), static_cast<double>(r.input_tokens));
  j["exact_hits"] = r.exact_hits;
  j["replay_hits"] = r.replay_hits;
  j["ttft_mean_s"] = r.ttft.empty() ? 0.0 : std::accumulate(r.ttft.begin(), r.ttft.end(), 0.0) / static_cast<double>(r.ttft.size());
  j["ttft_p50_s"] = percentile(r.ttft, 50.0);
  j["ttft_p90_s"] = percentile(r.ttft, 90.0);
  j["ttft_p99_s"] = percentile(r.ttft, 99.0);
  j["decode_tokens"] = r.decode_tokens;
  j["decode_tok_s_per_rank"] = static_cast<double>(r.decode_tokens) / span / dranks;
  j["decode_tok_s_per_rank_busy"] = ratio(static_cast<double>(r.decode_tokens), r.decode_active_s * dranks);
  j["prefill_utilisation"] = r.prefill_busy / (span * pranks);
  j["prefill_efficiency"] = ratio(r.prefill_ideal, r.prefill_busy);
  j["decode_efficiency"] = ratio(r.decode_ideal, r.decode_busy);
  j["balancing_efficiency"] = ratio(r.prefill_ideal + r.decode_ideal, r.prefill_busy + r.decode_busy);
  j["prefill_busy_rank_s"] = r.prefill_busy;
  j["decode_busy_rank_s"] = r.decode_busy;
  // Elasticity (DESIGN §6.5): rank-hours of instances (provisioning + running + draining) from
  // t = 0 to the last event, the pool's apart, SLO attainment, and what scale-down cost.
  const auto attained = [](const std::vector<float>& v, double slo) {
    const auto n = std::count_if(v.begin(), v.end(), [&](float x) { return x <= slo; });
    return v.empty() ? 1.0 : static_cast<double>(n) / static_cast<double>(v.size());
  };
  j["autoscale"] = applied ? "applied" : "advisory";
  j["rank_hours"] = (r.prefill_rank_s + r.decode_rank_s) / 3600.0;
  j["prefill_rank_hours"] = r.prefill_rank_s / 3600.0;
  j["decode_rank_hours"] = r.decode_rank_s / 3600.0;
  j["pool_rank_hours"] = r.pool_rank_s / 3600.0;
  j["rank_hours_with_pool"] = (r.prefill_rank_s + r.decode_rank_s + r.pool_rank_s) / 3600.0;
  j["peak_prefill_instances"] = r.peak_prefill;
  j["peak_decode_instances"] = r.peak_decode;
  j["ttft_slo_s"] = cfg.ttft_slo_s;
  j["ttft_slo_attainment"] = attained(r.ttft, cfg.ttft_slo_s);
  j["tpot_slo_s"] = cfg.tpot_slo_s;
  j["tpot_slo_attainment"] = attained(r.tpot, cfg.tpot_slo_s);
  j["tpot_mean_s"] = r.tpot.empty() ? 0.0 : std::accumulate(r.tpot.begin(), r.tpot.end(), 0.0) / static_cast<double>(r.tpot.size());
  j["tpot_p50_s"] = percentile(r.tpot, 50.0);
  j["tpot_p99_s"] = percentile(r.tpot, 99.0);
  j["requests_lost"] = r.requests - r.completed;
  j["handoffs"] = r.handoffs;
  j["handoff_pause_mean_s"] = r.handoffs > 0 ? r.handoff_s / static_cast<double>(r.handoffs) : 0.0;
  j["scale_ups"] = r.scale_ups;
  j["scale_downs"] = r.scale_downs;
  j["starts_from_pool"] = r.pool_starts;
  j["cold_starts"] = r.cold_starts;
  j["virtual_s"] = span;
  j["wall_s"] = wall_s;
  return j;
}

namespace {

void write(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
}

std::vector<double> column(const std::vector<std::vector<float>>& rows, int which) {
  // which: 0 min, 1 mean, 2 max across ranks
  std::vector<double> out;
  for (const auto& row : rows) {
    if (row.empty()) {
      out.push_back(0.0);
      continue;
    }
    if (which == 0)
      out.push_back(*std::min_element(row.begin(), row.end()));
    else if (which == 2)
      out.push_back(*std::max_element(row.begin(), row.end()));
    else
      out.push_back(std::accumulate(row.begin(), row.end(), 0.0) / static_cast<double>(row.size()));
  }
  return out;
}

std::vector<double> to_double(const std::vector<int>& v) { return {v.begin(), v.end()}; }

} // namespace

void report::write_plots(sim_result& r, const std::string& dir, const std::string& tag, autoscale_mode mode) {
  const auto& s = r.series;
  {
    svg_chart c({.title = "TTFT CDF (" + tag + ")", .x_label = "TTFT (s), up to p99.5", .y_label = "fraction"});
    std::vector<float> v = r.ttft;
    const double cut = percentile(v, 99.5);
    svg_chart::series cdf{"TTFT", {}, {}};
    for (size_t i = 0; i < v.size() && v[i] <= cut; i += std::max<size_t>(1, v.size() / 400)) {
      cdf.x.push_back(v[i]);
      cdf.y.push_back(static_cast<double>(i + 1) / static_cast<double>(v.size()));
    }
    c.add(std::move(cdf));
    write(dir + "/ttft_cdf.svg", c.render());
  }
  {
    svg_chart c({.title = "Per-rank load (" + tag + "): decode KV tokens / mean", .x_label = "virtual time (s)",
                 .y_label = "KV tokens (millions)"});
    auto scale = [](std::vector<double> v) {
      for (auto& x : v)
        x /= 1e6;
      return v;
    };
    c.add({"decode rank max", s.t, scale(column(s.decode_rank_kv, 2))});
    c.add({"decode rank mean", s.t, scale(column(s.decode_rank_kv, 1))});
    c.add({"decode rank min", s.t, scale(column(s.decode_rank_kv, 0))});
    write(dir + "/rank_load.svg", c.render());
    svg_chart p({.title = "Per-rank load (" + tag + "): prefill outstanding quota", .x_label = "virtual time (s)",
                 .y_label = "quota (s)"});
    p.add({"prefill rank max", s.t, column(s.prefill_rank_load, 2)});
    p.add({"prefill rank mean", s.t, column(s.prefill_rank_load, 1)});
    p.add({"prefill rank min", s.t, column(s.prefill_rank_load, 0)});
    write(dir + "/prefill_load.svg", p.render());
  }
  {
    const bool applied = mode == autoscale_mode::applied;
    svg_chart c({.title = "Instances (" + tag + "): running vs autoscaler target" + (applied ? "" : " (advisory)"),
                 .x_label = "virtual time (s)", .y_label = "instances"});
    c.add({"prefill running", s.autoscale_t, to_double(s.prefill_now)});
    c.add({"prefill target", s.autoscale_t, to_double(s.prefill_target)});
    c.add({"decode running", s.autoscale_t, to_double(s.decode_now)});
    c.add({"decode target", s.autoscale_t, to_double(s.decode_target)});
    if (applied) {
      std::vector<double> starting, draining;
      for (size_t i = 0; i < s.autoscale_t.size(); ++i) {
        starting.push_back(s.prefill_starting[i] + s.decode_starting[i]);
        draining.push_back(s.prefill_draining[i] + s.decode_draining[i]);
      }
      c.add({"provisioning (both)", s.autoscale_t, starting});
      c.add({"draining (both)", s.autoscale_t, draining});
    }
    write(dir + "/instances.svg", c.render());
    if (applied) {
      std::string csv = "t_s,prefill_running,prefill_target,prefill_provisioning,prefill_draining,"
                        "decode_running,decode_target,decode_provisioning,decode_draining\n";
      for (size_t i = 0; i < s.autoscale_t.size(); ++i)
        csv += std::to_string(s.autoscale_t[i]) + "," + std::to_string(s.prefill_now[i]) + "," +
               std::to_string(s.prefill_target[i]) + "," + std::to_string(s.prefill_starting[i]) + "," +
               std::to_string(s.prefill_draining[i]) + "," + std::to_string(s.decode_now[i]) + "," +
               std::to_string(s.decode_target[i]) + "," + std::to_string(s.decode_starting[i]) + "," +
               std::to_string(s.decode_draining[i]) + "\n";
      write(dir + "/instances.csv", csv);
    }
  }
  {
    svg_chart c({.title = "Hit ratio over time (" + tag + ")", .x_label = "virtual time (s)", .y_label = "token hit ratio"});
    c.add({"hit ratio", s.t, s.hit_ratio});
    write(dir + "/hit_ratio.svg", c.render());
  }
}

} // namespace deepinfer::balancers::sim
