#pragma once

#include "kv/block_key.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace deepinfer::kv {

/// Identifies everything that makes KV bytes incompatible: model, weights revision, dtype, KV layout.
/// Two fingerprints that differ give disjoint hash chains, so one model can never hit another's blocks.
struct model_fingerprint {
  block_key value;

  friend bool operator==(const model_fingerprint&, const model_fingerprint&) = default;

  /// The fingerprint of a canonical description string (for example
  /// `"ced_moe/v4.1-flash;rev=...;kv=fp8;layout=g4h1+idx"`); XXH3-128 of its bytes.
  static model_fingerprint of(std::string_view description);
};

/// A namespace of the prefix cache: chains of different salts share no key, so a tenant can
/// neither hit nor detect another tenant's blocks (the entrypoint salts by API key, or by the
/// request's `cache_salt`). The zero salt is the shared namespace of an unsalted chain.
struct cache_salt {
  block_key value;

  friend bool operator==(const cache_salt&, const cache_salt&) = default;
  bool shared() const noexcept { return value.lo == 0 && value.hi == 0; }

  /// The salt of a tenant name (XXH3-128 of its bytes; never zero); the empty name is shared.
  static cache_salt of(std::string_view tenant);
};

/// Where an image sits in a prompt and what it shows (issue 21): its placeholder positions
/// [position, position + tokens) and a hash of its decoded pixels (`image_content_key`).
struct image_mark {
  int64_t position = 0;
  int64_t tokens = 0;
  block_key content;

  friend bool operator==(const image_mark&, const image_mark&) = default;
};

/// The content key of a decoded image: XXH3-128 of its size and RGB bytes, so the same picture
/// sent as PNG or as base64 of another encoder's file keys alike when the pixels are equal.
block_key image_content_key(int32_t width, int32_t height, std::span<const uint8_t> rgb);

/// The block hash chain of DESIGN §4.1: `h0 = H(fp, tokens[0,128))`, `hi = H(h(i-1), tokens[128i, 128i+128))`
/// with H = XXH3-128 seeded by the fingerprint. Stateless apart from the fingerprint; cheap to copy.
class hash_chain {
public:
  /// Hashes for the model identified by `fingerprint`.
  explicit hash_chain(model_fingerprint fingerprint) : fingerprint_(fingerprint) {
    // nop
  }

  /// Keys of every full block of `tokens`, in order; a trailing partial block has no key.
  std::vector<block_key> keys(std::span<const token_id> tokens) const;

  /// Appends to `chain` the keys of the full blocks of `tokens` past the `chain.size()` blocks
  /// it already holds (incremental hashing while a request decodes).
  /// Precondition: `chain` holds keys of a prefix of `tokens` computed by this hash_chain.
  void extend(std::vector<block_key>& chain, std::span<const token_id> tokens) const;

  /// Key of the block holding `block` (exactly `block_tokens` ids) after the block keyed `prev`;
  /// `prev == nullopt` for the first block.
  block_key next(std::optional<block_key> prev, std::span<const token_id> block) const;

  /// The chain of the same model in namespace `salt`: seeded with H(fingerprint, salt) instead
  /// of the fingerprint; the shared salt gives this chain itself.
  hash_chain salted(cache_salt salt) const;

  /// The same chain over a prompt whose image placeholders stand for `images` (ascending by
  /// position; the marks are copied): the key of the block holding an image's first placeholder
  /// also hashes the image's content key and offset, so every later key differs for another
  /// image and equal images at equal places key alike. No images: this chain itself.
  hash_chain with_images(std::span<const image_mark> images) const;

  /// The fingerprint this chain is seeded with.
  model_fingerprint fingerprint() const { return fingerprint_; }

private:
  block_key next_at(std::optional<block_key> prev, std::span<const token_id> block, int64_t first) const;

  model_fingerprint fingerprint_;
  std::vector<image_mark> images_;
};

} // namespace deepinfer::kv
