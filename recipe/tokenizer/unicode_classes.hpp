#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace deepinfer::recipe {

/// Class bits of one code point, as the DeepSeek pre-tokenizer regexes see it.
enum char_class : std::uint16_t {
  cc_letter = 1,       ///< \p{L}
  cc_mark = 2,         ///< \p{M}
  cc_number = 4,       ///< \p{N}
  cc_punct = 8,        ///< \p{P}
  cc_symbol = 16,      ///< \p{S}
  cc_space = 32,       ///< \s (White_Space)
  cc_cjk = 64,         ///< [一-龥぀-ゟ゠-ヿ] of the second Split
  cc_crlf = 128,       ///< CR or LF
  cc_ascii_punct = 256, ///< one of !"#$%&'()*+,-./:;<=>?@[\]^_`{|}~
  cc_ascii_alpha = 512, ///< A-Z a-z
  cc_blank = 1024,     ///< exactly U+0020
};

namespace unicode_detail {
struct class_range {
  char32_t first;
  char32_t last;
  std::uint8_t mask;
};
extern const class_range class_ranges[];
extern const std::size_t class_range_count;
} // namespace unicode_detail

/// Code point -> char_class bits, from a two-level table built once from the generated ranges.
class unicode_classes {
public:
  /// The process-wide table (built on first use, thread-safe).
  static const unicode_classes& instance();

  /// The class bits of `cp`; 0 for unassigned, control, format, private use and cp > U+10FFFF.
  std::uint16_t classify(char32_t cp) const noexcept {
    if (cp > 0x10FFFF)
      return 0;
    return blocks_[(static_cast<std::size_t>(index_[cp >> 8]) << 8) | (cp & 0xFF)];
  }

private:
  unicode_classes();
  std::unique_ptr<std::uint16_t[]> index_;  // 0x1100 entries: block number per 256 code points
  std::unique_ptr<std::uint16_t[]> blocks_; // deduplicated 256-entry blocks
};

} // namespace deepinfer::recipe
