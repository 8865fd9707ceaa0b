#include "launcher/toml_reader.hpp"

namespace deepinfer::launcher {

namespace {

int line_of(const toml::node* node) {
  return node ? static_cast<int>(node->source().begin.line) : 0;
}

const char* type_name(const toml::node& n) {
  switch (n.type()) {
    case toml::node_type::string: return "a string";
    case toml::node_type::integer: return "an integer";
    case toml::node_type::floating_point: return "a float";
    case toml::node_type::boolean: return "a boolean";
    case toml::node_type::array: return "an array";
    case toml::node_type::table: return "a table";
    default: return "a date/time";
  }
}

} // namespace

toml_reader::toml_reader(const toml::table& table, std::string prefix, const std::string& file)
  : table_(&table), prefix_(std::move(prefix)), file_(&file) {
  // nop
}

std::string toml_reader::path(const std::string& key) const {
  return prefix_.empty() ? key : prefix_ + "." + key;
}

int toml_reader::line() const {
  auto l = line_of(table_);
  return l > 0 ? l : 1;
}

const toml::node* toml_reader::find(const std::string& key) {
  read_.insert(key);
  return table_->get(key);
}

void toml_reader::fail_at(const toml::node* node, const std::string& key,
                          const std::string& message) const {
  auto l = line_of(node);
  throw manifest_error{*file_, l > 0 ? l : line(), path(key), message};
}

void toml_reader::fail(const std::string& key, const std::string& message) const {
  fail_at(table_->get(key), key, message);
}

void toml_reader::fail_element(const std::string& key, size_t index, const std::string& message) const {
  const toml::node* n = table_->get(key);
  if (auto* arr = n ? n->as_array() : nullptr; arr && index < arr->size())
    n = arr->get(index);
  fail_at(n, key + "[" + std::to_string(index) + "]", message);
}

std::optional<std::string> toml_reader::string(const std::string& key) {
  auto* n = find(key);
  if (!n)
    return std::nullopt;
  if (!n->is_string())
    fail_at(n, key, std::string{"expected a string, got "} + type_name(*n));
  return n->as_string()->get();
}

std::optional<int64_t> toml_reader::integer(const std::string& key, int64_t min, int64_t max) {
  auto* n = find(key);
  if (!n)
    return std::nullopt;
  if (!n->is_integer())
    fail_at(n, key, std::string{"expected an integer, got "} + type_name(*n));
  auto v = n->as_integer()->get();
  if (v < min || v > max)
    fail_at(n, key, "must be between " + std::to_string(min) + " and " + std::to_string(max)
                      + ", got " + std::to_string(v));
  return v;
}

std::optional<double> toml_reader::number(const std::string& key, double min, double max) {
  auto* n = find(key);
  if (!n)
    return std::nullopt;
  double v = 0;
  if (n->is_integer())
    v = static_cast<double>(n->as_integer()->get());
  else if (n->is_floating_point())
    v = n->as_floating_point()->get();
  else
    fail_at(n, key, std::string{"expected a number, got "} + type_name(*n));
  if (v < min || v > max)
    fail_at(n, key, "must be between " + std::to_string(min) + " and " + std::to_string(max)
                      + ", got " + std::to_string(v));
  return v;
}

std::optional<bool> toml_reader::boolean(const std::string& key) {
  auto* n = find(key);
  if (!n)
    return std::nullopt;
  if (!n->is_boolean())
    fail_at(n, key, std::string{"expected true or false, got "} + type_name(*n));
  return n->as_boolean()->get();
}

std::optional<std::vector<std::string>> toml_reader::strings(const std::string& key) {
  auto* n = find(key);
  if (!n)
    return std::nullopt;
  if (!n->is_array())
    fail_at(n, key, std::string{"expected an array of strings, got "} + type_name(*n));
  std::vector<std::string> out;
  size_t i = 0;
  for (auto& e : *n->as_array()) {
    if (!e.is_string())
      fail_at(&e, key + "[" + std::to_string(i) + "]",
              std::string{"expected a string, got "} + type_name(e));
    out.push_back(e.as_string()->get());
    ++i;
  }
  return out;
}

std::optional<std::vector<int64_t>> toml_reader::integers(const std::string& key, int64_t min,
                                                          int64_t max) {
  auto* n = find(key);
  if (!n)
    return std::nullopt;
  if (!n->is_array())
    fail_at(n, key, std::string{"expected an array of integers, got "} + type_name(*n));
  std::vector<int64_t> out;
  size_t i = 0;
  for (auto& e : *n->as_array()) {
    auto k = key + "[" + std::to_string(i++) + "]";
    if (!e.is_integer())
      fail_at(&e, k, std::string{"expected an integer, got "} + type_name(e));
    auto v = e.as_integer()->get();
    if (v < min || v > max)
      fail_at(&e, k, "must be between " + std::to_string(min) + " and " + std::to_string(max));
    out.push_back(v);
  }
  return out;
}

std::optional<toml_reader> toml_reader::table(const std::string& key) {
  auto* n = find(key);
  if (!n)
    return std::nullopt;
  if (!n->is_table())
    fail_at(n, key, std::string{"expected a table, got "} + type_name(*n));
  return toml_reader{*n->as_table(), path(key), *file_};
}

std::vector<toml_reader> toml_reader::tables(const std::string& key) {
  std::vector<toml_reader> out;
  auto* n = find(key);
  if (!n)
    return out;
  if (!n->is_array_of_tables())
    fail_at(n, key, "expected an array of tables ([[" + path(key) + "]])");
  size_t i = 0;
  for (auto& e : *n->as_array())
    out.emplace_back(*e.as_table(), path(key) + "[" + std::to_string(i++) + "]", *file_);
  return out;
}

void toml_reader::finish() const {
  for (auto&& [k, v] : *table_) {
    std::string key{k.str()};
    if (!read_.count(key)) {
      auto l = static_cast<int>(k.source().begin.line);
      throw manifest_error{*file_, l > 0 ? l : line_of(&v), path(key),
                           "unknown key (check its spelling; see examples/*.toml for every key)"};
    }
  }
}

} // namespace deepinfer::launcher
