#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "recipe/base/expected.hpp"

namespace deepinfer::actors::http {

/// Why an image URL could not be fetched (each becomes a 400 naming the field).
struct fetch_error {
  enum class kind : uint8_t {
    bad_url,            ///< not an absolute http(s) URL we can parse
    refused_address,    ///< resolves only to private / loopback addresses and those are refused
    unreachable,        ///< DNS failed, the connection was refused or dropped
    tls,                ///< the TLS handshake or the certificate check failed
    timeout,            ///< the whole fetch (redirects included) took longer than the limit
    too_large,          ///< the body is larger than the limit (by Content-Length or as read)
    not_image,          ///< the origin answered with a Content-Type other than image/*
    http_status,        ///< the origin answered a status other than 2xx (after redirects)
    too_many_redirects, ///< more redirects than the limit, or one without a usable Location
  };
  kind what = kind::unreachable;
  /// What went wrong, for the client: a sentence fragment without the URL.
  std::string message;
};

/// The fetched body (the image file's bytes) or why there is none.
using fetch_result = expected<std::string, fetch_error>;

/// Whether URLs may name private, loopback and link-local addresses.
enum class private_addresses : uint8_t { allow, refuse };

/// Fetches http(s) image URLs for the entrypoint (issue 21) with a Boost.Beast client on its own
/// io_context thread, so neither an HTTP I/O thread nor a CAF worker ever waits on the network:
/// `fetch` returns at once and calls `done` on the fetcher's thread. Each fetch is bounded by a
/// total time limit (redirects included), a body size limit (checked against Content-Length
/// before the body is read, then as it is read), and a redirect limit; it refuses non-image
/// Content-Types and non-2xx answers. https verifies the peer's certificate chain and host name
/// against the system's CA store (OpenSSL's default paths) unless `ca_file` names another.
/// Thread-safe. The destructor stops the thread: fetches still in flight end without `done`.
class image_fetcher {
public:
  struct config {
    /// Largest body accepted, in bytes.
    int64_t max_bytes = int64_t{16} << 20;
    /// The whole fetch, from resolving the first URL to the last body byte.
    std::chrono::milliseconds timeout{10000};
    /// Redirects (301, 302, 303, 307, 308) followed, at most.
    int max_redirects = 3;
    /// Private (RFC 1918, unique-local), loopback, link-local and unspecified addresses: allowed
    /// by default (tests and single-host setups fetch from loopback); `refuse` for an
    /// entrypoint that faces the internet, so clients cannot make it probe the inside network.
    private_addresses private_hosts = private_addresses::allow;
    /// PEM bundle of trusted CAs for https; empty: the system store.
    std::string ca_file;
    /// The User-Agent header sent.
    std::string user_agent = "deepinfer-caf";
  };

  explicit image_fetcher(const config& cfg);
  ~image_fetcher();
  image_fetcher(const image_fetcher&) = delete;
  image_fetcher& operator=(const image_fetcher&) = delete;

  /// Starts fetching `url` (http or https); `done` runs once, on the fetcher's thread, with the
  /// body or the error. It must not block (hand the result to an actor).
  void fetch(std::string url, std::function<void(fetch_result)> done);

  const config& cfg() const { return cfg_; }

private:
  struct impl;
  config cfg_;
  std::unique_ptr<impl> impl_;
};

} // namespace deepinfer::actors::http
