#pragma once

// Internal to the tokenizer: the state shared by tokenizer.cpp and tokenizer_load.cpp.

#include "recipe/tokenizer/bpe_model.hpp"
#include "recipe/tokenizer/thread_pool.hpp"
#include "recipe/tokenizer/tokenizer.hpp"

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace deepinfer::recipe {

struct tokenizer::impl {
  config cfg;
  std::unique_ptr<bpe_model> bpe;
  std::string arena;                   // the bytes of every token, by id
  std::vector<std::uint32_t> offsets;  // token id -> [offsets[id], offsets[id + 1]) in arena
  std::vector<std::uint8_t> known;     // token id -> 1 if the file defines it
  std::vector<added_token> added;      // in file order
  std::unordered_map<std::string, token_id> added_by_content;
  std::unordered_map<token_id, std::size_t> added_by_id;
  struct adaptive_state {
    std::atomic<std::uint64_t> calls{0};
    std::atomic<double> serial_ns_per_byte{0};
    std::atomic<double> parallel_ns_per_byte{0};
  } adapt;                             // encode(segments): serial or parallel, by measured speed
  std::uint64_t instance = 0;          // tells per-thread piece caches of two tokenizers apart
  /// Per byte value b: weight_one / (length of the longest token holding b), rounded down. Each
  /// token of an encoding holds its bytes, so a text has at least (sum of its bytes' weights) /
  /// weight_one tokens: a bound read in one pass, without encoding (encode_within).
  static constexpr std::uint64_t weight_one = 1 << 16;
  std::array<std::uint32_t, 256> byte_weight{};
  // Last member: destroyed first, joining workers that may still be finishing a late group.
  std::unique_ptr<thread_pool> pool;   // null when single-threaded

  /// Appends the ids of ordinary text (no added-token matching).
  void encode_text(std::string_view text, std::vector<token_id>& out) const;
  /// encode(segments) on the calling thread; `total` = bytes of text.
  std::vector<token_id> encode_serial(const prompt_segments& segments, std::size_t total) const;
  /// The lower bound of byte_weight over `text`, as a sum of weights.
  std::uint64_t weight(std::string_view text) const noexcept;
  /// encode(segments) with the pool's help (tokenizer_parallel.cpp).
  std::vector<token_id> encode_parallel(const prompt_segments& segments, std::size_t total) const;
};

/// GPT-2's byte-level alphabet: the code point that stands for byte b in vocabulary strings.
char32_t byte_level_char(unsigned char b) noexcept;

} // namespace deepinfer::recipe
