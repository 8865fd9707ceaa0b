#include "engine/prefill_scheduler.hpp"

#include <algorithm>

#include "engine/log.hpp"

namespace deepinfer::engine {

prefill_scheduler::prefill_scheduler(const config& cfg, rank_engine& engine,
                                     const cost_model& model)
    : config_(cfg), engine_(engine), model_(model) {}

prefill_progress prefill_scheduler::submit(const prefill_request& req) {
  auto p = engine_.begin_prefill(req);
  if (p.status == engine_status::ok)
    queue_.push_back({req.seq, static_cast<int64_t>(req.tokens.size())});
  return p;
}

prefill_scheduler::step_result prefill_scheduler::step() {
  step_result out;
  double left = config_.step_budget_ns;
  while (!queue_.empty()) {
    auto& head = queue_.front();
    const int64_t c = engine_.computed(head.seq).value_or(head.length);
    const int64_t rest = head.length - c;
    int64_t q = model_.max_tokens(c, left, rest);
    if (q < std::min(config_.min_chunk, rest)) {
      if (!out.chunks.empty())
        break; // the budget is spent; the next step continues
      q = std::min(config_.min_chunk, rest);
    }
    const bool last = q == rest;
    out.predicted_ns += model_.predict(q, c, last);
    left -= model_.predict(q, c, last);
    auto p = engine_.prefill_step(head.seq, q);
    out.chunks.emplace_back(head.seq, q);
    log().debug("req={} scheduled prefill chunk={} context={} last={}", head.seq.value, q, c, last);
    if (p.done || p.status != engine_status::ok) {
      out.finished.emplace_back(head.seq, std::move(p));
      queue_.pop_front();
    }
    if (left <= 0)
      break;
  }
  return out;
}

} // namespace deepinfer::engine
