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

hash_chain hash_chain::salted(cache_salt salt) const {
  if (salt.shared())
    return *this;
  const std::array<uint64_t, 4> both{fingerprint_.value.lo, fingerprint_.value.hi, salt.value.lo, salt.value.hi};
  return hash_chain{model_fingerprint{from_xxh(XXH3_128bits(both.data(), sizeof both))}};
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
    chain.push_back(next(prev, tokens.subspan(i * block_tokens, block_tokens)));
  }
}

} // namespace deepinfer::kv
