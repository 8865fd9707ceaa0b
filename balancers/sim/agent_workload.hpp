#pragma once

#include "balancers/sim/workload.hpp"

#include <random>
#include <unordered_map>

namespace deepinfer::balancers::sim {

/// Built-in agent-session generator: sessions arrive as a Poisson process; each runs a geometric
/// number of turns; every turn's prompt is the previous prompt plus the model's output plus a tool
/// result, and the next turn arrives a tool-execution time after the previous one finished.
///
/// With T the mean turn count and g the mean growth per turn (output + tool result), the mean
/// input is I0 + g (T - 1) (I0 = first prompt); the defaults give ~77K tokens and an ideal hit
/// ratio ~96 % (DESIGN §9). Every session shares the first `system_tokens` of its stream.
class agent_workload : public workload {
public:
  struct config {
    double session_rate = 35.0;     ///< sessions per second
    double duration_s = 3600.0;     ///< no session starts after this
    double turns_mean = 20.0;       ///< geometric on {1, 2, ...}
    int64_t system_tokens = 6144;   ///< shared by every session
    double first_user_mean = 14000; ///< first prompt = system + this (lognormal)
    double output_mean = 700;       ///< per turn (lognormal)
    double tool_mean = 2400;        ///< tool result tokens per turn (lognormal)
    double sigma = 0.6;             ///< lognormal shape of the three lengths
    double tool_time_mean_s = 3.0;  ///< exponential delay between a finish and the next turn
    int64_t max_input = 1'000'000;  ///< a session stops growing past this
    uint64_t seed = 42;
  };

  explicit agent_workload(const config& cfg);

  std::optional<sim_request> next() override;
  std::optional<sim_request> follow_up(const sim_request& done, double now) override;
  std::string name() const override { return "agent"; }

  /// Chain id of block k of a session's stream (shared system blocks first).
  uint64_t block_id(uint64_t session, int64_t k) const;

private:
  struct session {
    int turns_left = 0;
  };
  double lognormal(double mean);
  /// `base`: chain ids already known for this stream (the previous turn's), reused as a prefix.
  sim_request make(uint64_t session, int turn, double arrival, int64_t input_len, int64_t ideal_hit,
                   const std::vector<uint64_t>& base);

  config cfg_;
  std::mt19937_64 rng_;
  double next_start_ = 0.0;
  uint64_t next_session_ = 1;
  uint64_t next_id_ = 0;
  std::unordered_map<uint64_t, session> sessions_;
};

} // namespace deepinfer::balancers::sim
