#include "engine/prefill_scheduler.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "engine/log.hpp"

namespace deepinfer::engine {

prefill_scheduler::prefill_scheduler(const config& cfg, rank_engine& engine,
                                     const deepinfer::balancers::cost_model& model)
    : config_(cfg), engine_(engine), model_(model) {}

prefill_progress prefill_scheduler::submit(const prefill_request& req) {
  auto p = engine_.begin_prefill(req);
  if (p.status == engine_status::ok)
    queue_.push_back({req.seq, static_cast<int64_t>(req.tokens.size())});
  return p;
}

bool prefill_scheduler::cancel(sequence_id seq) {
  auto it = std::find_if(queue_.begin(), queue_.end(),
                         [&](const entry& e) { return e.seq.value == seq.value; });
  if (it == queue_.end())
    return false;
  queue_.erase(it);
  return true;
}

bool prefill_scheduler::is_long(const entry& e) const {
  const int64_t c = engine_.computed(e.seq).value_or(e.length);
  return predict(e.length - c, c, true) > config_.long_prompt_steps * config_.step_budget_ns;
}

std::vector<prefill_scheduler::slot> prefill_scheduler::step_order() const {
  std::vector<slot> order(queue_.size());
  for (std::size_t i = 0; i < order.size(); ++i)
    order[i].index = i;
  if (config_.long_prompt_steps <= 0 || order.empty())
    return order;
  std::vector<slot> shorter, longer;
  for (auto x : order)
    if (is_long(queue_[x.index]))
      longer.push_back(x);
    else
      shorter.push_back({x.index, true});
  if (shorter.empty() || longer.empty())
    return order;
  // The shorter ones lead unless they took most of the last step (then the long one does).
  const bool long_leads = shorter_spent_ > config_.short_share * config_.step_budget_ns;
  auto& first = long_leads ? longer : shorter;
  auto& then = long_leads ? shorter : longer;
  first.insert(first.end(), then.begin(), then.end());
  return first;
}

prefill_scheduler::step_result prefill_scheduler::step(
    const std::function<void(sequence_id, prefill_progress&)>& finished_now) {
  step_result out;
  const auto t0 = std::chrono::steady_clock::now();
  double left = config_.step_budget_ns, handed_ns = 0;
  std::vector<sequence_id> done;
  double shorter_spent = 0;
  for (const auto [i, shorter_beside_long] : step_order()) {
    auto& e = queue_[i];
    const int64_t c = engine_.computed(e.seq).value_or(e.length);
    const int64_t rest = e.length - c;
    if (rest == 0 && engine_.awaiting_blocks(e.seq))
      continue; // its encoder is done; its decoder waits for the hit's blocks
    int64_t q = model_.max_tokens(c, left / correction_, rest);
    if (q < rest && config_.finish_over_budget &&
        predict(0, c, true) - predict(0, c) > config_.step_budget_ns && predict(rest, c) <= left)
      q = rest; // the finishing pass never fits a step: do not split it off
    if (q < std::min(config_.min_chunk, rest)) {
      if (!out.chunks.empty())
        break; // the budget is spent; the next step continues
      q = std::min(config_.min_chunk, rest);
    }
    const bool last = q == rest;
    const double cost = predict(q, c, last);
    out.predicted_ns += cost;
    left -= cost;
    if (shorter_beside_long)
      shorter_spent += cost;
    auto p = engine_.prefill_step(e.seq, q);
    out.chunks.emplace_back(e.seq, q);
    log().debug("req={} scheduled prefill chunk={} context={} last={}", e.seq.value, q, c, last);
    if (!p.done && p.status == engine_status::ok)
      break; // a partial chunk took what the budget allowed
    if (finished_now) {
      // Its hand-off is not the step's compute: kept out of the measured time.
      const auto h0 = std::chrono::steady_clock::now();
      finished_now(e.seq, p);
      handed_ns += std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - h0).count();
    } else
      out.finished.emplace_back(e.seq, std::move(p));
    done.push_back(e.seq);
    if (left <= 0)
      break;
  }
  shorter_spent_ = shorter_spent;
  for (auto seq : done)
    cancel(seq);
  out.measured_ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() - handed_ns;
  // Steps of a millisecond or more say how far off the model is here (shorter ones are mostly
  // fixed costs and noise).
  if (config_.adapt && out.predicted_ns >= 1e6) {
    // Halfway to what this step says (in log terms): a 20x error is gone in about four steps,
    // one slow step (another process, a page fault) moves it by its square root only.
    const double ratio = std::clamp(out.measured_ns / out.predicted_ns, 0.125, 8.0);
    correction_ = std::clamp(correction_ * std::sqrt(ratio), 0.01, 1000.0);
  }
  return out;
}

} // namespace deepinfer::engine
