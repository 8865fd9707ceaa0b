#include "engine/decode_drain.hpp"

#include <algorithm>

namespace deepinfer::engine {

void decode_drain::notice(clock::time_point now, std::chrono::milliseconds grace) {
  const auto deadline = now + std::max(grace, std::chrono::milliseconds{0});
  if (!deadline_ || deadline < *deadline_)
    deadline_ = deadline;
  if (!noticed_at_)
    noticed_at_ = now;
}

bool decode_drain::offer(uint64_t id, clock::time_point now) {
  if (!handing_off(now))
    return false;
  auto [it, fresh] = offered_.try_emplace(id, now);
  if (!fresh) {
    if (now - it->second < cfg_.retry)
      return false;
    it->second = now;
  }
  return true;
}

bool decode_drain::drained(clock::time_point now, std::size_t sequences) const {
  if (!deadline_ || sequences > 0)
    return false;
  return handing_off(now) || now >= *noticed_at_ + cfg_.settle;
}

std::optional<decode_drain::clock::time_point> decode_drain::next_check(clock::time_point now) const {
  if (!deadline_)
    return std::nullopt;
  if (now < *deadline_)
    return std::min(*deadline_, std::max(now, *noticed_at_ + cfg_.settle));
  std::optional<clock::time_point> next;
  for (const auto& [id, at] : offered_)
    if (!next || at + cfg_.retry < *next)
      next = at + cfg_.retry;
  return next;
}

} // namespace deepinfer::engine
