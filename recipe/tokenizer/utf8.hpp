#pragma once

#include <cstddef>
#include <string>
#include <string_view>

/// UTF-8 scanning shared by the pre-tokenizer and the detokenizers.
namespace deepinfer::recipe::utf8 {

/// What `next` found at the front of a byte range.
enum class status { valid, invalid, truncated };

/// One step of a UTF-8 scan: the code point (valid only) and how many bytes it covers. For
/// `invalid` the length is the maximal invalid subpart (Unicode §3.9, what Rust's
/// `from_utf8_lossy` replaces with one U+FFFD); `truncated` means the bytes up to the end are a
/// proper prefix of a valid sequence.
struct step {
  char32_t cp;
  std::size_t len;
  status st;
};

/// Scans the sequence at `s[pos]`; precondition pos < s.size().
step next(std::string_view s, std::size_t pos) noexcept;

/// Appends `bytes` to `out` with every invalid or truncated subpart replaced by U+FFFD.
void append_lossy(std::string& out, std::string_view bytes);

/// Length of the longest prefix of `bytes` that ends on a sequence boundary without a truncated
/// sequence at the end: the bytes after it may still be completed by more input.
std::size_t complete_prefix(std::string_view bytes) noexcept;

/// Whether `s` is entirely valid UTF-8.
bool is_valid(std::string_view s) noexcept;

} // namespace deepinfer::recipe::utf8
