#pragma once

#include "recipe/prompt_segment.hpp"
#include "recipe/tokenizer/tokenizer.hpp"

#include <memory>
#include <string>

namespace deepinfer::recipe {

/// Turns a stream of token ids into text without ever emitting a broken UTF-8 sequence: the
/// bytes of an incomplete code point are held until the token that completes it arrives. The
/// concatenation of every `push` and the final `flush` equals `tokenizer::decode` of all ids.
class incremental_detokenizer {
public:
  /// Keeps `tok` alive for its own lifetime.
  explicit incremental_detokenizer(std::shared_ptr<const tokenizer> tok);

  /// The text that became complete with `id` (possibly empty). Unknown ids add nothing.
  std::string push(token_id id);

  /// The rest at end of stream: held bytes of an unfinished code point become U+FFFD.
  std::string flush();

  /// Bytes held back (0..3).
  std::size_t pending() const noexcept { return held_.size(); }

private:
  std::shared_ptr<const tokenizer> tok_;
  std::string held_;
};

} // namespace deepinfer::recipe
