#pragma once

#include "recipe/json_parse.hpp"
#include "recipe/protocol/api_error.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace deepinfer::recipe {

using json = nlohmann::ordered_json;

/// Thrown by `json_reader` while validating; the `parse_*_request` functions catch it at their edge
/// and return it as an `api_error` value.
struct invalid_request : std::runtime_error {
  invalid_request(std::string path, const std::string& what) : std::runtime_error(what), path(std::move(path)) {}
  std::string path;
};

/// A field path in one API's notation: OpenAI writes `messages[0].content`, Anthropic
/// `messages.0.content`. It also carries the JSON limits of the parse it belongs to, so JSON
/// nested in strings (tool-call arguments) is checked under the same limits as the body.
class json_path {
public:
  explicit json_path(api_kind api, json_limits limits = {}) : api_(api), limits_(limits) {}

  json_path operator/(std::string_view key) const;
  json_path operator/(std::size_t index) const;
  const std::string& str() const noexcept { return text_; }
  const json_limits& limits() const noexcept { return limits_; }
  api_kind api() const noexcept { return api_; }

  /// Throws `invalid_request` for this path.
  [[noreturn]] void fail(const std::string& message) const { throw invalid_request(text_, message); }

private:
  api_kind api_;
  json_limits limits_;
  std::string text_;
};

/// Typed, validating access to request fields; every failure names the field path.
/// Absent and `null` fields read as absent.
namespace json_reader {

/// The field or nullptr when absent or null. Precondition: `obj` is an object.
const json* find(const json& obj, std::string_view key);
/// Requires `v` to be an object.
const json& object(const json& v, const json_path& at);
/// Requires `v` to be an array.
const json& array(const json& v, const json_path& at);
std::string string(const json& v, const json_path& at);
/// Optional string field of `obj`.
std::optional<std::string> opt_string(const json& obj, std::string_view key, const json_path& at);
/// Required string field of `obj`.
std::string req_string(const json& obj, std::string_view key, const json_path& at);
std::optional<bool> opt_bool(const json& obj, std::string_view key, const json_path& at);
/// Optional number in [lo, hi].
std::optional<double> opt_number(const json& obj, std::string_view key, const json_path& at, double lo, double hi);
/// Optional integer in [lo, hi].
std::optional<std::int64_t> opt_int(const json& obj, std::string_view key, const json_path& at, std::int64_t lo,
                                    std::int64_t hi);
/// Requires `value` to be one of `allowed`; the message lists them like the APIs do.
void one_of(const std::string& value, std::initializer_list<std::string_view> allowed, const json_path& at);
/// `stop`: a string or an array of at most `max` strings.
std::vector<std::string> stop_list(const json& v, const json_path& at, std::size_t max);

} // namespace json_reader

/// Parses a request body under `limits` (parse_json); throws `invalid_request` (empty path) when
/// it is not a JSON object or breaks a limit.
json parse_body(std::string_view body, api_kind api, const json_limits& limits);

/// Turns an `invalid_request` into the API's error value.
api_error to_api_error(const invalid_request& e, api_kind api);

/// Runs `parse(const json&)` on a body given as text or as parsed JSON, turning the validation
/// exception into the API's error value (the parse edge of STYLE.md §6).
/// `parse(const json&, const json_path& root)` gets the root path, which carries `limits`.
template <class Result, class Parse>
Result guarded_parse(api_kind api, const json_limits& limits, const json* parsed, std::string_view text,
                     Parse&& parse) {
  const json_path root(api, limits);
  try {
    if (parsed) {
      json_reader::object(*parsed, root);
      return parse(*parsed, root);
    }
    return parse(parse_body(text, api, limits), root);
  } catch (const invalid_request& e) {
    return to_api_error(e, api);
  }
}

} // namespace deepinfer::recipe
