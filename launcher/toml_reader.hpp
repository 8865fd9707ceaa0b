#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <toml++/toml.h>

#include "launcher/manifest.hpp"

namespace deepinfer::launcher {

/// Reads one TOML table with typed getters that throw `manifest_error` naming the file, line and
/// dotted key, and remembers which keys were read so `finish()` can reject the unknown ones.
/// Exceptions are allowed here: manifest parsing is an edge (STYLE §6); load_manifest catches.
class toml_reader {
public:
  toml_reader(const toml::table& table, std::string prefix, const std::string& file);

  std::optional<std::string> string(const std::string& key);
  std::optional<int64_t> integer(const std::string& key, int64_t min, int64_t max);
  std::optional<double> number(const std::string& key, double min, double max);
  std::optional<bool> boolean(const std::string& key);
  std::optional<std::vector<std::string>> strings(const std::string& key);
  std::optional<std::vector<int64_t>> integers(const std::string& key, int64_t min, int64_t max);

  /// A sub-table reader, or nullopt when the key is absent.
  std::optional<toml_reader> table(const std::string& key);
  /// The tables of an array of tables (`[[key]]`); empty when absent.
  std::vector<toml_reader> tables(const std::string& key);

  /// Throws for the first key that was never read.
  void finish() const;

  /// Throws a manifest_error about `key` (relative to this table) at its line, or the table's.
  [[noreturn]] void fail(const std::string& key, const std::string& message) const;

  /// Throws a manifest_error about element `index` of the array `key`, at that element's line.
  [[noreturn]] void fail_element(const std::string& key, size_t index, const std::string& message) const;

  /// The dotted path of `key` in this table.
  std::string path(const std::string& key) const;
  /// The line where this table starts.
  int line() const;

private:
  const toml::node* find(const std::string& key);
  [[noreturn]] void fail_at(const toml::node* node, const std::string& key,
                            const std::string& message) const;

  const toml::table* table_;
  std::string prefix_;
  const std::string* file_;
  std::set<std::string> read_;
};

} // namespace deepinfer::launcher
