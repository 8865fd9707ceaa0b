#pragma once

#include <cstdint>
#include <vector>

namespace deepinfer::balancers {

/// Autoscaling policy of DESIGN §6.5: prefill instances from the missed-token rate (plus queueing),
/// decode instances from requests in flight; rate-limited, bounded, always above the computed need,
/// no scale-down while quota use is above 0.8, a ready pool, and a grace period for decode drains.
///
/// Queue time is a signal of its own: a missed-token rate measured at the engines only counts
/// work that was admitted, so a backlog growing in the balancer's queues must still add instances.
/// It scales the instances that serve (not those still starting), and only while none is
/// starting: provisioning takes minutes (DESIGN §6.5), and until they serve the queue stays.
class autoscaler {
public:
  struct config {
    double prefill_missed_tok_per_s = 480e3; ///< missed tokens/s one prefill instance serves
    double decode_requests = 3000.0;         ///< requests in flight one decode instance serves
    double headroom = 1.2;                   ///< run this factor above the computed need
    int min_prefill = 1, max_prefill = 64;
    int min_decode = 1, max_decode = 16;
    int max_step_up = 4;                     ///< instances added per role per decision
    int max_step_down = 1;                   ///< instances removed per role per decision
    double no_scale_down_quota_use = 0.8;
    double queue_time_target_s = 1.0;        ///< prefill queue time above this adds instances
    int ready_pool = 2;                      ///< ready machines kept unassigned as stock
    double decode_grace_s = 60.0;            ///< a draining decode instance finishes for this long
  };

  /// What the cluster looks like at a decision.
  struct observation {
    double now_s = 0.0;
    double missed_tok_per_s = 0.0;  ///< uncached prefill tokens per second (recent window)
    double requests_in_flight = 0.0; ///< decode requests being generated
    double quota_use = 0.0;          ///< used / total compute-quota of prefill
    double queue_time_s = 0.0;       ///< recent p90 prefill queueing time
    int prefill = 0;                 ///< instances now (running + starting)
    int decode = 0;
    /// Of those, instances decided on that do not serve yet (a machine loading the model). The
    /// queue rule leaves them out and waits for them: a queue cannot shrink before they serve,
    /// so scaling on it again would add instances for the same backlog once per decision.
    int prefill_starting = 0;
    int decode_starting = 0;
  };

  /// The targets, and which decode instances drain until when.
  struct decision {
    int prefill = 0;
    int decode = 0;
    int ready_pool = 0;              ///< machines to keep in the ready pool
    int decode_draining = 0;         ///< decode instances told to leave at this decision
    double drain_deadline_s = 0.0;   ///< their requests + KV move elsewhere after this
  };

  explicit autoscaler(const config& cfg);

  /// One decision from one observation (pure apart from the config).
  decision decide(const observation& obs) const;

  /// The unconstrained need of each role (before headroom, limits and bounds); for tests and plots.
  double prefill_need(const observation& obs) const;
  double decode_need(const observation& obs) const;

private:
  int step(int now, double need, int lo, int hi, bool may_shrink) const;

  config cfg_;
};

} // namespace deepinfer::balancers
