#pragma once

#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "actors/node/node_runtime.hpp"
#include "actors/node/serving_config.hpp"

namespace deepinfer::launcher {

/// The command-line overrides of the manifest's `[http]`, `[requests]` and `[admission]` keys
/// (and of their defaults for the embedded default). Only flags that were given override.
struct serving_flags {
  std::optional<std::size_t> max_connections;
  std::optional<int64_t> idle_timeout_ms, header_timeout_ms, body_timeout_ms;
  std::vector<std::string> allowed_hosts, cors_origins;
  std::optional<std::size_t> json_max_depth;
  std::optional<int64_t> stall_timeout_ms, deadline_ms;
  std::optional<int32_t> default_max_tokens;
  std::vector<std::string> api_keys;
  std::optional<int64_t> prefill_tokens_per_rank, decode_sequences_per_rank;
  std::optional<std::size_t> max_waiting;
  std::optional<int64_t> queue_timeout_ms;
  bool admin = false;
  std::optional<std::string> api_keys_file;
  bool protect_metrics = false;

  /// Registers the flags on `app`.
  void add_to(CLI::App& app);
  /// Applies the given flags.
  void apply(actors::http_endpoint& http, actors::request_limits& requests,
             actors::admission_control::config& admission) const;
  /// The given flags again, as arguments for the node processes a launcher starts.
  std::vector<std::string> arguments() const;
};

/// Raises this process's open-file limit to its hard limit, and lowers `http.max_connections`
/// (with a warning) when even that cannot hold the connections plus the process's other files.
void fit_open_files(actors::http_endpoint& http);

} // namespace deepinfer::launcher
