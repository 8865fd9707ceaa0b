#pragma once

// Test and bench only (no .cpp: never part of the library): a deterministic multilingual corpus
// built from files a Debian 12 machine with the project's packages has (vim docs, /usr/share/doc,
// gettext catalogs, C/C++ headers, the Python stdlib, JSON files) plus generated edge cases,
// cut into records of 1..3000 bytes. Missing sources are replaced by generated text.

#include "recipe/tokenizer/utf8.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace deepinfer::recipe::test {

/// splitmix64: the same numbers on every platform (std distributions are not portable).
class rng {
public:
  explicit rng(std::uint64_t seed) : s_(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (s_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  /// Uniform in [lo, hi].
  std::uint64_t between(std::uint64_t lo, std::uint64_t hi) { return lo + next() % (hi - lo + 1); }
  template <class T> const T& pick(const std::vector<T>& v) { return v[next() % v.size()]; }

private:
  std::uint64_t s_;
};

inline void append_utf8(std::string& out, char32_t c) {
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xE0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  }
}

namespace corpus_detail {

inline std::string read_file(const std::filesystem::path& p, std::size_t max) {
  std::ifstream in{p, std::ios::binary};
  std::string s(max, '\0');
  in.read(s.data(), static_cast<std::streamsize>(max));
  s.resize(static_cast<std::size_t>(in.gcount()));
  return s;
}

// Sorted regular files under `dir` whose name ends with one of `exts` (non-recursive unless asked).
inline std::vector<std::filesystem::path> files(const std::filesystem::path& dir, std::vector<std::string> exts, bool recursive) {
  std::vector<std::filesystem::path> out;
  std::error_code ec;
  auto take = [&](const std::filesystem::directory_entry& e) {
    if (!e.is_regular_file(ec))
      return;
    const std::string name = e.path().filename().string();
    for (const auto& x : exts)
      if (name.size() >= x.size() && name.compare(name.size() - x.size(), x.size(), x) == 0) {
        out.push_back(e.path());
        return;
      }
  };
  if (recursive) {
    for (std::filesystem::recursive_directory_iterator it{dir, ec}, end; !ec && it != end; it.increment(ec))
      take(*it);
  } else {
    for (std::filesystem::directory_iterator it{dir, ec}, end; !ec && it != end; it.increment(ec))
      take(*it);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The translations of a gettext catalog, plural forms on separate lines.
inline std::string mo_strings(const std::string& mo) {
  auto u32 = [&](std::size_t off) {
    std::uint32_t v = 0;
    if (off + 4 <= mo.size())
      std::memcpy(&v, mo.data() + off, 4);
    return v;
  };
  std::string out;
  if (mo.size() < 28 || u32(0) != 0x950412de)
    return out;
  const std::uint32_t n = u32(8), table = u32(16);
  for (std::uint32_t i = 1; i < n; ++i) { // entry 0 is the catalog header
    const std::uint32_t len = u32(table + 8 * i), off = u32(table + 8 * i + 4);
    if (static_cast<std::size_t>(off) + len > mo.size())
      break;
    std::string s = mo.substr(off, len);
    std::replace(s.begin(), s.end(), '\0', '\n');
    out += s;
    out += '\n';
  }
  return out;
}

// Valid UTF-8 of `s` (invalid subparts replaced), at most `max` bytes, cut on a code point.
inline std::string clean(const std::string& s, std::size_t max) {
  std::string out;
  utf8::append_lossy(out, s.substr(0, std::min(s.size(), max + 4)));
  std::size_t n = std::min(out.size(), max);
  while (n > 0 && n < out.size() && (static_cast<unsigned char>(out[n]) & 0xC0) == 0x80)
    --n;
  out.resize(n);
  return out;
}

// Concatenated text of `paths` up to `quota` bytes, each file contributing at most `per_file`.
inline std::string gather(const std::vector<std::filesystem::path>& paths, std::size_t quota, std::size_t per_file, bool mo = false) {
  std::string out;
  for (const auto& p : paths) {
    if (out.size() >= quota)
      break;
    std::string s = mo ? mo_strings(read_file(p, 4 << 20)) : read_file(p, per_file);
    out += clean(s, std::min(per_file, quota - out.size()));
    out += '\n';
  }
  return out;
}

} // namespace corpus_detail

/// Generated edge cases: emoji and ZWJ sequences, combining marks, digit runs, every kind of
/// whitespace run, CR/LF mixes, ASCII punctuation soup, special-token spellings, long runs and
/// random code points (BMP and astral, no surrogates).
inline std::string generated_text(std::size_t bytes, std::uint64_t seed) {
  rng r{seed};
  const std::vector<std::string> emoji{"😀", "👍", "👍🏽", "👨‍👩‍👧‍👦", "🏳️‍🌈", "🧑🏿‍💻", "❤️", "🇯🇵", "🇺🇸", "1️⃣", "#️⃣", "🤷‍♀️", "🐕‍🦺",
                                       "✨", "🚀", "©", "™", "☃", "🫠", "👩‍❤️‍💋‍👨"};
  const std::vector<std::string> words{"hello", "world", "The", "token", "naïve", "café", "Straße", "日本語", "中文", "カタカナ",
                                       "ひらがな", "한국어", "русский", "ελληνικά", "עברית", "العربية", "हिन्दी", "ไทย", "tiếng",
                                       "a.append", "x_1", "'s", "don't", "foo-bar", "<｜User｜>", "</think>", "<think>", "｜DSML｜",
                                       "<｜end▁of▁sentence｜>", "<|EOT|>", "<dsml:", "〇", "龥", "龦", "゠", "・", "ー", "ゝ"};
  const std::vector<char32_t> spaces{'\t', '\n', 0x0B, 0x0C, '\r', ' ', 0x85, 0xA0, 0x1680, 0x2000, 0x2001, 0x2002, 0x2003,
                                     0x2004, 0x2005, 0x2006, 0x2007, 0x2008, 0x2009, 0x200A, 0x2028, 0x2029, 0x202F, 0x205F,
                                     0x3000, 0x200B, 0x180E, 0xFEFF, 0x1C, 0x1D, 0x1E, 0x1F};
  const std::vector<char32_t> digits{'0', '7', 0xFF10, 0xFF19, 0x0660, 0x0669, 0x0966, 0x00B2, 0x00BD, 0x2167, 0x2460, 0x3007,
                                     0x1D7CE, 0x10107, 0x2070};
  const std::vector<std::string> breaks{"\n", "\r\n", "\r", "\n\r", "\r\r\n", "\n\n", " \n", "\t\r\n", "\u3000\n", " \r\n \t\n"};
  std::string out;
  while (out.size() < bytes) {
    switch (r.between(0, 11)) {
      case 0: // emoji, sometimes glued to words
        for (auto k = r.between(1, 6); k > 0; --k)
          out += r.pick(emoji) + (r.between(0, 2) == 0 ? r.pick(words) : "");
        break;
      case 1: { // base characters with stacked combining marks, and marks with no base
        const std::vector<char32_t> bases{'a', 'e', ' ', '1', '.', 0x0915, 0x0E01, 0x05D0, 0x0627, 0x1100, 0x3042};
        const std::vector<char32_t> marks{0x0300, 0x0301, 0x0308, 0x0327, 0x036F, 0x093F, 0x094D, 0x0E34, 0x0E48, 0x05B0, 0x064E,
                                          0x1161, 0x3099, 0x20DD, 0xFE0F, 0x1DC0};
        for (auto k = r.between(1, 8); k > 0; --k) {
          if (r.between(0, 3) != 0)
            append_utf8(out, r.pick(bases));
          for (auto m = r.between(1, 3); m > 0; --m)
            append_utf8(out, r.pick(marks));
        }
        break;
      }
      case 2: // digit runs of every length, mixed numerals
        for (auto k = r.between(1, 4); k > 0; --k) {
          for (auto d = r.between(1, 20); d > 0; --d)
            out += static_cast<char>('0' + r.between(0, 9));
          if (r.between(0, 1))
            append_utf8(out, r.pick(digits));
          out += r.pick(std::vector<std::string>{"", ".", ",", " ", "abc", "px", "%", "中", "\n", "e-"});
        }
        break;
      case 3: // whitespace runs of every kind, then a word or punctuation or the end
        for (auto k = r.between(1, 5); k > 0; --k) {
          for (auto w = r.between(1, 6); w > 0; --w)
            append_utf8(out, r.pick(spaces));
          out += r.pick(std::vector<std::string>{"x", "word", ".", "(", "中", "1", "", "é", "\u0301"});
        }
        break;
      case 4: // CR/LF mixes after words, punctuation and spaces
        for (auto k = r.between(1, 6); k > 0; --k)
          out += r.pick(std::vector<std::string>{"end", "};", "\"", "x ", " ", ">", "", "。"}) + r.pick(breaks);
        break;
      case 5: // printable ASCII soup: punctuation + letters (the first alternative)
        for (auto k = r.between(5, 60); k > 0; --k)
          out += static_cast<char>(r.between(0, 3) == 0 ? r.between(0x21, 0x2F) : r.between(0x20, 0x7E));
        break;
      case 6: // random code points anywhere (no surrogates)
        for (auto k = r.between(1, 24); k > 0; --k) {
          char32_t c = static_cast<char32_t>(r.between(0, 3) == 0 ? r.between(0x80, 0xFFFF) : r.between(0x20, 0x10FFFF));
          if (c >= 0xD800 && c <= 0xDFFF)
            c = 0xFFFD;
          append_utf8(out, c);
        }
        break;
      case 7: // random code points from the blocks that matter (Latin to CJK)
        for (auto k = r.between(1, 24); k > 0; --k)
          append_utf8(out, static_cast<char32_t>(r.between(0, 1) ? r.between(0x00A0, 0x33FF) : r.between(0x4DB0, 0xA000)));
        break;
      case 8: // words with spaces and punctuation between
        for (auto k = r.between(2, 12); k > 0; --k)
          out += r.pick(words) + r.pick(std::vector<std::string>{" ", "  ", "", ", ", ". ", "\t", "-", "\u00A0", "!?"});
        break;
      case 9: { // JSON-ish fragments
        out += "{\"id\": " + std::to_string(r.between(0, 1u << 31)) + ", \"name\": \"" + r.pick(words) +
               "\", \"tags\": [\"a\", \"b\"], \"ok\": true, \"v\": -" + std::to_string(r.between(0, 999)) + ".5e" +
               std::to_string(r.between(0, 9)) + "}" + r.pick(breaks);
        break;
      }
      case 10: // long runs (exercise the long-piece BPE path)
        if (r.between(0, 7) == 0) {
          const std::string unit = r.pick(std::vector<std::string>{" ", "a", "ab", "=", "\n", "é", "中", "-_", "xyz", "\t"});
          for (auto n = r.between(50, 1200); n > 0; --n)
            out += unit;
        }
        break;
      default: // random lowercase "words" of every length
        for (auto n = r.between(1, 200); n > 0; --n)
          out += static_cast<char>(r.between(0, 6) == 0 ? ' ' : 'a' + r.between(0, 25));
        break;
    }
  }
  return out;
}

/// The corpus as records (each valid UTF-8, 1..3000 bytes, many with line breaks), in total at
/// least `min_bytes`.
inline std::vector<std::string> build_corpus(std::size_t min_bytes, std::uint64_t seed = 42) {
  namespace cd = corpus_detail;
  const std::size_t share = min_bytes / 6 + 1;
  std::vector<std::string> sources;
  // English prose: vim documentation, then package documentation.
  auto english = cd::gather(cd::files("/usr/share/vim/vim90/doc", {".txt"}, false), share, 60000);
  if (english.size() < share)
    english += cd::gather(cd::files("/usr/share/doc", {"README", "copyright", ".md", ".txt"}, true), share - english.size(), 20000);
  sources.push_back(english);
  // Chinese, Japanese, Korean, Russian, Arabic, Hindi, Thai, Vietnamese message catalogs.
  std::string intl;
  for (const char* lang : {"zh_CN", "ja", "zh_TW", "ko", "ru", "ar", "hi", "th", "vi", "el", "he"})
    intl += cd::gather(cd::files(std::string{"/usr/share/locale/"} + lang + "/LC_MESSAGES", {".mo"}, false), share / 8, 1 << 20, true);
  sources.push_back(intl);
  // Code: C and C++ headers, Python.
  std::string code = cd::gather(cd::files("/usr/include/c++/12/bits", {".h"}, false), share / 2, 30000);
  code += cd::gather(cd::files("/usr/lib/python3.11", {".py"}, false), share / 2, 30000);
  sources.push_back(code);
  // JSON from the system.
  sources.push_back(cd::gather(cd::files("/usr/share/cmake-3.25", {".json"}, true), share / 2, 40000));
  // Generated edge cases make up the rest.
  std::size_t have = 0;
  for (const auto& s : sources)
    have += s.size();
  sources.push_back(generated_text(std::max(min_bytes > have ? min_bytes - have : 0, share), seed));

  rng r{seed ^ 0xC0FFEE};
  std::vector<std::string> records;
  for (const auto& s : sources) {
    for (std::size_t pos = 0; pos < s.size();) {
      std::size_t len = r.between(0, 9) == 0 ? r.between(1, 40) : r.between(40, 3000);
      std::size_t end = std::min(s.size(), pos + len);
      while (end < s.size() && (static_cast<unsigned char>(s[end]) & 0xC0) == 0x80)
        ++end;
      records.push_back(s.substr(pos, end - pos));
      pos = end;
    }
  }
  return records;
}

} // namespace deepinfer::recipe::test
