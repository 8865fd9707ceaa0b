#include "recipe/json_parse.hpp"

#include <functional>
#include <iterator>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

namespace deepinfer::recipe {

namespace {

using json = nlohmann::ordered_json;

/// Objects with at least this many keys find duplicates through a hash index, smaller ones by
/// comparing keys.
constexpr std::size_t indexed_keys = 16;

/// nlohmann's SAX interface, building the value bottom-up: each open array or object collects its
/// children in a vector of its own and becomes a json value once, at its end.
class builder {
public:
  explicit builder(const json_limits& limits) : limits_(limits) {}

  bool null() { return add(json(nullptr)); }
  bool boolean(bool v) { return add(json(v)); }
  bool number_integer(json::number_integer_t v) { return add(json(v)); }
  bool number_unsigned(json::number_unsigned_t v) { return add(json(v)); }
  bool number_float(json::number_float_t v, const json::string_t&) { return add(json(v)); }
  bool string(json::string_t& v) { return add(json(std::move(v))); }
  bool binary(json::binary_t& v) { return add(json(json::binary_t(std::move(v)))); }

  bool start_object(std::size_t) { return open(true); }
  bool start_array(std::size_t) { return open(false); }

  bool key(json::string_t& k) {
    auto& f = frames_[depth_ - 1];
    f.slot = find_key(f, k);
    if (!f.slot) {
      f.slot = f.members.size();
      if (f.members.size() >= indexed_keys) {
        if (f.index.empty())
          for (std::size_t i = 0; i < f.members.size(); ++i)
            f.index.emplace(hash(f.members[i].first), i);
        f.index.emplace(hash(k), f.members.size());
      }
      f.members.emplace_back(std::move(k), json());
    }
    return true;
  }

  bool end_object() {
    auto& f = frames_[--depth_];
    json v(json::value_t::object);
    v.get_ref<json::object_t&>() =
      json::object_t(std::make_move_iterator(f.members.begin()), std::make_move_iterator(f.members.end()));
    f.members.clear();
    f.index.clear();
    return add(std::move(v));
  }

  bool end_array() {
    auto& f = frames_[--depth_];
    json v(json::value_t::array);
    v.get_ref<json::array_t&>() = std::move(f.items);
    f.items = {};
    return add(std::move(v));
  }

  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& e) {
    error_.what = json_parse_error::kind::syntax;
    error_.position = position;
    std::string what = e.what();
    // "[json.exception.parse_error.101] parse error at line 1, column 9: syntax error ..." -> the
    // part after the location, which says what was expected.
    if (auto at = what.find(": "); at != std::string::npos)
      what = what.substr(at + 2);
    error_.message = "invalid JSON at byte " + std::to_string(position) + ": " + what;
    return false;
  }

  /// Set when a nesting limit stopped the parse (then the SAX parser reports no error itself).
  std::optional<json_parse_error> too_deep;
  json root;

  json_parse_error& error() { return error_; }

private:
  struct frame {
    bool object = false;
    std::vector<json> items;
    std::vector<std::pair<std::string, json>> members;
    std::unordered_multimap<std::size_t, std::size_t> index; // key hash -> member
    std::optional<std::size_t> slot;                          // member the next value fills
  };

  static std::size_t hash(std::string_view s) { return std::hash<std::string_view>{}(s); }

  std::optional<std::size_t> find_key(const frame& f, std::string_view k) const {
    if (f.index.empty()) {
      for (std::size_t i = 0; i < f.members.size(); ++i)
        if (f.members[i].first == k)
          return i;
      return std::nullopt;
    }
    auto [b, e] = f.index.equal_range(hash(k));
    for (auto it = b; it != e; ++it)
      if (f.members[it->second].first == k)
        return it->second;
    return std::nullopt;
  }

  bool open(bool object) {
    if (depth_ >= limits_.max_depth) {
      json_parse_error err;
      err.what = json_parse_error::kind::too_deep;
      err.message = "the JSON nests deeper than " + std::to_string(limits_.max_depth) +
                    " levels of arrays and objects; flatten it to at most " + std::to_string(limits_.max_depth) +
                    " levels";
      too_deep = std::move(err);
      return false;
    }
    if (frames_.size() == depth_)
      frames_.emplace_back();
    frames_[depth_].object = object;
    ++depth_;
    return true;
  }

  bool add(json v) {
    if (depth_ == 0) {
      root = std::move(v);
      return true;
    }
    auto& f = frames_[depth_ - 1];
    if (f.object)
      f.members[*f.slot].second = std::move(v);
    else
      f.items.push_back(std::move(v));
    return true;
  }

  json_limits limits_;
  std::vector<frame> frames_;
  std::size_t depth_ = 0;
  json_parse_error error_;
};

} // namespace

expected<nlohmann::ordered_json, json_parse_error> parse_json(std::string_view text, const json_limits& limits) {
  builder b{limits};
  const bool ok = json::sax_parse(text.begin(), text.end(), &b, json::input_format_t::json, true, false);
  if (ok)
    return std::move(b.root);
  if (b.too_deep)
    return std::move(*b.too_deep);
  return std::move(b.error());
}

} // namespace deepinfer::recipe
