#include "balancers/autoscaler.hpp"

#include <algorithm>
#include <cmath>

namespace deepinfer::balancers {

autoscaler::autoscaler(const config& cfg) : cfg_(cfg) {}

double autoscaler::prefill_need(const observation& obs) const {
  double need = obs.missed_tok_per_s / cfg_.prefill_missed_tok_per_s;
  // A queue longer than the target means the admitted rate understates demand: scale the serving
  // instances by the ratio, unless instances already decided on are still starting.
  const int serving = obs.prefill - obs.prefill_starting;
  if (obs.queue_time_s > cfg_.queue_time_target_s) {
    if (obs.prefill_starting > 0)
      need = std::max(need, static_cast<double>(obs.prefill) / cfg_.headroom); // hold what is decided
    else
      need = std::max(need, static_cast<double>(serving)) * (obs.queue_time_s / cfg_.queue_time_target_s);
  }
  return need;
}

double autoscaler::decode_need(const observation& obs) const {
  return obs.requests_in_flight / cfg_.decode_requests;
}

int autoscaler::step(int now, double need, int lo, int hi, bool may_shrink) const {
  // Always more than computed: ceil of need x headroom.
  int target = static_cast<int>(std::ceil(need * cfg_.headroom - 1e-9));
  target = std::clamp(target, lo, hi);
  if (target > now)
    return std::min(target, now + cfg_.max_step_up);
  if (target < now && may_shrink)
    return std::max(target, now - cfg_.max_step_down);
  return now;
}

autoscaler::decision autoscaler::decide(const observation& obs) const {
  decision d;
  const bool may_shrink = obs.quota_use <= cfg_.no_scale_down_quota_use;
  d.prefill = step(obs.prefill, prefill_need(obs), cfg_.min_prefill, cfg_.max_prefill, may_shrink);
  d.decode = step(obs.decode, decode_need(obs), cfg_.min_decode, cfg_.max_decode, may_shrink);
  d.ready_pool = cfg_.ready_pool;
  if (d.decode < obs.decode) {
    d.decode_draining = obs.decode - d.decode;
    d.drain_deadline_s = obs.now_s + cfg_.decode_grace_s;
  }
  return d;
}

} // namespace deepinfer::balancers
