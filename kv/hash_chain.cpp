#include "kv/hash_chain.hpp"

#include <array>
#include <cstring>

#include <xxhash.h>

namespace deepinfer::kv {

namespace {

block_key from_xxh(XXH128_hash_t h) {
  return block_key{h.low64, h.high64};
}

} // namespace

model_fingerprint model_fingerprint::of(std::string_view description) {
  return model_fingerprint{from_xxh(XXH3_128bits(description.data(), description.size()))};
}

cache_salt cache_salt::of(std::string_view tenant) {
  if (tenant.empty())
    return {};
  auto k = from_xxh(XXH3_128bits(tenant.data(), tenant.size()));
  if (k.lo == 0 && k.hi == 0)
    k.lo = 1;
  return cache_salt{k};
}

block_key image_content_key(int32_t width, int32_t height, std::span<const uint8_t> rgb) {
  XXH3_state_t* st = XXH3_createState();
  XXH3_128bits_reset(st);
  const std::array<int32_t, 2> size{width, height};
  XXH3_128bits_update(st, size.data(), sizeof size);
  XXH3_128bits_update(st, rgb.data(), rgb.size());
  auto k = from_xxh(XXH3_128bits_digest(st));
  XXH3_freeState(st);
  return k;
}

hash_chain hash_chain::salted(cache_salt salt) const {
  if (salt.shared())
    return *this;
  const std::array<uint64_t, 4> both{fingerprint_.value.lo, fingerprint_.value.hi, salt.value.lo, salt.value.hi};
  hash_chain out{model_fingerprint{from_xxh(XXH3_128bits(both.data(), sizeof both))}};
  out.images_ = images_;
  return out;
}

hash_chain hash_chain::with_images(std::span<const image_mark> images) const {
  hash_chain out = *this;
  out.images_.assign(images.begin(), images.end());
  return out;
}

block_key hash_chain::next_at(std::optional<block_key> prev, std::span<const token_id> block, int64_t first) const {
  block_key k = next(prev, block);
  // Images whose first placeholder is in this block: (key, offset in the block, count) of
  // each is hashed onto the token key. Later blocks chain from it.
  for (const auto& im : images_) {
    if (im.position < first || im.position >= first + static_cast<int64_t>(block_tokens))
      continue;
    const std::array<uint64_t, 6> mix{k.lo, k.hi, im.content.lo, im.content.hi,
                                      static_cast<uint64_t>(im.position - first), static_cast<uint64_t>(im.tokens)};
    k = from_xxh(XXH3_128bits_withSeed(mix.data(), sizeof mix, fingerprint_.value.lo ^ fingerprint_.value.hi));
  }
  return k;
}

block_key hash_chain::next(std::optional<block_key> prev, std::span<const token_id> block) const {
  // The parent (or, for the first block, the fingerprint itself) is hashed together with the
  // tokens, and the fingerprint is also the seed: a different model changes every key of the
  // chain, not only the first one.
  std::array<unsigned char, 16 + block_tokens * sizeof(token_id)> buf;
  const block_key parent = prev ? *prev : fingerprint_.value;
  std::memcpy(buf.data(), &parent.lo, 8);
  std::memcpy(buf.data() + 8, &parent.hi, 8);
  const std::size_t n = std::min(block.size(), block_tokens) * sizeof(token_id);
  std::memcpy(buf.data() + 16, block.data(), n);
  const auto seed = fingerprint_.value.lo ^ fingerprint_.value.hi;
  return from_xxh(XXH3_128bits_withSeed(buf.data(), 16 + n, seed));
}

std::vector<block_key> hash_chain::keys(std::span<const token_id> tokens) const {
  std::vector<block_key> chain;
  extend(chain, tokens);
  return chain;
}

void hash_chain::extend(std::vector<block_key>& chain, std::span<const token_id> tokens) const {
  const std::size_t full = tokens.size() / block_tokens;
  chain.reserve(full);
  for (std::size_t i = chain.size(); i < full; ++i) {
    std::optional<block_key> prev;
    if (i > 0)
      prev = chain[i - 1];
    chain.push_back(next_at(prev, tokens.subspan(i * block_tokens, block_tokens),
                            static_cast<int64_t>(i * block_tokens)));
  }
}

} // namespace deepinfer::kv
