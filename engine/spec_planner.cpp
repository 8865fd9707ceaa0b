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
  if (auto c = fitted())
    slope_ = c->per_row;
}

void spec_planner::set_curve(cost_curve c) {
  fixed_curve_ = true;
  set_ = c;
}

namespace {
int bin_of(float c, int bins) { return std::clamp(static_cast<int>(c * static_cast<float>(bins)), 0, bins - 1); }
} // namespace

void spec_planner::observe_acceptance(const draft_proposal& p, int32_t drafted, int32_t accepted) {
  constexpr double decay = 0.999; // about the last thousand verifications per bin
  for (int32_t j = 0; j < std::min(drafted, p.count); ++j) {
    const int b = bin_of(p.confidence[j], bins);
    reached_[j][b] = decay * reached_[j][b] + 1.0;
    taken_[j][b] = decay * taken_[j][b] + (j < accepted ? 1.0 : 0.0);
    if (j >= accepted)
      break; // the drafts after a rejected one were not tried
  }
}

double spec_planner::calibrated(int position, float confidence) const {
  const double c = std::clamp(static_cast<double>(confidence), 0.0, 1.0);
  if (position < 0 || position >= max_draft_positions)
    return c;
  const int b = bin_of(confidence, bins);
  constexpr double prior = 8.0; // the confidence counts as this many verifications
  return (taken_[position][b] + prior * c) / (reached_[position][b] + prior);
}

bool spec_planner::identifiable() const {
  if (sw_ <= 0.0)
    return false;
  const double mx = sx_ / sw_;
  const double var = sxx_ / sw_ - mx * mx;
  return var >= mx * mx / 16.0;
}

std::optional<spec_planner::cost_curve> spec_planner::fitted() const {
  if (sw_ <= 0.0 || !identifiable())
    return std::nullopt;
  const double mx = sx_ / sw_, my = sy_ / sw_;
  const double var = sxx_ / sw_ - mx * mx;
  const double slope = std::max((sxy_ / sw_ - mx * my) / var, 1e-12);
  return cost_curve{std::max(my - slope * mx, 0.0), slope};
}

spec_planner::cost_curve spec_planner::curve() const {
  if (fixed_curve_)
    return set_;
  if (sw_ <= 0.0)
    return {1.0, 1.0 / 16.0};
  if (auto c = fitted())
    return *c;
  const double mx = sx_ / sw_, my = sy_ / sw_;
  // Too little spread in the row counts seen lately to tell the slope: the last slope that
  // could be told (a row's cost moves little), or before any, the prior's shape, scaled to the
  // mean cost measured.
  if (slope_ > 0.0)
    return {std::max(my - slope_ * mx, 0.0), slope_};
  return {my / (1.0 + mx / 16.0), my / (16.0 + mx)};
}

std::vector<int32_t> spec_planner::plan(std::span<const draft_proposal> proposals) {
  std::vector<int32_t> out(proposals.size(), 0);
  if (mode_ == speculative_mode::off)
    return out;
  if (mode_ == speculative_mode::fixed) {
    for (std::size_t i = 0; i < proposals.size(); ++i)
      out[i] = proposals[i].count;
    return out;
  }
  ++since_probe_;
  ++steps_;
  struct candidate {
    float gain;
    uint32_t request;
    int32_t length;
  };
  std::vector<candidate> cs;
  for (std::size_t i = 0; i < proposals.size(); ++i) {
    float e = 1.0f;
    for (int32_t k = 0; k < proposals[i].count; ++k) {
      e *= static_cast<float>(calibrated(k, proposals[i].confidence[k]));
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
  if (!proposals.empty()) {
    // Exploration: one request in turn tries one draft more, so that drafts the calibration
    // undervalues get verified and can be found better (without it an underconfident bin would
    // never be tried again). One row per step: 1/64 of a step's rows at batch 64.
    const auto i = static_cast<std::size_t>(steps_ % proposals.size());
    out[i] = std::min(out[i] + 1, proposals[i].count);
  }
  if (!fixed_curve_ && since_probe_ >= probe_interval_ && !identifiable()) {
    // A probe: the row count furthest from this plan's, so that the curve sees both ends. Once
    // a slope is known, probes only refresh it: each waits twice as long as the last.
    since_probe_ = 0;
    if (slope_ > 0.0)
      probe_interval_ = std::min<uint64_t>(probe_interval_ * 2, max_probe_interval);
    const auto all = static_cast<double>(cs.size());
    if (static_cast<double>(best_m) > all / 2.0)
      std::fill(out.begin(), out.end(), 0);
    else
      for (std::size_t i = 0; i < proposals.size(); ++i)
        out[i] = proposals[i].count;
  }
  return out;
}

} // namespace deepinfer::engine
