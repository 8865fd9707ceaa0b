#include "engine/spec_planner.hpp"

#include <algorithm>
#include <cmath>

namespace deepinfer::engine {

spec_planner::spec_planner(speculative_mode mode) : mode_(mode) {}

void spec_planner::observe(int64_t rows, double seconds) {
  if (rows <= 0 || !(seconds > 0.0))
    return;
  constexpr double decay = 0.98; // about the last 50 steps
  const double x = static_cast<double>(rows);
  sw_ = decay * sw_ + 1.0;
  sx_ = decay * sx_ + x;
  sy_ = decay * sy_ + seconds;
  sxx_ = decay * sxx_ + x * x;
  sxy_ = decay * sxy_ + x * seconds;
}

void spec_planner::set_curve(cost_curve c) {
  fixed_curve_ = true;
  set_ = c;
}

spec_planner::cost_curve spec_planner::curve() const {
  if (fixed_curve_)
    return set_;
  if (sw_ <= 0.0)
    return {1.0, 1.0 / 16.0};
  const double mx = sx_ / sw_, my = sy_ / sw_;
  const double var = sxx_ / sw_ - mx * mx;
  // Too little spread in the row counts seen to tell the slope (the first steps, before a probe):
  // the prior's shape, scaled to the mean cost measured.
  if (var < 1e-9 * std::max(1.0, mx * mx))
    return {my / (1.0 + mx / 16.0), my / (16.0 + mx)};
  double slope = (sxy_ / sw_ - mx * my) / var;
  slope = std::max(slope, 1e-12);
  const double fixed = std::max(my - slope * mx, 0.0);
  return {fixed, slope};
}

std::vector<int32_t> spec_planner::plan(std::span<const draft_proposal> proposals) {
  std::vector<int32_t> out(proposals.size(), 0);
  if (mode_ == speculative_mode::off)
    return out;
  ++plans_;
  if (mode_ == speculative_mode::fixed) {
    for (std::size_t i = 0; i < proposals.size(); ++i)
      out[i] = proposals[i].count;
    return out;
  }
  if (!fixed_curve_ && plans_ % probe_every == 0)
    return out;
  struct candidate {
    float gain;
    uint32_t request;
    int32_t length;
  };
  std::vector<candidate> cs;
  for (std::size_t i = 0; i < proposals.size(); ++i) {
    float e = 1.0f;
    for (int32_t k = 0; k < proposals[i].count; ++k) {
      e *= std::clamp(proposals[i].confidence[k], 0.0f, 1.0f);
      cs.push_back({e, static_cast<uint32_t>(i), k + 1});
    }
  }
  // Best gain first; a request's own prefixes come in order (their gains never grow), ties by
  // request then length so the choice is deterministic.
  std::sort(cs.begin(), cs.end(), [](const candidate& a, const candidate& b) {
    if (a.gain != b.gain)
      return a.gain > b.gain;
    if (a.request != b.request)
      return a.request < b.request;
    return a.length < b.length;
  });
  const auto c = curve();
  const double base = static_cast<double>(proposals.size());
  double tokens = base, best_rate = base / (c.fixed + c.per_row * base);
  std::size_t best_m = 0;
  for (std::size_t m = 1; m <= cs.size(); ++m) {
    tokens += cs[m - 1].gain;
    const double rate = tokens / (c.fixed + c.per_row * (base + static_cast<double>(m)));
    if (rate > best_rate) {
      best_rate = rate;
      best_m = m;
    }
  }
  for (std::size_t m = 0; m < best_m; ++m)
    out[cs[m].request] = std::max(out[cs[m].request], cs[m].length);
  return out;
}

} // namespace deepinfer::engine
