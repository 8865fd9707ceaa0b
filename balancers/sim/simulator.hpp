#pragma once

#include "balancers/autoscaler.hpp"
#include "balancers/cost_model.hpp"
#include "balancers/serving_router.hpp"
#include "balancers/sim/event_queue.hpp"
#include "balancers/sim/fleet.hpp"
#include "balancers/sim/kv_cache.hpp"
#include "balancers/sim/sim_config.hpp"
#include "balancers/sim/workload.hpp"

#include <deque>
#include <optional>
#include <queue>
#include <string>
#include <unordered_map>
#include <vector>

namespace deepinfer::balancers::sim {

/// Time series sampled every `sample_s` of virtual time.
struct sim_series {
  std::vector<double> t;
  std::vector<double> hit_ratio;          ///< token hit ratio of the window's arrivals
  std::vector<double> ttft_p99;           ///< of the window's prefill completions
  std::vector<double> decode_tok_s_rank;  ///< decode tokens/s per rank in the window
  std::vector<std::vector<float>> prefill_rank_load; ///< outstanding quota (s) per prefill rank
  std::vector<std::vector<float>> decode_rank_kv;    ///< KV tokens per decode rank
  std::vector<double> autoscale_t;
  std::vector<int> prefill_now, prefill_target, decode_now, decode_target; ///< now: running instances
  std::vector<int> prefill_starting, decode_starting;  ///< provisioning at the decision
  std::vector<int> prefill_draining, decode_draining;  ///< draining at the decision
};

/// What one run measured.
struct sim_result {
  std::string workload;
  int64_t requests = 0;       ///< arrived
  int64_t completed = 0;      ///< finished decode
  int64_t input_tokens = 0;
  int64_t hit_tokens = 0;
  int64_t exact_hits = 0;     ///< hits with an SWA snapshot at L1
  int64_t replay_hits = 0;    ///< hits at L1 - 128 with replay
  int64_t ideal_hit_tokens = 0;
  std::vector<float> ttft;    ///< seconds, one per prefilled request
  std::vector<float> tpot;    ///< seconds per output token after the first, one per request with > 1
  int64_t decode_tokens = 0;
  double first_arrival = 0.0;
  double last_event = 0.0;   ///< last completion
  double decode_active_s = 0.0; ///< time at least one decode step ran
  double prefill_busy = 0.0, prefill_ideal = 0.0; ///< rank-seconds: step time x ranks, and work
  double decode_busy = 0.0, decode_ideal = 0.0;
  // cluster size over time (fleet): rank-seconds of instances (provisioning + running +
  // draining) per role, of ready-pool machines, and the lifecycle counters
  double prefill_rank_s = 0.0, decode_rank_s = 0.0, pool_rank_s = 0.0;
  double end_s = 0.0;         ///< rank-seconds are integrated from 0 to here (the run's last event)
  int peak_prefill = 0, peak_decode = 0; ///< most instances running at once
  int64_t scale_ups = 0, scale_downs = 0, pool_starts = 0, cold_starts = 0;
  int64_t handoffs = 0;       ///< requests a draining decode instance handed to another
  double handoff_s = 0.0;     ///< their pauses, summed
  sim_series series;
};

/// The discrete-event simulator of DESIGN §8: arrivals from a workload, kv's §4.3 hit policy over
/// kv's CHECK index, block catalog with GC and SWA snapshot store (kv_cache), placement by
/// `serving_router` -- the class the live balancer actors own -- for prefill (quota buckets; round
/// robin and least outstanding are baselines beside it) and for decode over every decode rank,
/// prefill instances stepping under a time budget with the cost model (balancers::cost_model,
/// calibrated to the seeds' figures), decode instances stepping synchronously, and the
/// autoscaler's decisions, recorded (`autoscale_mode::advisory`, a static cluster) or applied:
/// an instance decided on serves after a provisioning delay (ready pool or cold, `fleet`); a
/// prefill instance told to leave stops pulling and leaves when idle; a decode instance told to
/// leave takes no new placements, decodes for the grace period, then hands every request it
/// still holds, with its KV, to the other decode instances (a pause of latency + KV / link).
///
/// Instances are named `prefill-<i>` and `decode-<i>` in the router (i: the fleet slot, reused
/// after an instance left). The simulator keeps the
/// engines' own state (FIFOs, batches, KV per rank) and reports to the router what a live engine
/// reports to its balancer: prefill chunks computed and finished, decode KV growth and finishes.
class simulator {
public:
  simulator(const sim_config& cfg, workload& wl);

