#pragma once

// Internal to the tokenizer: the state shared by tokenizer.cpp and tokenizer_load.cpp.

#include "recipe/tokenizer/bpe_model.hpp"
#include "recipe/tokenizer/thread_pool.hpp"
#include "recipe/tokenizer/tokenizer.hpp"

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
  std::unique_ptr<thread_pool> pool;   // null when single-threaded
  std::uint64_t instance = 0;          // tells per-thread piece caches of two tokenizers apart

  /// Appends the ids of ordinary text (no added-token matching).
  void encode_text(std::string_view text, std::vector<token_id>& out) const;
};

/// GPT-2's byte-level alphabet: the code point that stands for byte b in vocabulary strings.
char32_t byte_level_char(unsigned char b) noexcept;

} // namespace deepinfer::recipe
