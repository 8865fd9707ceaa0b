#include "recipe/stream/utf8_assembler.hpp"

namespace deepinfer::recipe {

namespace {

constexpr std::string_view replacement = "\xEF\xBF\xBD";

// Length of the sequence a lead byte starts; 0 for a byte that cannot start one.
std::size_t sequence_length(unsigned char c) {
  if (c < 0x80)
    return 1;
  if (c >= 0xC2 && c <= 0xDF)
    return 2;
  if (c >= 0xE0 && c <= 0xEF)
    return 3;
  if (c >= 0xF0 && c <= 0xF4)
    return 4;
  return 0;
}

// Whether `c` may be the second byte after `lead` (excludes overlongs, surrogates, > U+10FFFF).
bool valid_second(unsigned char lead, unsigned char c) {
  if ((c & 0xC0) != 0x80)
    return false;
  if (lead == 0xE0)
    return c >= 0xA0;
  if (lead == 0xED)
    return c <= 0x9F;
  if (lead == 0xF0)
    return c >= 0x90;
  if (lead == 0xF4)
    return c <= 0x8F;
  return true;
}

} // namespace

void utf8_assembler::push(std::string_view bytes, std::string& out) {
  std::size_t i = 0;
  const std::size_t n = bytes.size();
  while (i < n) {
    const auto c = static_cast<unsigned char>(bytes[i]);
    if (held_size_ == 0) {
      // Fast path: copy a run of ASCII at once.
      if (c < 0x80) {
        std::size_t j = i + 1;
        while (j < n && static_cast<unsigned char>(bytes[j]) < 0x80)
          ++j;
        out.append(bytes.data() + i, j - i);
        i = j;
        continue;
      }
      const auto len = sequence_length(c);
      if (len == 0) {
        out += replacement;
        ++i;
        continue;
      }
      held_[0] = static_cast<char>(c);
      held_size_ = 1;
      need_ = len;
      ++i;
      continue;
    }
    const auto lead = static_cast<unsigned char>(held_[0]);
    const bool ok = held_size_ == 1 ? valid_second(lead, c) : (c & 0xC0) == 0x80;
    if (!ok) {
      // The held character is broken; re-examine `c` as a fresh start.
      out += replacement;
      held_size_ = 0;
      continue;
    }
    held_[held_size_++] = static_cast<char>(c);
    ++i;
    if (held_size_ == need_) {
      out.append(held_, held_size_);
      held_size_ = 0;
    }
  }
}

void utf8_assembler::flush(std::string& out) {
  if (held_size_ > 0)
    out += replacement;
  held_size_ = 0;
}

} // namespace deepinfer::recipe
