#include "actors/http/api_keys.hpp"

#include <fstream>

#include "actors/http/request_checks.hpp"

namespace deepinfer::actors::http {

bool key_allows(const api_keys* keys, const http_request& req, response_writer& w, recipe::api_kind api,
                std::string* key) {
  if (!keys || !keys->required())
    return true;
  auto given = api_key_of(req);
  const bool ok = keys->accepts(given);
  const bool empty = given.empty();
  if (key)
    *key = std::move(given);
  if (ok)
    return true;
  recipe::api_error e;
  e.api = api;
  e.status = 401;
  e.type = api == recipe::api_kind::messages ? "authentication_error" : "invalid_request_error";
  e.code = "invalid_api_key";
  e.message = empty ? "No API key provided; send it as 'Authorization: Bearer KEY' or 'x-api-key: KEY'."
                    : "Incorrect API key provided; use one of the keys this server is configured with.";
  w.send_json(401, e.body());
  return false;
}

api_keys_file_result read_api_keys_file(const std::string& path) {
  api_keys_file_result r;
  std::ifstream in{path};
  if (!in) {
    r.error = "cannot read the API keys file " + path + "; check that it exists and this user may read it";
    return r;
  }
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    auto b = line.find_first_not_of(" \t\r");
    if (b == std::string::npos || line[b] == '#')
      continue;
    auto e = line.find_last_not_of(" \t\r");
    auto key = line.substr(b, e - b + 1);
    if (key.size() < 8 || key.find_first_of(" \t") != std::string::npos) {
      r.error = "the API keys file " + path + ", line " + std::to_string(n) +
                ": a key needs at least 8 characters and no spaces (one key per line)";
      r.keys.clear();
      return r;
    }
    r.keys.push_back(std::move(key));
  }
  return r;
}

api_keys::api_keys(std::vector<std::string> fixed, std::string file)
  : fixed_(std::move(fixed)), file_(std::move(file)), keys_(std::make_shared<std::vector<std::string>>(fixed_)) {}

std::optional<std::string> api_keys::reload() {
  if (file_.empty())
    return std::nullopt;
  auto r = read_api_keys_file(file_);
  if (!r.error.empty())
    return r.error;
  auto all = std::make_shared<std::vector<std::string>>(fixed_);
  all->insert(all->end(), r.keys.begin(), r.keys.end());
  std::lock_guard guard{mtx_};
  keys_ = std::move(all);
  return std::nullopt;
}

std::shared_ptr<const std::vector<std::string>> api_keys::current() const {
  std::lock_guard guard{mtx_};
  return keys_;
}

// A keys file that lists no key yet still means "keys required": an operator who set one
// never wants an open server because the file was empty at start.
bool api_keys::required() const { return !file_.empty() || !current()->empty(); }

bool api_keys::accepts(std::string_view key) const { return !key.empty() && key_matches(key, *current()); }

std::size_t api_keys::size() const { return current()->size(); }

} // namespace deepinfer::actors::http