  /// Runs to the horizon or until every request drained.
  sim_result run();

private:
  struct flight {
    sim_request req;
    int64_t hit = 0;
    int64_t done = 0;       ///< prompt tokens computed (starts at hit)
    double quota = 0.0;
    double released = 0.0;  ///< quota already given back chunk by chunk
    int engine = 0, rank = 0;
    double first_chunk = -1.0;
    int decode_rank = -1;   ///< global decode rank (instance x decode_dp + rank); -1: none
    int64_t join_step = 0;
    int64_t left = 0;       ///< decode steps still to run when it (re)joins a batch
    int64_t finish_step = 0; ///< its instance's step count when it finishes there
    double decode_start = -1.0; ///< prefill done (its first token)
    int64_t kv = 0;         ///< KV length on its decode rank now
    size_t batch_pos = 0;   ///< index in its decode instance's `batch`
  };
  struct prefill_rank {
    std::deque<uint64_t> fifo;
    int outstanding = 0;
    double quota_load = 0.0;
  };
  struct prefill_inst {
    std::vector<prefill_rank> ranks;
    bool busy = false;
    std::vector<uint64_t> finishing;
    uint64_t epoch = 0; ///< bumped when the slot is (re)started: stale events check it
  };
  /// A decode rank as its engine sees it (the router keeps its own view).
  struct decode_rank {
    int64_t requests = 0;
    int64_t kv_tokens = 0;
  };
  struct decode_inst {
    bool busy = false;
    int64_t steps = 0;
    std::vector<flight*> batch; ///< placed requests; joiners at the end (not in a running step)
    std::priority_queue<std::pair<int64_t, uint64_t>, std::vector<std::pair<int64_t, uint64_t>>, std::greater<>> finish;
    uint64_t epoch = 0;
    bool handoff_due = false; ///< the grace period ended during a step: hand off at its end
    bool handoff_pending = false; ///< handed off; leaves when the last KV is sent
  };

  // arrivals and metrics (simulator.cpp)
  void pull_arrival();
  void arrive(sim_request r);
  void sample();
  void autoscale();
  void record_peaks();
  // applying the autoscaler (scaling_stage.cpp)
  void apply(const autoscaler::decision& d);
  void start_instance(instance_role role);
  void instance_ready(instance_role role, int slot, uint64_t epoch);
  void shrink(instance_role role, int by, double drain_deadline);
  void leave_if_idle(instance_role role, int slot);
  void grace_over(int slot, uint64_t epoch);
  void hand_off(int slot);
  void rejoin(uint64_t id);
  void announce(instance_role role); ///< the router's membership view: running instances
  bool serving(instance_role role, int slot) const;
  // prefill (prefill_stage.cpp)
  void place_prefill(uint64_t id);
  void pull_prefills(); ///< instances with quota left pull from the router's queue
  void assign(uint64_t id, int engine, int rank);
  void start_prefill_step(int inst);
  void end_prefill_step(int inst);
  void prefill_done(uint64_t id);
  // decode (decode_stage.cpp)
  void route_decode(uint64_t id);
  bool try_decode(uint64_t id);
  int instance_index(const std::string& name) const;
  void start_decode_step(int inst);
  void end_decode_step(int inst);
  void decode_done(uint64_t id);

  sim_config cfg_;
  workload& wl_;
  balancers::cost_model cost_;
  event_queue q_;
  kv_cache cache_;
  serving_router router_;
  std::unordered_map<std::string, int> instance_index_; ///< router name -> prefill or decode index
  autoscaler scaler_;
  fleet fleet_;
  std::vector<int> prefill_serving_; ///< running prefill slots (the baselines place over these)
  std::unordered_map<uint64_t, flight> flights_;
  std::vector<prefill_inst> prefill_;
  std::vector<decode_inst> decode_;
  std::vector<decode_rank> dranks_;
  std::deque<uint64_t> decode_waiting_;
  uint64_t rr_next_ = 0;
  bool arrivals_done_ = false;
  int64_t pending_followups_ = 0; ///< closed-loop arrivals scheduled but not yet arrived
  sim_result res_;
  // window accumulators for the series and the autoscaler
  int64_t win_input_ = 0, win_hit_ = 0, win_decode_tokens_ = 0, scale_missed_ = 0;
  std::vector<float> win_ttft_, scale_wait_;
  double swa_collected_ = 0.0;
};

} // namespace deepinfer::balancers::sim
