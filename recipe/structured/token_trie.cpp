#include "recipe/structured/token_trie.hpp"

#include "recipe/structured/level_trie.hpp"

#include "recipe/tokenizer/tokenizer.hpp"

#include <algorithm>

namespace deepinfer::recipe::so {

void byte_trie::add(std::string_view bytes, token_id id) { pending_.emplace_back(std::string{bytes}, id); }

void byte_trie::build() {
  std::sort(pending_.begin(), pending_.end());
  byte_.assign(1, 0);
  depth_.assign(1, 0);
  skip_.assign(1, 0);
  std::vector<std::vector<token_id>> toks(1);
  std::vector<std::uint32_t> path{0};
  const std::string* prev = nullptr;
  for (auto& [s, id] : pending_) {
    std::size_t lcp = 0;
    if (prev != nullptr)
      while (lcp < s.size() && lcp < prev->size() && s[lcp] == (*prev)[lcp])
        ++lcp;
    while (path.size() > lcp + 1) {
      skip_[path.back()] = static_cast<std::uint32_t>(byte_.size());
      path.pop_back();
    }
    if (s.size() > 255)
      continue;  // no vocabulary has such tokens; the packed depth is one byte
    for (std::size_t i = lcp; i < s.size(); ++i) {
      path.push_back(static_cast<std::uint32_t>(byte_.size()));
      byte_.push_back(static_cast<std::uint8_t>(s[i]));
      depth_.push_back(static_cast<std::uint16_t>(i + 1));
      skip_.push_back(0);
      toks.emplace_back();
      max_depth_ = std::max<std::uint16_t>(max_depth_, static_cast<std::uint16_t>(i + 1));
    }
    toks[path.back()].push_back(id);
    prev = &s;
  }
  while (!path.empty()) {
    skip_[path.back()] = static_cast<std::uint32_t>(byte_.size());
    path.pop_back();
  }
  tok_off_.assign(1, 0);
  ids_.clear();
  for (auto& t : toks) {
    ids_.insert(ids_.end(), t.begin(), t.end());
    tok_off_.push_back(static_cast<std::uint32_t>(ids_.size()));
  }
  pending_.clear();
  pending_.shrink_to_fit();
  packed_.resize(byte_.size());
  for (std::size_t i = 0; i < byte_.size(); ++i)
    packed_[i] = {skip_[i], byte_[i], static_cast<std::uint8_t>(std::min<std::uint16_t>(depth_[i], 255)),
                  static_cast<std::uint16_t>(tok_off_[i + 1] - tok_off_[i])};
}

namespace {
std::uint64_t fnv(std::uint64_t h, std::string_view s) {
  for (unsigned char c : s)
    h = (h ^ c) * 0x100000001b3ull;
  return (h ^ 0xff) * 0x100000001b3ull;
}
} // namespace

std::shared_ptr<const vocabulary> vocabulary::of(std::vector<std::string> tokens, token_id eos) {
  auto v = std::make_shared<vocabulary>();
  v->size_ = std::max<std::size_t>(tokens.size(), static_cast<std::size_t>(eos) + 1);
  v->eos_ = eos;
  v->bytes_ = std::move(tokens);
  v->bytes_.resize(v->size_);
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (std::size_t i = 0; i < v->bytes_.size(); ++i) {
    h = fnv(h, v->bytes_[i]);
    if (!v->bytes_[i].empty() && static_cast<token_id>(i) != eos)
      v->trie_.add(v->bytes_[i], static_cast<token_id>(i));
  }
  v->fingerprint_ = fnv(h, std::to_string(eos));
  v->trie_.build();
  v->levels_ = std::make_shared<const level_trie>(v->trie_);
  return v;
}

std::shared_ptr<const vocabulary> vocabulary::of(const tokenizer& tok) {
  std::vector<std::string> bytes(tok.vocab_size());
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    const auto id = static_cast<token_id>(i);
    if (tok.contains(id) && tok.find_added(id) == nullptr)
      bytes[i] = std::string{tok.token_bytes(id)};
  }
  // V4.1's `｜DSML｜` is one special token: a forced tool call's grammar reads it as
  // `dsml_code_point`. No other token may spell that code point, so tokens with its lead byte
  // (0xF4: U+100000..U+10FFFF, private use) are not used by any constraint.
  if (auto dsml = tok.special_id("｜DSML｜")) {
    for (auto& b : bytes)
      if (b.find('\xF4') != std::string::npos)
        b.clear();
    bytes[static_cast<std::size_t>(*dsml)] = std::string{dsml_spelling};
  }
  auto eos = tok.special_id("<｜end▁of▁sentence｜>").value_or(1);
  return of(std::move(bytes), eos);
}

} // namespace deepinfer::recipe::so
