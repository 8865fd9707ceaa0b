#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include "engine/model/draft_head.hpp"
#include "engine/speculative_mode.hpp"
#include "engine/verify_cost.hpp"

namespace deepinfer::engine {

/// Chooses how many drafts each request of a decode step verifies (DESIGN.md §5.3). Fixed: all
/// of them. Variable: every (request, prefix length k) has the expected gain e = c_1 * ... * c_k
/// (the chance that drafts 1..k are all accepted; c_j is the head's confidence recalibrated by
/// what this rank's verifications accepted, per how the sequence's last proposal fared,
/// `calibrated`); candidates sorted
/// by e are taken best first, and the step keeps the count m that maximises the expected tokens
/// per second, (requests + sum of the first m gains) / cost(requests, requests + m rows): on the
/// verify cost curve profiled with the model and corrected by the rank's own steps
/// (`set_verify_costs`, `priced`), or without one, on the rank's own steps alone (`observe`: the
/// steps measured nearest in rows, and past those the slope of the last two, `step_costs`).
/// Deterministic given the measurements and the step count.
class spec_planner {
public:
  /// The verify cost curve cost(rows) = fixed + per_row * rows (seconds).
  struct cost_curve {
    double fixed = 0.0;
    double per_row = 0.0;
  };

  explicit spec_planner(speculative_mode mode);

  /// Drafts per request, in the order of `proposals` (0 for a request without drafts).
  /// Without a profiled curve (`set_verify_costs`), the curve is fitted from the rank's own steps, and steps of about one row count only would
  /// never show what a row costs against the step's fixed part: while the steps seen lately
  /// vary too little in rows (`identifiable`), variable mode makes a step a probe, one with no
  /// drafts or with all of them, whichever is further from what it would have verified: after
  /// `probe_every` steps until a slope is known, then after twice as long as the last time, up to
  /// `max_probe_interval`. A step that takes drafts while no step of nearly all of them was
  /// measured lately verifies all of them (a far probe): after `first_far_probe` steps, then
  /// twice as long each time, up to `max_far_probe_interval`.
  /// `sequences` (one per proposal; empty: none known) name the requests' sequences, whose last
  /// proposals' outcomes (`observe_emitted`) pick the calibration each is priced on.
  std::vector<int32_t> plan(std::span<const draft_proposal> proposals, std::span<const uint64_t> sequences = {});
  static constexpr uint64_t probe_every = 8;
  static constexpr uint64_t max_probe_interval = 256;
  static constexpr uint64_t look_again_every = 8;
  static constexpr uint64_t first_far_probe = 16;
  static constexpr uint64_t max_far_probe_interval = 1024;

  /// False when the next step's drafts are not worth the draft head's cost: in variable mode, on
  /// a profiled curve that measured the head (`set_verify_costs`), while the last plan expected
  /// fewer tokens per second than a step without drafts and without the head would bring;
  /// without one, while the plans lately verified under 2 % of the drafts offered; except every
  /// `look_again_every`-th step (its proposals are compared with what the sequences emit, so a
  /// workload whose drafts turn good is noticed).
  bool wants_proposals() const;

  /// True when the steps observed lately vary enough in rows to fit the curve's slope: a
  /// relative spread (standard deviation / mean) of at least 1/4.
  bool identifiable() const;

  /// Adds one measured verify step (rows of the forward, seconds it took) to the curve; with
  /// its sequences (`seqs` > 0), to the correction of the profiled curve too.
  void observe(int64_t rows, double seconds, int64_t seqs = 0);
  /// Adds what one request's verification did: of the drafts of `p` it verified (`drafted`),
  /// the first `accepted` were accepted.
  void observe_acceptance(const draft_proposal& p, int32_t drafted, int32_t accepted);
  /// Adds what sequence `seq` emitted in a step planned with `proposal` (count 0: none), and
  /// compares every proposal of the sequence with the tokens it emits after it, whether its
  /// drafts were verified or not: draft j of a proposal would have been accepted exactly when
  /// the token the sequence emits there is that draft, drafts 1..j-1 having been (verification
  /// draws each token as plain decoding does, same logits, same random draw, at any
  /// temperature). So every proposal calibrates all of its positions, the drafts a plan left out
  /// too: without that, drafts the planner undervalues would never be tried again. A finished
  /// sequence's comparisons end; so do those of a sequence no step included since the last plan.
  void observe_emitted(uint64_t seq, const draft_proposal& proposal, std::span<const int32_t> emitted,
                       bool finished);
  /// How a sequence's most recent proposal to end fared (all its drafts compared, or one
  /// rejected): a sequence's acceptance runs in streaks (a target that settles into text the head
  /// knows accepts drafts step after step, then leaves it), so this tells its next drafts' chance
  /// far better than the head's confidence does. On the tiny model with the distilled head, at
  /// batch 64 over 256 tokens, the first draft was accepted 96 % of the time after a proposal
  /// accepted whole and 44 % after one whose first draft was rejected; across the confidence's
  /// tenths it moved only between 72 and 83 %.
  enum class history : uint8_t { unknown, first_rejected, partly_accepted, all_accepted };
  static constexpr int histories = 4;

