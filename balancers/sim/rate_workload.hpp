#pragma once

#include "balancers/sim/workload.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace deepinfer::balancers::sim {

/// Open-loop arrivals from request-rate curves, as ServeGen (Alibaba Bailian) publishes them: per
/// client, one row per window (`window_start_s,rate_rps,cv,pattern,arg1,arg2`) with the fitted
/// inter-arrival distribution of that window (`Gamma` shape/scale, `Weibull` shape/scale,
/// `Exponential`; an empty pattern is an idle window). Each client is a renewal process restarted
/// at every window; the clients are superposed. A ServeGen aggregate file
/// (`window_start_s,total_rate_rps,active_clients,rate_weighted_mean_cv`) is one client whose
/// windows are Gamma with that rate and CV.
///
/// ServeGen has no lengths here, so each request's (input, output) is drawn from the rows of a
/// recorded trace (Mooncake JSONL or Azure CSV). There are no block ids: nothing hits.
class rate_workload : public workload {
public:
  enum class gap_law { exponential, gamma, weibull };
  /// One window of one client.
  struct window {
    double start_s = 0.0;
    double rate_rps = 0.0;   ///< 0: idle
    gap_law law = gap_law::exponential;
    double shape = 1.0;      ///< gamma / weibull shape
    double scale = 0.0;      ///< gamma / weibull scale (s); exponential: 1 / rate
  };
  struct length {
    int64_t input_len = 0;
    int64_t output_len = 0;
  };
  struct config {
    /// A ServeGen client directory (every `*-trace.csv` in it is a client) or an aggregate CSV.
    std::string rates;
    /// Trace whose (input, output) pairs are drawn (Mooncake .jsonl or Azure .csv).
    std::string lengths;
    double window_s = 600.0;  ///< ServeGen's window
    double start_s = 0.0;     ///< first window used (seconds into the curve)
    double duration_s = 0.0;  ///< how much of the curve (0: all)
    double rate_scale = 1.0;  ///< every rate times this
    uint64_t seed = 1;
  };

  /// Loads the files. Throws std::runtime_error on unreadable input (the simulator's parse edge).
  explicit rate_workload(const config& cfg);
  /// From curves and lengths in memory (tests); times relative to the first window.
  rate_workload(const std::vector<std::vector<window>>& clients, std::vector<length> lengths, double window_s,
                uint64_t seed, std::string name = "rates");

  /// Parses one ServeGen client row (rate 0: an idle window).
  static window parse_client_row(const std::string& line);
  /// Parses one aggregate row (rate and rate-weighted CV) into a Gamma window.
  static window parse_aggregate_row(const std::string& line);

  std::optional<sim_request> next() override;
  std::string name() const override { return name_; }
  size_t size() const { return arrivals_.size(); }

private:
  void generate(const std::vector<std::vector<window>>& clients, double window_s, double from, double to);

  std::string name_;
  std::vector<length> lengths_;
  uint64_t seed_ = 1;
  struct arrival {
    double t;
    uint32_t length;
  };
  std::vector<arrival> arrivals_;
  size_t pos_ = 0;
};

} // namespace deepinfer::balancers::sim
