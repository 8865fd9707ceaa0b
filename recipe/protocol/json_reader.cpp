#include "recipe/protocol/json_reader.hpp"

#include <cmath>

namespace deepinfer::recipe {

json_path json_path::operator/(std::string_view key) const {
  json_path p = *this;
  if (!p.text_.empty())
    p.text_ += '.';
  p.text_ += key;
  return p;
}

json_path json_path::operator/(std::size_t index) const {
  json_path p = *this;
  if (api_ == api_kind::messages) {
    p.text_ += '.';
    p.text_ += std::to_string(index);
  } else {
    p.text_ += '[';
    p.text_ += std::to_string(index);
    p.text_ += ']';
  }
  return p;
}

namespace json_reader {

namespace {

const char* type_name(const json& v) {
  switch (v.type()) {
    case json::value_t::object: return "an object";
    case json::value_t::array: return "an array";
    case json::value_t::string: return "a string";
    case json::value_t::boolean: return "a boolean";
    case json::value_t::null: return "null";
    default: return "a number";
  }
}

[[noreturn]] void wrong_type(const json& v, const char* want, const json_path& at) {
  at.fail(std::string("Invalid type: expected ") + want + ", but got " + type_name(v) + ".");
}

} // namespace

const json* find(const json& obj, std::string_view key) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null())
    return nullptr;
  return &*it;
}

const json& object(const json& v, const json_path& at) {
  if (!v.is_object())
    wrong_type(v, "an object", at);
  return v;
}

const json& array(const json& v, const json_path& at) {
  if (!v.is_array())
    wrong_type(v, "an array", at);
  return v;
}

std::string string(const json& v, const json_path& at) {
  if (!v.is_string())
    wrong_type(v, "a string", at);
  return v.get<std::string>();
}

std::optional<std::string> opt_string(const json& obj, std::string_view key, const json_path& at) {
  const json* v = find(obj, key);
  if (!v)
    return std::nullopt;
  return string(*v, at / key);
}

std::string req_string(const json& obj, std::string_view key, const json_path& at) {
  const json* v = find(obj, key);
  if (!v) {
    // Each API's own words: Anthropic's validator says "Field required" after the path.
    const auto p = at / key;
    p.fail(at.api() == api_kind::messages ? std::string{"Field required"}
                                          : "Missing required parameter: '" + p.str() + "'.");
  }
  return string(*v, at / key);
}

std::optional<bool> opt_bool(const json& obj, std::string_view key, const json_path& at) {
  const json* v = find(obj, key);
  if (!v)
    return std::nullopt;
  if (!v->is_boolean())
    wrong_type(*v, "a boolean", at / key);
  return v->get<bool>();
}

std::optional<double> opt_number(const json& obj, std::string_view key, const json_path& at, double lo, double hi) {
  const json* v = find(obj, key);
  if (!v)
    return std::nullopt;
  if (!v->is_number())
    wrong_type(*v, "a number", at / key);
  const double d = v->get<double>();
  if (!(d >= lo && d <= hi))
    (at / key).fail("Invalid value: " + v->dump() + ". Expected a number between " + json(lo).dump() + " and " +
                    json(hi).dump() + ".");
  return d;
}

std::optional<std::int64_t> opt_int(const json& obj, std::string_view key, const json_path& at, std::int64_t lo,
                                    std::int64_t hi) {
  const json* v = find(obj, key);
  if (!v)
    return std::nullopt;
  const bool integral = v->is_number_integer() ||
                        (v->is_number_float() && std::trunc(v->get<double>()) == v->get<double>() &&
                         std::abs(v->get<double>()) < 9e15);
  if (!integral)
    wrong_type(*v, "an integer", at / key);
  const auto i = v->is_number_unsigned() && v->get<std::uint64_t>() > static_cast<std::uint64_t>(hi)
                     ? hi + (hi < INT64_MAX ? 1 : 0)
                     : (v->is_number_float() ? static_cast<std::int64_t>(v->get<double>()) : v->get<std::int64_t>());
  if (i < lo || i > hi)
    (at / key).fail("Invalid value: " + v->dump() + ". Expected an integer between " + std::to_string(lo) +
                    " and " + std::to_string(hi) + ".");
  return i;
}

void one_of(const std::string& value, std::initializer_list<std::string_view> allowed, const json_path& at) {
  std::string list;
  for (auto a : allowed) {
    if (a == value)
      return;
    if (!list.empty())
      list += ", ";
    list += '\'';
    list += a;
    list += '\'';
  }
  at.fail("Invalid value: '" + shown_value(value) + "'. Supported values are: " + list + ".");
}

std::vector<std::string> stop_list(const json& v, const json_path& at, std::size_t max) {
  std::vector<std::string> out;
  if (v.is_string()) {
    out.push_back(v.get<std::string>());
  } else if (v.is_array()) {
    if (v.size() > max)
      at.fail("Invalid value: at most " + std::to_string(max) + " stop sequences are allowed.");
    for (std::size_t i = 0; i < v.size(); ++i)
      out.push_back(string(v[i], at / i));
  } else {
    wrong_type(v, "a string or an array of strings", at);
  }
  return out;
}

} // namespace json_reader

json parse_body(std::string_view body, api_kind api, const json_limits& limits) {
  auto j = parse_json(body, limits);
  if (!j) {
    if (j.error().what == json_parse_error::kind::too_deep)
      json_path(api).fail("The JSON body of your request is too deeply nested: " + j.error().message + ".");
    json_path(api).fail("We could not parse the JSON body of your request (" + j.error().message +
                        "). The body must be valid JSON.");
  }
  if (!j->is_object())
    json_path(api).fail("The request body must be a JSON object.");
  return std::move(*j);
}

api_error to_api_error(const invalid_request& e, api_kind api) {
  api_error err;
  err.api = api;
  err.status = 400;
  err.type = "invalid_request_error";
  err.message = e.what();
  err.param = e.path;
  return err;
}

} // namespace deepinfer::recipe
