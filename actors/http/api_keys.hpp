#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "actors/http/http_request.hpp"
#include "actors/http/response_writer.hpp"
#include "recipe/protocol/api_error.hpp"

namespace deepinfer::actors::http {

/// The API keys a server accepts: the fixed ones (`--api-key`, `[requests] api_keys`) plus those
/// of a keys file (`[http] api_keys_file`: one key per line; blank lines and lines starting with
/// `#` skipped), which `reload` reads again (on SIGHUP) without a restart. Shared by every route
/// that checks keys; safe to use from any thread while another reloads.
class api_keys {
public:
  api_keys() = default;
  api_keys(std::vector<std::string> fixed, std::string file);

  /// Reads the keys file again (nothing to do without one). On an error the keys stay as they
  /// were and the error (which never quotes a key) is returned.
  std::optional<std::string> reload();
  /// Whether requests need a key at all.
  bool required() const;
  /// Whether `key` is one of the keys (compared in constant time per key: see key_matches).
  bool accepts(std::string_view key) const;
  /// How many keys are accepted now.
  std::size_t size() const;
  const std::string& file() const noexcept { return file_; }

private:
  std::shared_ptr<const std::vector<std::string>> current() const;

  std::vector<std::string> fixed_;
  std::string file_;
  mutable std::mutex mtx_;
  std::shared_ptr<const std::vector<std::string>> keys_ = std::make_shared<std::vector<std::string>>();
};

/// The keys of a keys file, or why it cannot be used (unreadable, a key shorter than 8
/// characters or with spaces: by line number, never the key itself).
struct api_keys_file_result {
  std::vector<std::string> keys;
  std::string error;
};
api_keys_file_result read_api_keys_file(const std::string& path);

/// The key check of every keyed route: true when `keys` let `req` through (none configured, or
/// its key is one of them); otherwise answers 401 in the error shape of `api` (Messages:
/// Anthropic's; else OpenAI's) without echoing the key, and returns false. `key` (when given)
/// receives the request's key: its tenant.
bool key_allows(const api_keys* keys, const http_request& req, response_writer& w,
                recipe::api_kind api = recipe::api_kind::chat, std::string* key = nullptr);

} // namespace deepinfer::actors::http
