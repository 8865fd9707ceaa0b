#pragma once

#include "balancers/sim/workload.hpp"

#include <memory>
#include <string>
#include <vector>

namespace deepinfer::balancers::sim {

/// Open-loop replay of a recorded trace: Mooncake JSONL (timestamps in ms, 512-token `hash_ids`)
/// or Azure LLM 2023 CSV (arrivals and lengths only: every block is unique, so nothing hits).
class trace_workload : public workload {
public:
  struct config {
    std::string path;
    double time_scale = 1.0;   ///< arrival times are divided by this (> 1 compresses the trace)
    int64_t max_requests = 0;  ///< 0: all
  };

  /// One parsed trace row.
  struct row {
    double t = 0.0; ///< seconds from the first arrival (once loaded; parse_*: the file's clock)
    int64_t day = 0; ///< parse_azure: days since 1970-01-01 (`t` is then the time of day); else 0
    int64_t input_len = 0;
    int64_t output_len = 0;
    std::vector<uint32_t> hash_ids; ///< 512-token prefix-chained ids; empty for Azure
  };

  /// Loads the file (format by extension: .jsonl Mooncake, .csv Azure). Throws std::runtime_error
  /// on unreadable input: this is the simulator's parse edge.
  explicit trace_workload(const config& cfg);

  /// Parses one Mooncake JSONL line (exposed for tests); `hash_ids` may be absent (every block
  /// unique). Throws std::runtime_error saying what is wrong.
  static row parse_mooncake(const std::string& line);
  /// Parses one Azure CSV data line: `day` and `t` (its time of day), so a trace that spans
  /// midnight or days (the 2024 traces: a week) stays in order. Throws std::runtime_error.
  static row parse_azure(const std::string& line);

  /// Chain ids of the 128-token blocks of a Mooncake row: 512-block id h gives (h, 0..3).
  static std::vector<uint64_t> chain_of(const row& r, uint64_t unique_salt);

  std::optional<sim_request> next() override;
  std::string name() const override { return name_; }
  size_t size() const { return rows_.size(); }

private:
  config cfg_;
  std::string name_;
  std::vector<row> rows_;
  size_t pos_ = 0;
};

} // namespace deepinfer::balancers::sim
