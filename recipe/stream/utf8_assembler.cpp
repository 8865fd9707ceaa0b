#include "recipe/stream/utf8_assembler.hpp"

#include "recipe/tokenizer/utf8.hpp"

namespace deepinfer::recipe {

void utf8_assembler::push(std::string_view bytes, std::string& out) {
  std::string joined;
  if (!held_.empty()) {
    joined = held_;
    joined += bytes;
    bytes = joined;
  }
  // Invalid subparts become U+FFFD as they come; a truncated character at the end waits for the
  // bytes that complete it.
  const auto end = utf8::complete_prefix(bytes);
  utf8::append_lossy(out, bytes.substr(0, end));
  held_.assign(bytes.substr(end));
}

void utf8_assembler::flush(std::string& out) {
  if (!held_.empty())
    out += "\xEF\xBF\xBD";
  held_.clear();
}

} // namespace deepinfer::recipe
