#include "actors/entrypoint/admission_control.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

namespace deepinfer::actors {

admission_control::ticket::~ticket() {
  owner_->release(tokens_, sequence_held_);
}

void admission_control::ticket::prefilled() {
  if (tokens_ == 0)
    return;
  owner_->release(tokens_, false);
  tokens_ = 0;
}

bool admission_control::fits(int64_t tokens) const {
  const bool prefill_room = prefill_tokens_ == 0 || prefill_tokens_ + tokens <= prefill_cap_;
  return prefill_room && sequences_ < sequence_cap_;
}

admission_control::decision admission_control::request(const std::shared_ptr<admission_control>& self, int64_t tokens,
                                       int64_t prefill_ranks, int64_t decode_ranks,
                                       std::function<void()> notify) {
  decision d;
  std::lock_guard guard{self->mtx_};
  auto& cfg = self->cfg_;
  self->prefill_cap_ = cfg.prefill_tokens_per_rank * std::max<int64_t>(prefill_ranks, 1);
  self->sequence_cap_ = cfg.decode_sequences_per_rank * std::max<int64_t>(decode_ranks, 1);
  // Nobody waits (or the line lets it pass): in at once.
  if (self->line_.empty() && self->fits(tokens)) {
    self->prefill_tokens_ += tokens;
    ++self->sequences_;
    d.what = outcome::admitted;
    d.ticket = std::make_unique<ticket>(self, tokens);
    return d;
  }
  if (self->line_.size() >= cfg.max_waiting) {
    d.what = outcome::refused;
    return d;
  }
  auto w = std::make_shared<waiter>();
  w->tokens = tokens;
  w->since = self->clock_();
  w->notify = std::move(notify);
  self->line_.push_back(w);
  d.what = outcome::queued;
  d.place = std::move(w);
  return d;
}

bool admission_control::withdraw(const std::shared_ptr<waiter>& place) {
  std::vector<std::shared_ptr<waiter>> admitted;
  {
    std::lock_guard guard{mtx_};
    auto it = std::find(line_.begin(), line_.end(), place);
    if (it == line_.end())
      return false;
    line_.erase(it);
    // A head that left may have held back others that fit.
    admitted = pump(clock_());
  }
  wake(std::move(admitted));
  return true;
}

void admission_control::release(int64_t tokens, bool sequence) {
  std::vector<std::shared_ptr<waiter>> admitted;
  {
    std::lock_guard guard{mtx_};
    prefill_tokens_ -= tokens;
    if (sequence)
      --sequences_;
    admitted = pump(clock_());
  }
  wake(std::move(admitted));
}

void admission_control::wake(std::vector<std::shared_ptr<waiter>> admitted) {
  for (auto& w : admitted)
    if (w->notify)
      w->notify();
}

std::vector<std::shared_ptr<admission_control::waiter>> admission_control::pump(std::chrono::steady_clock::time_point now) {
  std::vector<std::shared_ptr<waiter>> admitted;
  // NOTE: tickets made here hold a shared_ptr to this admission; release() runs from a ticket's
  // destructor, so `this` is alive.
  auto self = shared_from_this();
  const auto patience = cfg_.queue_timeout / 2;
  for (auto it = line_.begin(); it != line_.end();) {
    auto& w = **it;
    if (!fits(w.tokens)) {
      // The head has waited long enough: nobody goes ahead of it any more.
      if (it == line_.begin() && now - w.since >= patience)
        break;
      ++it;
      continue;
    }
    prefill_tokens_ += w.tokens;
    ++sequences_;
    w.ticket = std::make_unique<ticket>(self, w.tokens);
    const double waited = std::chrono::duration<double>(now - w.since).count();
    recent_wait_s_ = recent_wait_s_ == 0 ? waited : 0.8 * recent_wait_s_ + 0.2 * waited;
    admitted.push_back(std::move(*it));
    it = line_.erase(it);
  }
  return admitted;
}

int64_t admission_control::retry_after_seconds() const {
  std::lock_guard guard{mtx_};
  const auto cap = std::chrono::duration_cast<std::chrono::seconds>(cfg_.queue_timeout).count();
  return std::clamp<int64_t>(static_cast<int64_t>(std::ceil(recent_wait_s_)), 1, std::max<int64_t>(cap, 1));
}

admission_control::usage admission_control::current() const {
  std::lock_guard guard{mtx_};
  return {prefill_tokens_, sequences_, line_.size()};
}

} // namespace deepinfer::actors
