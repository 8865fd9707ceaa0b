#pragma once

// Where one request's time went, stage by stage, from its first byte to its answer. A
// non-streamed answer carries it as a `Server-Timing` header (W3C Server Timing: browsers'
// developer tools and `curl -i` show it); every answer adds it to the
// `deepinfer_request_stage_seconds` histogram. Pure (no CAF): the request actor closes the stages.

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace deepinfer::actors {

/// The stages run one after another: `close(s)` ends stage `s`, which ran since the previous
/// close (or since `begin`), so the stages sum to the total. A stage entered again (a resubmitted
/// attempt, a placement retried after a wait) adds to its time; time between two closes always
/// lands in the stage closed next, so nothing is lost or counted twice.
///
/// The prefill's round trip is split by what the prefill rank reports: the job's way there
/// (`prefill_send`: serialization, the network, the rank's mailbox; less `rank_busy`, the part
/// of it the rank's thread spent on other work: steps, other jobs' starts), how long it waited
/// at the rank before a step took it (`rank_queue`), how long that step ran until its first
/// token (`rank_step`), and the answer's way back (`prefill_return`). The way there is measured
/// on the system clocks of both ends (exact on one machine, as good as their sync across
/// machines); without it the two ways are one, `prefill_transit`.
class request_timeline {
public:
  using clock = std::chrono::steady_clock;

  enum class stage : uint8_t {
    read,         ///< the request's first byte to its last (the HTTP read)
    dispatch,     ///< the I/O thread handing it to its actor (a CAF worker)
    parse,        ///< the body's JSON into a conversation
    fetch,        ///< image URLs fetched
    prepare,      ///< template, tokens, images decoded, a constraint compiled
    admit,        ///< waiting for admission
    vision,       ///< images out at vision ranks
    decode_pick,  ///< the decode balancer's answer
    swa,          ///< the SWA directory's answer
    prefill_pick, ///< the prefill balancer's grant (the job queued until an instance pulled it)
    prefill,      ///< the prefill job sent to its first token back (split when the rank reports)
    decode,       ///< the first token to the last
    count_
  };

  /// The request's first byte and the moment the I/O thread dispatched it (both from the HTTP
  /// connection), and `now`, when its actor first ran.
  void begin(clock::time_point first_byte, clock::time_point dispatched, clock::time_point now = clock::now());

  /// Ends stage `s` at `now`: the time since the previous close is its.
  void close(stage s, clock::time_point now = clock::now());

  /// What the prefill rank reports of a job (seconds; prefill_result's fields of these names).
  struct rank_times {
    double queue = 0;
    double step = 0;
    /// The job's way to the rank; negative: not measured.
    double send = -1;
    double busy = 0;
  };
  /// Ends the prefill stage as `close(stage::prefill, now)` does, split by `rank`. The last
  /// report stands (a resubmitted attempt's prefill is the one that answered).
  void close_prefill(rank_times rank, clock::time_point now = clock::now());

  struct entry {
    std::string_view name;
    double seconds = 0;
  };
  /// Every stage that ran, in order (the prefill split when the rank reported), then `total`
  /// (first byte to `end`).
  std::vector<entry> entries(clock::time_point end = clock::now()) const;

  /// The `Server-Timing` header value of `entries` (those of `entries(end)`): `name;dur=MS`
  /// joined by ", ", durations in milliseconds with three decimals.
  static std::string server_timing(const std::vector<entry>& entries);

  static std::string_view name(stage s);

private:
  static constexpr std::size_t stages = static_cast<std::size_t>(stage::count_);
  std::array<double, stages> seconds_{};
  std::array<bool, stages> ran_{};
  clock::time_point first_{};
  clock::time_point last_{};
  bool begun_ = false;
  bool rank_reported_ = false;
  rank_times rank_;
};

} // namespace deepinfer::actors
