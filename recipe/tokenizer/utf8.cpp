#include "recipe/tokenizer/utf8.hpp"

namespace deepinfer::recipe::utf8 {

step next(std::string_view s, std::size_t pos) noexcept {
  const auto b0 = static_cast<unsigned char>(s[pos]);
  if (b0 < 0x80)
    return {b0, 1, status::valid};
  std::size_t need = 0;
  unsigned char lo = 0x80, hi = 0xBF;
  char32_t cp = 0;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    need = 1;
    cp = b0 & 0x1F;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    need = 2;
    cp = b0 & 0x0F;
    if (b0 == 0xE0)
      lo = 0xA0;
    else if (b0 == 0xED)
      hi = 0x9F; // no surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    need = 3;
    cp = b0 & 0x07;
    if (b0 == 0xF0)
      lo = 0x90;
    else if (b0 == 0xF4)
      hi = 0x8F;
  } else {
    return {0, 1, status::invalid};
  }
  std::size_t i = 1;
  for (; i <= need; ++i) {
    if (pos + i >= s.size())
      return {0, i, status::truncated};
    const auto b = static_cast<unsigned char>(s[pos + i]);
    // Only the second byte has a narrowed range; the rest are plain continuation bytes.
    const unsigned char l = i == 1 ? lo : 0x80, h = i == 1 ? hi : 0xBF;
    if (b < l || b > h)
      return {0, i, status::invalid};
    cp = (cp << 6) | (b & 0x3F);
  }
  return {cp, need + 1, status::valid};
}

void append_lossy(std::string& out, std::string_view bytes) {
  std::size_t pos = 0, run = 0; // run: start of the pending valid bytes
  while (pos < bytes.size()) {
    if (static_cast<unsigned char>(bytes[pos]) < 0x80) {
      ++pos;
      continue;
    }
    const auto st = next(bytes, pos);
    if (st.st == status::valid) {
      pos += st.len;
      continue;
    }
    out.append(bytes.substr(run, pos - run));
    out.append("\xEF\xBF\xBD");
    pos += st.len;
    run = pos;
  }
  out.append(bytes.substr(run));
}

std::size_t complete_prefix(std::string_view bytes) noexcept {
  // A truncated sequence is at most 3 bytes, so only the tail needs scanning; start at the last
  // lead byte among the final 3 bytes.
  std::size_t start = bytes.size() >= 3 ? bytes.size() - 3 : 0;
  for (std::size_t i = bytes.size(); i > start; --i) {
    const auto b = static_cast<unsigned char>(bytes[i - 1]);
    if ((b & 0xC0) != 0x80) {
      start = i - 1;
      break;
    }
  }
  // Scan from a boundary at or before `start` so that invalid subparts are split exactly as a
  // full scan would split them (a subpart never exceeds 3 bytes, so 4 bytes back is enough).
  std::size_t pos = start >= 4 ? start - 4 : 0;
  while (pos > 0 && (static_cast<unsigned char>(bytes[pos]) & 0xC0) == 0x80)
    --pos;
  while (pos < bytes.size()) {
    const auto st = next(bytes, pos);
    if (st.st == status::truncated)
      return pos;
    pos += st.len;
  }
  return bytes.size();
}

bool is_valid(std::string_view s) noexcept {
  for (std::size_t pos = 0; pos < s.size();) {
    if (static_cast<unsigned char>(s[pos]) < 0x80) {
      ++pos;
      continue;
    }
    const auto st = next(s, pos);
    if (st.st != status::valid)
      return false;
    pos += st.len;
  }
  return true;
}

} // namespace deepinfer::recipe::utf8
