#include "engine/spec_planner.hpp"

#include <algorithm>
#include <cmath>

namespace deepinfer::engine {

spec_planner::spec_planner(speculative_mode mode) : mode_(mode) {}

void spec_planner::observe(int64_t rows, double seconds, int64_t seqs) {
  if (rows <= 0 || !(seconds > 0.0))
    return;
  if (profile_ && seqs > 0) {
    const double p = profile_->at(static_cast<double>(seqs), static_cast<double>(rows));
    constexpr double d = 0.95; // about the last 20 steps
    cw_ = d * cw_ + 1.0;
    cp_ = d * cp_ + p;
    cy_ = d * cy_ + seconds;
    cpp_ = d * cpp_ + p * p;
    cpy_ = d * cpy_ + p * seconds;
  }
  constexpr double decay = 0.98; // about the last 50 steps
  const double x = static_cast<double>(rows);
  sw_ = decay * sw_ + 1.0;
  sx_ = decay * sx_ + x;
  sy_ = decay * sy_ + seconds;
  sxx_ = decay * sxx_ + x * x;
  sxy_ = decay * sxy_ + x * seconds;
  if (auto c = fitted())
    slope_ = c->per_row;
  const auto b = static_cast<std::size_t>(std::floor(std::log(x) / std::log(row_bin_ratio)));
  if (b >= row_bins_.size())
    row_bins_.resize(b + 1);
  auto& rb = row_bins_[b];
  constexpr double bin_decay = 0.8; // a bin follows its last few steps
  rb.weight = bin_decay * rb.weight + 1.0;
  rb.rows = bin_decay * rb.rows + x;
  rb.seconds = bin_decay * rb.seconds + seconds;
}

spec_planner::step_costs spec_planner::costs() const {
  std::vector<std::pair<double, double>> points;
  if (!fixed_curve_)
    for (const auto& rb : row_bins_)
      if (rb.weight >= 0.5) // measured lately enough
        points.emplace_back(rb.rows / rb.weight, rb.seconds / rb.weight);
  return costs_of(std::move(points), curve());
}

namespace {
// y at x on the polyline through `pts` (ascending in x), extended flat before the first point
// and along the ray from the origin through the last after it.
double interpolate(const std::vector<std::pair<double, double>>& pts, double x) {
  if (x <= pts.front().first)
    return pts.front().second;
  if (x >= pts.back().first)
    return pts.back().second * x / pts.back().first;
  std::size_t i = 1;
  while (pts[i].first < x)
    ++i;
  const auto [x0, y0] = pts[i - 1];
  const auto [x1, y1] = pts[i];
  return x1 > x0 ? y0 + (y1 - y0) * (x - x0) / (x1 - x0) : y0;
}
} // namespace

double spec_planner::verify_profile::at(double seqs, double rows) const {
  const double base = interpolate(fewest_seqs, rows);
  return fewest.at(rows) + per_seq * std::max(std::min(seqs, rows) - base, 0.0);
}

void spec_planner::set_verify_costs(std::vector<verify_cost_point> points) {
  std::erase_if(points, [](const auto& p) { return p.seqs < 1 || p.rows < p.seqs || !(p.seconds > 0.0); });
  // Steps with the head paused say what its pass costs a sequence: against the same steps with it.
  std::vector<double> head;
  for (const auto& p : points)
    if (!p.proposing)
      for (const auto& q : points)
        if (q.proposing && q.seqs == p.seqs && q.rows == p.rows)
          head.push_back((q.seconds - p.seconds) / static_cast<double>(p.seqs));
  std::erase_if(points, [](const auto& p) { return !p.proposing; });
  if (points.empty())
    return;
  std::sort(points.begin(), points.end(), [](const auto& a, const auto& b) {
    return a.rows != b.rows ? a.rows < b.rows : a.seqs < b.seqs;
  });
  // Per row count, the step of fewest sequences; the others say what a sequence costs more.
  std::vector<std::pair<double, double>> fewest, seqs;
  std::vector<double> per_seq;
  for (std::size_t i = 0; i < points.size(); ++i) {
    const auto& p = points[i];
    if (i == 0 || p.rows != points[i - 1].rows) {
      fewest.emplace_back(static_cast<double>(p.rows), p.seconds);
      seqs.emplace_back(static_cast<double>(p.rows), static_cast<double>(p.seqs));
      continue;
    }
    const double more = static_cast<double>(p.seqs) - seqs.back().second;
    if (more > 0.0)
      per_seq.push_back((p.seconds - fewest.back().second) / more);
  }
  // A step of more rows never costs less: a dip is the noise of one measurement, and a plan
  // chosen for it would be paid at the true cost.
  for (std::size_t i = 1; i < fewest.size(); ++i)
    fewest[i].second = std::max(fewest[i].second, fewest[i - 1].second);
  cost_curve line{0.0, fewest.back().second / fewest.back().first};
  if (fewest.size() >= 2) {
    // Past the last row count measured: the least-squares slope of the upper half of the curve,
    // where more rows no longer share the weights' reads better (one pair's slope is noise).
    const double half = fewest.back().first / 2.0;
    double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (const auto& [x, y] : fewest)
      if (x >= half) {
        n += 1;
        sx += x;
        sy += y;
        sxx += x * x;
        sxy += x * y;
      }
    const double var = sxx - sx * sx / n;
    if (n >= 2 && var > 0.0)
      line.per_row = std::max((sxy - sx * sy / n) / var, 0.0);
  }
  verify_profile vp;
  vp.fewest = costs_of(std::move(fewest), line);
  vp.fewest.high_slope = line.per_row;
  vp.fewest_seqs = std::move(seqs);
  if (!per_seq.empty()) {
    std::nth_element(per_seq.begin(), per_seq.begin() + static_cast<std::ptrdiff_t>(per_seq.size() / 2), per_seq.end());
    vp.per_seq = std::max(per_seq[per_seq.size() / 2], 0.0);
  }
  if (!head.empty()) {
    std::nth_element(head.begin(), head.begin() + static_cast<std::ptrdiff_t>(head.size() / 2), head.end());
    vp.head_per_seq = std::max(head[head.size() / 2], 0.0);
  }
  profile_ = std::move(vp);
  cw_ = cp_ = cy_ = cpp_ = cpy_ = 0.0;
  head_worth_ = 0.0;
}

std::optional<double> spec_planner::priced(double seqs, double rows) const {
  if (!profile_)
    return std::nullopt;
  const double p = profile_->at(seqs, rows);
  if (cw_ <= 0.0)
    return p;
  // measured = a + b x profiled by least squares, with a prior worth four steps whose profiled
  // cost is twice the mean away pulling b towards 1: steps that vary little in cost leave b at 1
  // and shift the profile by what they measured (a ratio would scale every draft row by the
  // sequences' own extra cost, which drafts do not share).
  const double mp = cp_ / cw_, my = cy_ / cw_;
  const double spp = cpp_ - cw_ * mp * mp, spy = cpy_ - cw_ * mp * my;
  const double prior = 4.0 * mp * mp;
  const double b = std::clamp((spy + prior) / (spp + prior), 0.5, 2.0);
  const double a = my - b * mp;
  return std::max(a + b * p, 0.1 * p);
}

spec_planner::step_costs spec_planner::costs_of(std::vector<std::pair<double, double>> points, cost_curve line) {
  step_costs sc;
  sc.line = line;
  sc.points = std::move(points);
  // Past the measured ends, the slope between the last two measured there (a quarter to all of
  // the fitted one).
  auto slope = [&](std::size_t a, std::size_t b) {
    const auto& pts = sc.points;
    if (pts.size() < 2 || pts[b].first <= pts[a].first)
      return sc.line.per_row;
    const double s = (pts[b].second - pts[a].second) / (pts[b].first - pts[a].first);
    return std::clamp(s, 0.25 * sc.line.per_row, sc.line.per_row);
  };
  if (sc.points.size() >= 2) {
    sc.low_slope = slope(0, 1);
    sc.high_slope = slope(sc.points.size() - 2, sc.points.size() - 1);
  } else {
    sc.low_slope = sc.high_slope = sc.line.per_row;
  }
  return sc;
}

double spec_planner::step_costs::at(double rows) const {
  // The measured steps nearest below and above `rows`, joined by a line. A step's cost is not
  // linear in its rows: one of the tiny model's verify steps costs 9.6 ms at 8 rows, 14.9 at 16
  // and 29.1 at 48 (the products use the weights better the more rows share them), and one line
  // through all would price the rows wrong at both ends.
  if (points.empty())
    return line.fixed + line.per_row * rows;
  if (rows <= points.front().first) {
    const auto [x1, y1] = points.front();
    return std::max(y1 - low_slope * (x1 - rows), 1e-3 * y1);
  }
  if (rows >= points.back().first) {
    const auto [x0, y0] = points.back();
    return y0 + high_slope * (rows - x0);
  }
  return interpolate(points, rows);
}

void spec_planner::set_curve(cost_curve c) {
  fixed_curve_ = true;
  set_ = c;
}

namespace {
int bin_of(float c, int bins) { return std::clamp(static_cast<int>(c * static_cast<float>(bins)), 0, bins - 1); }
} // namespace

void spec_planner::tally::add(int bin, bool accepted) {
  constexpr double decay = 0.999; // about the last thousand comparisons per bin
  reached[bin] = decay * reached[bin] + 1.0;
  taken[bin] = decay * taken[bin] + (accepted ? 1.0 : 0.0);
}

double spec_planner::tally::shrunk(int bin, double prior) const {
  constexpr double weight = 8.0;
  double all_reached = 0.0, all_taken = 0.0;
  for (int b = 0; b < bins; ++b) {
    all_reached += reached[b];
    all_taken += taken[b];
  }
  const double all = (all_taken + weight * prior) / (all_reached + weight);
  return (taken[bin] + weight * all) / (reached[bin] + weight);
}

void spec_planner::record(history last, int position, float confidence, bool accepted) {
  const int b = bin_of(confidence, bins);
  pooled_[position].add(b, accepted);
  after_[static_cast<int>(last)][position].add(b, accepted);
}

void spec_planner::observe_acceptance(const draft_proposal& p, int32_t drafted, int32_t accepted) {
  for (int32_t j = 0; j < std::min(drafted, p.count); ++j) {
    record(history::unknown, j, p.confidence[j], j < accepted);
    if (j >= accepted)
      break; // the drafts after a rejected one were not tried
  }
}

void spec_planner::observe_emitted(uint64_t seq, const draft_proposal& proposal, std::span<const int32_t> emitted,
                                   bool finished) {
  if (mode_ != speculative_mode::variable)
    return;
  auto& t = tracks_[seq];
  t.step = steps_;
  if (proposal.count > 0)
    t.drafts.push_back({proposal, 0, t.last});
  for (const int32_t token : emitted)
    for (auto& p : t.drafts) {
      if (p.next >= p.proposal.count)
        continue; // ended: all compared, or one rejected
      const bool accepted = token == p.proposal.tokens[p.next];
      record(p.last, p.next, p.proposal.confidence[p.next], accepted);
      if (accepted && p.next + 1 == p.proposal.count)
        t.last = history::all_accepted;
      else if (!accepted)
        t.last = p.next == 0 ? history::first_rejected : history::partly_accepted;
      p.next = accepted ? p.next + 1 : p.proposal.count;
    }
  std::erase_if(t.drafts, [](const pending& p) { return p.next >= p.proposal.count; });
  if (finished)
    tracks_.erase(seq);
}

double spec_planner::calibrated(int position, float confidence) const {
  const double c = std::clamp(static_cast<double>(confidence), 0.0, 1.0);
  if (position < 0 || position >= max_draft_positions)
    return c;
  // Shrunk twice: the tenth's own verifications towards the position's, and those towards the
  // confidence itself, each prior counting as 8 verifications. A tenth the planner has rarely
  // verified borrows from its position's acceptance: the head may rank drafts well and still be
  // off in scale (on the tiny model, drafts 2-5 it rated 0.1-0.3 were accepted 9 times in 10).
  return pooled_[position].shrunk(bin_of(confidence, bins), c);
}

double spec_planner::calibrated(int position, float confidence, history last) const {
  const double overall = calibrated(position, confidence);
  if (position < 0 || position >= max_draft_positions)
    return overall;
  return after_[static_cast<int>(last)][position].shrunk(bin_of(confidence, bins), overall);
}

bool spec_planner::wants_proposals() const {
  if (mode_ != speculative_mode::variable)
    return mode_ != speculative_mode::off;
  if (profile_ && profile_->head_per_seq > 0.0 && !fixed_curve_) {
    if (head_worth_ >= 0.0)
      return true;
  } else if (offered_ <= 0.0 || planned_ >= 0.02 * offered_) {
    return true;
  }
  // The next plan is number steps_ + 1; its proposals come from this step.
  return (steps_ + 1) % look_again_every == 0;
}

bool spec_planner::identifiable() const {
  if (sw_ <= 0.0)
    return false;
  const double mx = sx_ / sw_;
  const double var = sxx_ / sw_ - mx * mx;
  return var >= mx * mx / 16.0;
}

std::optional<spec_planner::cost_curve> spec_planner::fitted() const {
  if (!identifiable())
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

std::vector<int32_t> spec_planner::plan(std::span<const draft_proposal> proposals, std::span<const uint64_t> sequences) {
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
  // Sequences the last step did not include (moved, cancelled, out of KV) are no longer tracked.
  std::erase_if(tracks_, [&](const auto& e) { return e.second.step + 1 < steps_; });
  struct candidate {
    float gain;
    uint32_t request;
    int32_t length;
  };
  std::vector<candidate> cs;
  for (std::size_t i = 0; i < proposals.size(); ++i) {
    auto last = history::unknown;
    if (i < sequences.size())
      if (auto t = tracks_.find(sequences[i]); t != tracks_.end())
        last = t->second.last;
    float e = 1.0f;
    for (int32_t k = 0; k < proposals[i].count; ++k) {
      e *= static_cast<float>(calibrated(k, proposals[i].confidence[k], last));
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
  // On the profiled curve, or on the rank's own steps gathered once per plan (the loop prices up
  // to 5 rows per request).
  const bool profiled = profile_ && !fixed_curve_;
  const auto sc = profiled ? step_costs{} : costs();
  const double base = static_cast<double>(proposals.size());
  auto cost = [&](double rows) { return profiled ? *priced(base, rows) : sc.at(rows); };
  double tokens = base, best_rate = base / cost(base);
  std::size_t best_m = 0;
  for (std::size_t m = 1; m <= cs.size(); ++m) {
    tokens += cs[m - 1].gain;
    const double rate = tokens / cost(base + static_cast<double>(m));
    if (rate > best_rate) {
      best_rate = rate;
      best_m = m;
    }
  }
  for (std::size_t m = 0; m < best_m; ++m)
    out[cs[m].request] = std::max(out[cs[m].request], cs[m].length);
  if (!cs.empty()) { // a step without proposals (paused) says nothing about their worth
    constexpr double decay = 0.9;
    offered_ = decay * offered_ + static_cast<double>(cs.size());
    planned_ = decay * planned_ + static_cast<double>(best_m);
    if (profiled) {
      // Against steps without the head: the plan's step would cost the head's pass less.
      const double bare = cost(base) - profile_->head_per_seq * base;
      const double x = bare > 0.0 ? best_rate / (base / bare) - 1.0 : 1.0;
      // The last plan decides: its expectation is already a mean over the batch's requests, and
      // a batch that shrinks (requests ending) turns drafts worth it within a step or two.
      head_worth_ = x;
    }
  }
  ++since_far_probe_;
  if (!fixed_curve_ && !profile_ && best_m > 0 && since_far_probe_ >= far_probe_interval_ &&
      (sc.points.empty() ? 0.0 : sc.points.back().first) < 0.8 * (base + static_cast<double>(cs.size()))) {
    // A far probe: every draft, because no step of nearly that many rows was measured lately and
    // the rows past the measured ones are priced from the last two measurements' slope, which
    // overprices them (the rows get cheaper as more of them share the weights: at batch 8 the
    // planner verified 2-3 drafts where all 5 paid). Only when this plan takes drafts at all, and
    // each time twice as long after the last.
    since_far_probe_ = 0;
    far_probe_interval_ = std::min<uint64_t>(far_probe_interval_ * 2, max_far_probe_interval);
    for (std::size_t i = 0; i < proposals.size(); ++i)
      out[i] = proposals[i].count;
    return out;
  }
  if (!fixed_curve_ && !profile_ && since_probe_ >= probe_interval_ && !identifiable()) {
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
