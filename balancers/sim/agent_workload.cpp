#include "balancers/sim/agent_workload.hpp"

#include <algorithm>
#include <cmath>

namespace deepinfer::balancers::sim {

agent_workload::agent_workload(const config& cfg) : cfg_(cfg), rng_(cfg.seed) {
  next_start_ = std::exponential_distribution<double>(cfg_.session_rate)(rng_);
}

double agent_workload::lognormal(double mean) {
  // mean of lognormal(mu, s) is exp(mu + s^2/2)
  const double mu = std::log(mean) - cfg_.sigma * cfg_.sigma / 2.0;
  return std::lognormal_distribution<double>(mu, cfg_.sigma)(rng_);
}

uint64_t agent_workload::block_id(uint64_t session, int64_t k) const {
  if (k < cfg_.system_tokens / 128)
    return mix64(0x5157e3ULL * 1000003ULL + static_cast<uint64_t>(k));
  return mix64((session << 24) ^ static_cast<uint64_t>(k) ^ 0xa6e17ULL << 56);
}

sim_request agent_workload::make(uint64_t session, int turn, double arrival, int64_t input_len, int64_t ideal_hit,
                                 const std::vector<uint64_t>& base) {
  sim_request r;
  r.id = next_id_++;
  r.arrival = arrival;
  r.session = session;
  r.turn = turn;
  r.input_len = input_len;
  r.output_len = std::max<int64_t>(1, std::llround(lognormal(cfg_.output_mean)));
  r.prompt_blocks = input_len / 128;
  const int64_t blocks = (input_len + r.output_len) / 128;
  r.chain.reserve(static_cast<size_t>(blocks));
  r.chain.assign(base.begin(), base.begin() + std::min<std::ptrdiff_t>(static_cast<std::ptrdiff_t>(base.size()), blocks));
  for (auto k = static_cast<int64_t>(r.chain.size()); k < blocks; ++k)
    r.chain.push_back(block_id(session, k));
  r.ideal_hit = ideal_hit;
  return r;
}

std::optional<sim_request> agent_workload::next() {
  if (next_start_ > cfg_.duration_s)
    return std::nullopt;
  const double at = next_start_;
  next_start_ += std::exponential_distribution<double>(cfg_.session_rate)(rng_);
  const uint64_t s = next_session_++;
  // geometric on {1, 2, ...} with mean T: failures of a Bernoulli(1/T) plus one
  const int turns = 1 + std::geometric_distribution<int>(1.0 / cfg_.turns_mean)(rng_);
  sessions_[s] = {turns - 1};
  const int64_t len = cfg_.system_tokens + std::llround(lognormal(cfg_.first_user_mean));
  return make(s, 0, at, len, cfg_.system_tokens / 128 * 128, {});
}

std::optional<sim_request> agent_workload::follow_up(const sim_request& done, double now) {
  const auto it = sessions_.find(done.session);
  if (it == sessions_.end())
    return std::nullopt;
  const int64_t prev = done.input_len + done.output_len;
  if (it->second.turns_left <= 0 || prev >= cfg_.max_input) {
    sessions_.erase(it);
    return std::nullopt;
  }
  --it->second.turns_left;
  const int64_t len = prev + std::max<int64_t>(1, std::llround(lognormal(cfg_.tool_mean)));
  const double at = now + std::exponential_distribution<double>(1.0 / cfg_.tool_time_mean_s)(rng_);
  return make(done.session, done.turn + 1, at, len, prev / 128 * 128, done.chain);
}

} // namespace deepinfer::balancers::sim
