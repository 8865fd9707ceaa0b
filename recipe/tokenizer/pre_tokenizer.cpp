#include "recipe/tokenizer/pre_tokenizer.hpp"

#include "recipe/tokenizer/unicode_classes.hpp"
#include "recipe/tokenizer/utf8.hpp"

#include <algorithm>
#include <cstring>

namespace deepinfer::recipe {

namespace {

constexpr std::uint16_t lm = cc_letter | cc_mark;
constexpr std::uint16_t ps = cc_punct | cc_symbol;

// Class bits for ASCII, looked up without the two-level table.
struct ascii_table {
  std::uint16_t bits[128];
  ascii_table() {
    const auto& u = unicode_classes::instance();
    for (char32_t c = 0; c < 128; ++c)
      bits[c] = u.classify(c);
  }
};

} // namespace

void pre_tokenizer::split(std::string_view text, std::vector<std::uint32_t>& ends) {
  static const ascii_table ascii;
  const auto& uni = unicode_classes::instance();
  cls_.clear();
  off_.clear();
  cls_.reserve(text.size());
  off_.reserve(text.size() + 1);
  for (std::size_t pos = 0; pos < text.size();) {
    off_.push_back(static_cast<std::uint32_t>(pos));
    const auto b = static_cast<unsigned char>(text[pos]);
    if (b < 0x80) {
      cls_.push_back(ascii.bits[b]);
      ++pos;
      continue;
    }
    const auto st = utf8::next(text, pos);
    cls_.push_back(st.st == utf8::status::valid ? uni.classify(st.cp) : 0);
    pos += st.len;
  }
  off_.push_back(static_cast<std::uint32_t>(text.size()));
  const std::size_t n = cls_.size();
  // Split 1 (\p{N}{1,3}) and split 2 (the CJK/kana run) both isolate their matches; what is left
  // between them goes to the word regex. N chunks never contain CJK-range code points, and a
  // chunk of numbers matches no word alternative, so it is one piece as it stands.
  std::size_t i = 0;
  while (i < n) {
    const auto c = cls_[i];
    std::size_t j = i + 1;
    if (c & cc_number) {
      while (j < n && (cls_[j] & cc_number))
        ++j;
      for (std::size_t k = i; k < j; k += 3)
        ends.push_back(off_[std::min(j, k + 3)]);
    } else if (c & cc_cjk) {
      while (j < n && (cls_[j] & cc_cjk))
        ++j;
      split_words(i, j, ends);
    } else {
      while (j < n && !(cls_[j] & (cc_number | cc_cjk)))
        ++j;
      split_words(i, j, ends);
    }
    i = j;
  }
}

void pre_tokenizer::split_words(std::size_t b, std::size_t e, std::vector<std::uint32_t>& ends) const {
  // Isolated split: every match is a piece and so is every non-empty gap between matches.
  std::size_t p = b;
  std::size_t gap = b;
  while (p < e) {
    const std::size_t m = match_at(p, e);
    if (m == p) {
      ++p;
      continue;
    }
    if (gap < p)
      ends.push_back(off_[p]);
    ends.push_back(off_[m]);
    p = gap = m;
  }
  if (gap < e)
    ends.push_back(off_[e]);
}

// The end of the match of the word regex starting exactly at p within [p, e), or p if none:
//   [ascii punct][A-Za-z]+ | [^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+ | ?[\p{P}\p{S}]+[\r\n]*
//   | \s*[\r\n]+ | \s+(?!\S) | \s+
std::size_t pre_tokenizer::match_at(std::size_t p, std::size_t e) const noexcept {
  const std::uint16_t* cls = cls_.data();
  const auto c = cls[p];
  const auto next = p + 1 < e ? cls[p + 1] : std::uint16_t{0};
  std::size_t j;
  // 1. one ASCII punctuation character followed by ASCII letters
  if ((c & cc_ascii_punct) && (next & cc_ascii_alpha)) {
    for (j = p + 2; j < e && (cls[j] & cc_ascii_alpha); ++j) {
    }
    return j;
  }
  // 2. optional non-(CR LF L P S) character, then letters/marks. A mark is in both classes, so
  //    with or without the optional character the match is the whole letter/mark run.
  if (!(c & (cc_crlf | cc_letter | ps)) && (next & lm))
    j = p + 2;
  else if (c & lm)
    j = p + 1;
  else
    j = 0;
  if (j != 0) {
    while (j < e && (cls[j] & lm))
      ++j;
    return j;
  }
  // 3. optional space, punctuation/symbols, then CR/LF
  if ((c & cc_blank) && (next & ps))
    j = p + 2;
  else if (c & ps)
    j = p + 1;
  if (j != 0) {
    while (j < e && (cls[j] & ps))
      ++j;
    while (j < e && (cls[j] & cc_crlf))
      ++j;
    return j;
  }
  if (!(c & cc_space))
    return p;
  std::size_t r = p + 1;
  while (r < e && (cls[r] & cc_space))
    ++r;
  // 4. \s*[\r\n]+ : greedy \s* backs off to the last CR/LF of the run
  for (std::size_t k = r; k > p; --k)
    if (cls[k - 1] & cc_crlf)
      return k;
  // 5. \s+(?!\S) : the run, minus its last character unless the run ends the piece
  if (r == e || r - 1 > p)
    return r == e ? r : r - 1;
  // 6. \s+
  return r;
}

bool pre_tokenizer::is_safe_cut(std::string_view text, std::size_t pos) noexcept {
  if (pos == 0 || pos >= text.size() || text[pos - 1] != '\n')
    return false;
  const auto st = utf8::next(text, pos);
  const auto c = st.st == utf8::status::valid ? unicode_classes::instance().classify(st.cp) : std::uint16_t{0};
  return !(c & cc_space);
}

std::size_t pre_tokenizer::next_cut(std::string_view text, std::size_t from, std::size_t target) noexcept {
  if (text.size() - from <= target + target / 2)
    return text.size();
  for (std::size_t p = from + target; p < text.size();) {
    const void* nl = std::memchr(text.data() + p, '\n', text.size() - p);
    if (nl == nullptr)
      break;
    p = static_cast<std::size_t>(static_cast<const char*>(nl) - text.data()) + 1;
    if (is_safe_cut(text, p))
      return p;
  }
  return text.size();
}

} // namespace deepinfer::recipe
