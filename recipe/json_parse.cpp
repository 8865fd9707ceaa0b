#include "recipe/json_parse.hpp"

#include <functional>
#include <iterator>
#include <optional>
#include <utility>
#include <vector>

namespace deepinfer::recipe {

namespace {

using json = nlohmann::ordered_json;

/// Objects with at least this many keys find duplicates through a hash index, smaller ones by
/// comparing keys.
constexpr std::size_t indexed_keys = 16;

/// The positions of an object's keys by hash: open addressing over one flat array (a node-based
/// map is superlinear here in practice: its cache misses grow with the object). A slot holds
/// 32 bits of the key's hash and its position + 1; 0 is free. Kept at most half full.
class key_index {
public:
  bool empty() const noexcept { return slots_.empty(); }
  void clear() {
    slots_.clear();
    used_ = 0;
  }
  /// The position of key `k` (hash `h`) among `keys(i)`, or nullopt.
  template <class KeyAt>
  std::optional<std::size_t> find(std::string_view k, std::uint32_t h, const KeyAt& key_at) const {
    if (slots_.empty())
      return std::nullopt;
    for (std::size_t i = start(h);; i = (i + 1) & mask_) {
      const std::uint64_t s = slots_[i];
      if (s == 0)
        return std::nullopt;
      const auto pos = static_cast<std::size_t>(s & 0xffffffffu) - 1;
      if (static_cast<std::uint32_t>(s >> 32) == h && key_at(pos) == k)
        return pos;
    }
  }
  void insert(std::uint32_t h, std::size_t pos) {
    if ((used_ + 1) * 2 > slots_.size())
      grow();
    place((static_cast<std::uint64_t>(h) << 32) | (pos + 1));
    ++used_;
  }

private:
  std::size_t start(std::uint32_t h) const noexcept {
    return static_cast<std::size_t>((h * 2654435769u) >> (32 - bits_));
  }
  void place(std::uint64_t s) {
    std::size_t i = start(static_cast<std::uint32_t>(s >> 32));
    while (slots_[i] != 0)
      i = (i + 1) & mask_;
    slots_[i] = s;
  }
  void grow() {
    std::vector<std::uint64_t> old;
    old.swap(slots_);
    bits_ = old.empty() ? 6 : bits_ + 1;
    slots_.assign(std::size_t{1} << bits_, 0);
    mask_ = slots_.size() - 1;
    for (const auto s : old)
      if (s != 0)
        place(s);
  }

  std::vector<std::uint64_t> slots_;
  std::size_t used_ = 0;
  std::size_t mask_ = 0;
  int bits_ = 0;
};

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
    const auto h = hash(k);
    f.slot = find_key(f, k, h);
    if (!f.slot) {
      f.slot = f.members.size();
      if (f.members.size() >= indexed_keys) {
        if (f.index.empty())
          for (std::size_t i = 0; i < f.members.size(); ++i)
            f.index.insert(hash(f.members[i].first), i);
        f.index.insert(h, f.members.size());
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
    key_index index;
    std::optional<std::size_t> slot;                          // member the next value fills
  };

  static std::uint32_t hash(std::string_view s) {
    const auto h = std::hash<std::string_view>{}(s);
    return static_cast<std::uint32_t>(h ^ (h >> 32));
  }

  std::optional<std::size_t> find_key(const frame& f, std::string_view k, std::uint32_t h) const {
    if (f.index.empty()) {
      for (std::size_t i = 0; i < f.members.size(); ++i)
        if (f.members[i].first == k)
          return i;
      return std::nullopt;
    }
    return f.index.find(k, h, [&](std::size_t i) -> std::string_view { return f.members[i].first; });
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

/// The UTF-16 code unit of the `\uXXXX` escape at `i` (text[i] is a backslash), or -1.
int escaped_unit(std::string_view text, std::size_t i) {
  if (i + 6 > text.size() || text[i] != '\\' || text[i + 1] != 'u')
    return -1;
  int v = 0;
  for (std::size_t k = i + 2; k < i + 6; ++k) {
    const char c = text[k];
    const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
    if (d < 0)
      return -1;
    v = v * 16 + d;
  }
  return v;
}

} // namespace

std::optional<std::string> replace_lone_surrogates(std::string_view text) {
  std::optional<std::string> out;
  for (std::size_t i = text.find('\\'); i != std::string_view::npos; i = text.find('\\', i)) {
    const int u = escaped_unit(text, i);
    if (u < 0) {
      i += 2; // another escape (\\, \", \n...): its second character is never an escape's start
      continue;
    }
    if (u >= 0xD800 && u <= 0xDBFF) {
      const int low = escaped_unit(text, i + 6);
      if (low >= 0xDC00 && low <= 0xDFFF) {
        i += 12;
        continue;
      }
    } else if (u < 0xDC00 || u > 0xDFFF) {
      i += 6;
      continue;
    }
    if (!out)
      out.emplace(text);
    out->replace(i, 6, "\\ufffd");
    i += 6;
  }
  return out;
}

expected<nlohmann::ordered_json, json_parse_error> parse_json(std::string_view text, const json_limits& limits) {
  const auto repaired = replace_lone_surrogates(text);
  if (repaired)
    text = *repaired;
  builder b{limits};
  const bool ok = json::sax_parse(text.begin(), text.end(), &b, json::input_format_t::json, true, false);
  if (ok)
    return std::move(b.root);
  if (b.too_deep)
    return std::move(*b.too_deep);
  return std::move(b.error());
}

} // namespace deepinfer::recipe
