#include "recipe/tokenizer/unicode_classes.hpp"

#include <cstring>
#include <map>
#include <vector>

namespace deepinfer::recipe {

namespace {

std::uint16_t extra_bits(char32_t cp) {
  std::uint16_t m = 0;
  // The ranges of the pre-tokenizer's second Split regex, written out by the tokenizer file.
  if ((cp >= 0x4E00 && cp <= 0x9FA5) || (cp >= 0x3040 && cp <= 0x309F) || (cp >= 0x30A0 && cp <= 0x30FF))
    m |= cc_cjk;
  if (cp == '\r' || cp == '\n')
    m |= cc_crlf;
  if (cp < 0x80 && std::strchr("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~", static_cast<int>(cp)) != nullptr && cp != 0)
    m |= cc_ascii_punct;
  if ((cp >= 'A' && cp <= 'Z') || (cp >= 'a' && cp <= 'z'))
    m |= cc_ascii_alpha;
  if (cp == ' ')
    m |= cc_blank;
  return m;
}

} // namespace

const unicode_classes& unicode_classes::instance() {
  static const unicode_classes table;
  return table;
}

unicode_classes::unicode_classes() {
  std::vector<std::uint16_t> flat(0x110000, 0);
  for (std::size_t i = 0; i < unicode_detail::class_range_count; ++i) {
    const auto& r = unicode_detail::class_ranges[i];
    for (char32_t c = r.first; c <= r.last; ++c)
      flat[c] = r.mask;
  }
  for (char32_t c = 0; c < 0x10000; ++c)
    flat[c] |= extra_bits(c);
  // Deduplicate the 256-entry blocks: most of the astral planes are one all-zero block.
  std::map<std::vector<std::uint16_t>, std::uint16_t> seen;
  std::vector<std::uint16_t> blocks;
  index_ = std::make_unique<std::uint16_t[]>(0x1100);
  for (std::size_t b = 0; b < 0x1100; ++b) {
    std::vector<std::uint16_t> block(flat.begin() + static_cast<std::ptrdiff_t>(b << 8),
                                     flat.begin() + static_cast<std::ptrdiff_t>((b + 1) << 8));
    auto [it, fresh] = seen.emplace(block, static_cast<std::uint16_t>(seen.size()));
    if (fresh)
      blocks.insert(blocks.end(), block.begin(), block.end());
    index_[b] = it->second;
  }
  blocks_ = std::make_unique<std::uint16_t[]>(blocks.size());
  std::memcpy(blocks_.get(), blocks.data(), blocks.size() * sizeof(std::uint16_t));
}

} // namespace deepinfer::recipe
