#pragma once

// Strict reading of a flat JSON object of settings (a model's config.json, the simulator's
// --config): every key is read by name, and a key nothing read is reported, so a typo such as
// "hiden" is an error rather than a default the file meant to change.

#include <optional>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

namespace deepinfer {

/// Reads the keys of one JSON object into fields and remembers which keys it was asked for.
class json_fields {
public:
  /// `object` must outlive this reader and be a JSON object.
  explicit json_fields(const nlohmann::json& object) : object_(object) {}

  /// Reads `key` into `field` when the object has it (nlohmann's `get_to`: a value of the wrong
  /// type throws its `type_error`); returns whether it had it. Either way `key` is known.
  template <class T>
  bool get(const std::string& key, T& field) {
    known_.insert(key);
    if (!object_.contains(key))
      return false;
    object_.at(key).get_to(field);
    return true;
  }

  /// Marks `key` as known without reading it (one read elsewhere, or by hand).
  void allow(const std::string& key) { known_.insert(key); }

  /// The first key of the object (in its order) that no `get` or `allow` named.
  std::optional<std::string> unknown_key() const {
    for (auto it = object_.begin(); it != object_.end(); ++it)
      if (!known_.contains(it.key()))
        return it.key();
    return std::nullopt;
  }

  /// The known keys, sorted and comma-separated, for an error that lists them.
  std::string known_keys() const {
    std::string list;
    for (const auto& k : known_)
      list += (list.empty() ? "" : ", ") + k;
    return list;
  }

private:
  const nlohmann::json& object_;
  std::set<std::string> known_;
};

} // namespace deepinfer
