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
  const double dranks = static_cast<double>(cfg.decode_instances * cfg.decode_dp);
  const double pranks = static_cast<double>(cfg.prefill_instances * cfg.prefill_dp);
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

void report::write_plots(sim_result& r, const std::string& dir, const std::string& tag) {
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
    svg_chart c({.title = "Instances (" + tag + "): running vs autoscaler target (advisory)", .x_label = "virtual time (s)",
                 .y_label = "instances"});
    c.add({"prefill running", s.autoscale_t, to_double(s.prefill_now)});
    c.add({"prefill target", s.autoscale_t, to_double(s.prefill_target)});
    c.add({"decode running", s.autoscale_t, to_double(s.decode_now)});
    c.add({"decode target", s.autoscale_t, to_double(s.decode_target)});
    write(dir + "/instances.svg", c.render());
  }
  {
    svg_chart c({.title = "Hit ratio over time (" + tag + ")", .x_label = "virtual time (s)", .y_label = "token hit ratio"});
    c.add({"hit ratio", s.t, s.hit_ratio});
    write(dir + "/hit_ratio.svg", c.render());
  }
}

} // namespace deepinfer::balancers::sim