  /// The chance the planner expects that draft `position` with confidence `confidence` is
  /// accepted (given the ones before), over every sequence: the acceptance seen lately at that
  /// position and confidence (tenths), shrunk towards the position's, shrunk towards the
  /// confidence; each outweighs its prior after about 8 comparisons.
  /// The head's confidence is fitted on short greedy rollouts; a workload's requests (longer,
  /// sampled, other text) accept more or less than it says.
  double calibrated(int position, float confidence) const;
  /// The same for a sequence whose last proposal fared as `last`: the acceptance seen lately
  /// after such proposals at that position and tenth, shrunk towards theirs at that position,
  /// shrunk towards the chance over every sequence above.
  double calibrated(int position, float confidence, history last) const;
  /// The curve as fitted now; when the steps seen lately vary too little in rows, the last slope
  /// fitted with the fixed part that fits the mean; before any, a prior with rows costing the
  /// same as the step's fixed part over 16 rows.
  cost_curve curve() const;
  /// Sets the curve (tests; a curve profiled elsewhere).
  void set_curve(cost_curve c);
  /// Prices steps on the verify cost curve profiled with the model (`cost_profile::
  /// measure_verify`) instead of the steps this rank happened to run: those cover the row counts
  /// the rank's plans chose, and a plan that never chose many drafts never learns that they pay.
  /// The profile prices a step of s sequences and r rows as its steps of r rows with fewest
  /// sequences, plus what a sequence costs more than a draft row (the median over its steps of
  /// one row per sequence) for each sequence more. The rank's own steps correct it (their
  /// contexts, the machine's load): measured = a + b x profiled, fitted over about the last 20
  /// steps with b drawn towards 1 (while the steps vary little, the profile is only shifted). The
  /// planner then neither probes nor verifies every draft to measure far rows. Points of no
  /// measured step are ignored; none leaves the planner as it was.
  void set_verify_costs(std::vector<verify_cost_point> points);
  /// Seconds the planner expects a step of `seqs` sequences and `rows` rows to take now (on the
  /// profiled curve; nullopt without one).
  std::optional<double> priced(double seqs, double rows) const;

  speculative_mode mode() const { return mode_; }

private:
  std::optional<cost_curve> fitted() const;
  /// What a step costs, as `plan` prices it: the set curve, the profiled verify curve scaled, or
  /// the steps measured lately by row count (ascending), the fitted line before there are any.
  struct step_costs {
    cost_curve line;
    std::vector<std::pair<double, double>> points; // (rows, seconds)
    double low_slope = 0.0, high_slope = 0.0;      // below and past the measured rows
    /// Seconds a step of `rows` is expected to take.
    double at(double rows) const;
  };
  step_costs costs() const;
  /// The step costs of a curve of measured (rows, seconds), ascending in rows.
  static step_costs costs_of(std::vector<std::pair<double, double>> points, cost_curve line);

  /// The profiled verify cost curve (`set_verify_costs`).
  struct verify_profile {
    step_costs fewest;                                  // (rows, seconds), fewest sequences
    std::vector<std::pair<double, double>> fewest_seqs; // (rows, sequences) of those steps
    double per_seq = 0.0;                               // a sequence over a draft row (seconds)
    double head_per_seq = 0.0;                          // the draft head's pass, per sequence
    double at(double seqs, double rows) const;
  };
  std::optional<verify_profile> profile_;
  // The correction measured = a + b x profiled: exponentially weighted sums over steps.
  double cw_ = 0, cp_ = 0, cy_ = 0, cpp_ = 0, cpy_ = 0;

  speculative_mode mode_;
  // Exponentially weighted least squares of seconds on rows (recent steps count more: the curve
  // moves with the machine's load).
  double sw_ = 0, sx_ = 0, sy_ = 0, sxx_ = 0, sxy_ = 0;
  bool fixed_curve_ = false;
  uint64_t since_probe_ = 0;
  uint64_t probe_interval_ = probe_every;
  uint64_t since_far_probe_ = 0, far_probe_interval_ = first_far_probe;
  double slope_ = 0.0; // the last slope fitted from steps of enough spread; 0: none yet
  // Measured steps by row count, in bins growing by a quarter: weighted sums of rows and seconds.
  struct row_bin {
    double weight = 0, rows = 0, seconds = 0;
  };
  static constexpr double row_bin_ratio = 1.25;
  std::vector<row_bin> row_bins_;
  uint64_t steps_ = 0;
  double offered_ = 0.0, planned_ = 0.0; // drafts offered and planned, exponentially weighted
  // How much the last plan beat a step without drafts and without the head (relative tokens/s;
  // negative: pause the head). Profiled curves with the head measured only.
  double head_worth_ = 0.0;
  // Per (position, confidence tenth) over every sequence, and the same per outcome of the
  // sequence's last proposal: exponentially weighted comparisons and acceptances. (The pooled
  // sums are their own: each outcome's decays only with its own comparisons.)
  static constexpr int bins = 10;
  struct tally {
    double reached[bins] = {}, taken[bins] = {};
    void add(int bin, bool accepted);
    /// Bin `bin`'s acceptance shrunk towards all bins', and that towards `prior` (each prior
    /// counting as 8 comparisons).
    double shrunk(int bin, double prior) const;
  };
  tally pooled_[max_draft_positions];
  tally after_[histories][max_draft_positions];
  void record(history last, int position, float confidence, bool accepted);
  // Proposals still being compared with what their sequence emits (`observe_emitted`).
  struct pending {
    draft_proposal proposal;
    int32_t next = 0;              // the draft the next emitted token is compared with
    history last = history::unknown; // how the sequence's last proposal had fared when it came
  };
  struct sequence_track {
    uint64_t step = 0; // the plan count when the sequence last emitted
    std::vector<pending> drafts;
    history last = history::unknown; // its most recent proposal to end
  };
  std::unordered_map<uint64_t, sequence_track> tracks_;
  cost_curve set_;
};

} // namespace deepinfer::engine
