#include "launcher/serving_flags.hpp"

#include <sys/resource.h>

#include "launcher/log.hpp"

namespace deepinfer::launcher {

namespace {

/// Files a serving process holds besides client connections (model, KV store, CAF, logs).
constexpr rlim_t other_files = 512;

} // namespace

void serving_flags::add_to(CLI::App& app) {
  app.add_flag("--admin", admin,
               "Serve the operator endpoints on the HTTP port: POST /admin/fail-rank, GET "
               "/admin/instances (default off; manifest [http] admin = true)");
  app.add_option("--max-connections", max_connections,
                 "Most open HTTP connections (default 4096); at the cap the longest-idle one is closed")
    ->check(CLI::Range(1, 1 << 20));
  app.add_option("--idle-timeout-ms", idle_timeout_ms, "Close a connection idle this long (default 30000)")
    ->check(CLI::Range(10, 86400000));
  app.add_option("--header-timeout-ms", header_timeout_ms,
                 "408 when a request header takes longer from its first byte (default 10000)")
    ->check(CLI::Range(10, 3600000));
  app.add_option("--body-timeout-ms", body_timeout_ms, "408 when a request body takes longer (default 30000)")
    ->check(CLI::Range(10, 3600000));
  app.add_option("--allowed-host", allowed_hosts, "Another Host name to answer (repeatable; on a loopback "
                                                  "address only loopback names are answered by default)");
  app.add_option("--cors-origin", cors_origins, "An origin that gets CORS headers (repeatable; `*` for any; "
                                                "default none)");
  app.add_option("--json-max-depth", json_max_depth, "Deepest JSON nesting accepted in a request (default 64)")
    ->check(CLI::Range(1, static_cast<int>(recipe::json_limits::max_depth_ceiling)));
  app.add_option("--stall-timeout-ms", stall_timeout_ms,
                 "End a request that makes no progress this long with the API's error (default 60000)")
    ->check(CLI::Range(100, 86400000));
  app.add_option("--request-deadline-ms", deadline_ms,
                 "End a request this long after it arrived with the API's error (default 0: none)")
    ->check(CLI::Range(0, 86400000));
  app.add_option("--default-max-tokens", default_max_tokens,
                 "Output tokens of a request that names no max_tokens (default 256; lowered to what the "
                 "context leaves after the prompt; each request's KV is reserved for prompt + max_tokens)")
    ->check(CLI::Range(1, 1 << 20));
  app.add_option("--api-key", api_keys, "An API key clients must send (repeatable; default none: no "
                                        "authentication); each key is its own prefix-cache namespace");
  app.add_option("--api-keys-file", api_keys_file,
                 "A file of more API keys, one per line (# comments); read again on SIGHUP without a "
                 "restart (manifest [http] api_keys_file)");
  app.add_flag("--protect-metrics", protect_metrics,
               "/metrics needs an API key too when the server has keys (manifest [http] protect_metrics)");
  app.add_option("--admission-prefill-tokens", prefill_tokens_per_rank,
                 "Uncached prompt tokens admitted to prefill per prefill rank (default 65536)")
    ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  app.add_option("--admission-decode-sequences", decode_sequences_per_rank,
                 "Requests admitted per decode rank (default 256)")
    ->check(CLI::Range(1, 1 << 20));
  app.add_option("--admission-max-waiting", max_waiting,
                 "Requests that may wait for admission; more get 429 / 529 at once (default 256)")
    ->check(CLI::Range(0, 1 << 20));
  app.add_option("--admission-queue-timeout-ms", queue_timeout_ms,
                 "Longest wait for admission before 429 / 529 (default 30000)")
    ->check(CLI::Range(1, 86400000));
}

void serving_flags::apply(actors::http_endpoint& http, actors::request_limits& requests,
                          actors::admission_control::config& admission) const {
  using std::chrono::milliseconds;
  if (max_connections)
    http.max_connections = *max_connections;
  if (idle_timeout_ms)
    http.idle_timeout = milliseconds{*idle_timeout_ms};
  if (header_timeout_ms)
    http.header_timeout = milliseconds{*header_timeout_ms};
  if (body_timeout_ms)
    http.body_timeout = milliseconds{*body_timeout_ms};
  if (!allowed_hosts.empty())
    http.allowed_hosts = allowed_hosts;
  if (!cors_origins.empty())
    http.cors_origins = cors_origins;
  if (admin)
    http.admin = true;
  if (api_keys_file)
    http.api_keys_file = *api_keys_file;
  if (protect_metrics)
    http.protect_metrics = true;
  if (json_max_depth)
    requests.json.max_depth = *json_max_depth;
  if (stall_timeout_ms)
    requests.stall_timeout = milliseconds{*stall_timeout_ms};
  if (deadline_ms)
    requests.deadline = milliseconds{*deadline_ms};
  if (default_max_tokens)
    requests.default_max_tokens = *default_max_tokens;
  if (!api_keys.empty())
    requests.api_keys = api_keys;
  if (prefill_tokens_per_rank)
    admission.prefill_tokens_per_rank = *prefill_tokens_per_rank;
  if (decode_sequences_per_rank)
    admission.decode_sequences_per_rank = *decode_sequences_per_rank;
  if (max_waiting)
    admission.max_waiting = *max_waiting;
  if (queue_timeout_ms)
    admission.queue_timeout = milliseconds{*queue_timeout_ms};
}

std::vector<std::string> serving_flags::arguments() const {
  std::vector<std::string> out;
  auto one = [&](const char* flag, const auto& v) {
    if (v)
      out.insert(out.end(), {flag, std::to_string(*v)});
  };
  auto each = [&](const char* flag, const std::vector<std::string>& v) {
    for (auto& x : v)
      out.insert(out.end(), {flag, x});
  };
  one("--max-connections", max_connections);
  one("--idle-timeout-ms", idle_timeout_ms);
  one("--header-timeout-ms", header_timeout_ms);
  one("--body-timeout-ms", body_timeout_ms);
  each("--allowed-host", allowed_hosts);
  each("--cors-origin", cors_origins);
  one("--json-max-depth", json_max_depth);
  one("--stall-timeout-ms", stall_timeout_ms);
  one("--request-deadline-ms", deadline_ms);
  each("--api-key", api_keys);
  one("--admission-prefill-tokens", prefill_tokens_per_rank);
  one("--admission-decode-sequences", decode_sequences_per_rank);
  one("--admission-max-waiting", max_waiting);
  one("--admission-queue-timeout-ms", queue_timeout_ms);
  if (admin)
    out.push_back("--admin");
  if (api_keys_file)
    out.insert(out.end(), {"--api-keys-file", *api_keys_file});
  if (protect_metrics)
    out.push_back("--protect-metrics");
  return out;
}

void fit_open_files(actors::http_endpoint& http) {
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) != 0)
    return;
  if (lim.rlim_cur < lim.rlim_max) {
    rlimit raised = lim;
    raised.rlim_cur = lim.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0)
      lim = raised;
  }
  const rlim_t need = static_cast<rlim_t>(http.max_connections) + 64 + other_files;
  if (lim.rlim_cur != RLIM_INFINITY && lim.rlim_cur < need) {
    const auto fit = lim.rlim_cur > other_files + 128 ? lim.rlim_cur - other_files - 64 : 64;
    log().warn("open-file limit {} cannot hold max_connections={}; serving at most {} connections (raise "
               "`ulimit -n`)",
               static_cast<uint64_t>(lim.rlim_cur), http.max_connections, static_cast<uint64_t>(fit));
    http.max_connections = static_cast<std::size_t>(fit);
  }
}

} // namespace deepinfer::launcher
