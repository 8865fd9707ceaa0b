#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace deepinfer::balancers::sim {

/// One request as the simulator sees it.
struct sim_request {
  uint64_t id = 0;
  double arrival = 0.0;    ///< virtual seconds
  int64_t input_len = 0;
  int64_t output_len = 0;
  /// Chain ids of the full 128-token blocks known for this request: the prompt's, followed by
  /// those completed by the output where the source knows them (the agent generator does).
  std::vector<uint64_t> chain;
  int64_t prompt_blocks = 0; ///< floor(input_len / 128), <= chain.size()
  uint64_t session = 0;
  int turn = 0;
  int64_t ideal_hit = 0;     ///< tokens an infinite, never-expiring cache could reuse (source's view)
};

/// A source of requests: open-loop arrivals in time order, plus optional closed-loop follow-ups
/// (the next turn of an agent session arrives only after the previous one finished).
class workload {
public:
  virtual ~workload() = default;
  /// The next open-loop arrival, in non-decreasing arrival time; nullopt when exhausted. Required.
  virtual std::optional<sim_request> next() = 0;
  /// The request that follows `done`, finished at `now`, if any. Optional (default: none).
  virtual std::optional<sim_request> follow_up(const sim_request& done, double now) {
    (void)done;
    (void)now;
    return std::nullopt;
  }
  /// A short name for reports. Required.
  virtual std::string name() const = 0;
};

/// 64-bit mixer used to derive chain ids (splitmix64 finaliser).
inline uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

} // namespace deepinfer::balancers::sim
