#pragma once

#include <string>
#include <string_view>

namespace deepinfer::recipe {

/// Turns a byte stream cut at arbitrary points into complete, valid UTF-8: a character split across
/// tokens is held until its last byte arrives; invalid bytes become U+FFFD. The output therefore
/// never contains the bytes 0xF8–0xFF, which the stream parser uses as token markers. Decodes with
/// recipe/tokenizer/utf8 (one decoder for the tokenizer and the stream).
class utf8_assembler {
public:
  /// Appends the complete characters of `held + bytes` to `out` and keeps an incomplete tail.
  void push(std::string_view bytes, std::string& out);
  /// Ends the stream: an incomplete tail becomes U+FFFD.
  void flush(std::string& out);

private:
  /// The incomplete character at the end of the bytes so far (at most 3 bytes).
  std::string held_;
};

} // namespace deepinfer::recipe
