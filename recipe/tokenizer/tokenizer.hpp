#pragma once

#include "recipe/prompt_segment.hpp"

#include <cstddef>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace deepinfer::recipe {

class tokenizer;

/// Outcome of `tokenizer::load`: the tokenizer, or a message that starts with the JSON path
/// (RFC 6901 pointer, e.g. `/model/merges/17`) of the first problem found.
struct tokenizer_load_result {
  /// Set on success.
  std::shared_ptr<const tokenizer> value;
  /// Set on failure.
  std::string error;

  explicit operator bool() const noexcept { return value != nullptr; }
};

/// The DeepSeek byte-level BPE tokenizer (V3 / V3.2 / V4.1 `tokenizer.json`), bit-exact with
/// HuggingFace `tokenizers` 0.22 on valid UTF-8. Thread-safe: every member is const, and
/// concurrent calls are fine (the internal pool is used by one call at a time; others run on their
/// caller's thread).
class tokenizer {
public:
  /// Tuning; the defaults suit a serving process.
  struct config {
    /// Threads that encode the text of one prompt together (the caller included); 0 means
    /// min(hardware threads, 4). 1 disables the pool.
    std::size_t threads = 0;
    /// Below this many bytes of text a prompt is encoded on the caller's thread alone.
    std::size_t parallel_min_bytes = 32 * 1024;
    /// Above that size, time serial and parallel encoding as they run and use the faster (on a
    /// machine whose cores are busy with other processes, a second thread only adds waiting).
    /// false: always parallel.
    bool adaptive = true;
  };

  /// One entry of `added_tokens`.
  struct added_token {
    token_id id;
    std::string content;
    bool special;
    bool normalized;
  };

  /// Loads a `tokenizer.json`. Fails (with the JSON path) on unreadable or malformed files and on
  /// features this implementation does not reproduce (another pre-tokenizer, normalizer, dropout, ...).
  static tokenizer_load_result load(const std::filesystem::path& path, const config& cfg);
  /// Same, with the default config.
  static tokenizer_load_result load(const std::filesystem::path& path);
  /// Same, from the JSON text itself.
  static tokenizer_load_result load_json(std::string_view json, const config& cfg);

  ~tokenizer();
  tokenizer(const tokenizer&) = delete;
  tokenizer& operator=(const tokenizer&) = delete;

  /// Encodes ordinary text. Special-token spellings inside it (`<｜User｜>`, `</think>`, ...) are
  /// encoded as plain text, never as special ids: the injection protection. Invalid UTF-8
  /// subparts are kept as raw bytes (decode gives them back unchanged).
  std::vector<token_id> encode(std::string_view text) const;

  /// Encodes a rendered prompt: special segments give their id, text segments are encoded as by
  /// `encode(text)`. Large prompts are encoded in parallel (segments, and long segments cut at
  /// line breaks where the pre-tokenizer provably splits anyway); the ids are the same.
  std::vector<token_id> encode(const prompt_segments& segments) const;

  /// Outcome of `encode_within`.
  struct bounded_encoding {
    /// When `fits`, the ids, exactly as `encode(segments)` gives them; otherwise whatever part was
    /// encoded before the limit was certainly passed (often nothing).
    std::vector<token_id> ids;
    /// Whether the prompt has at most `limit` tokens.
    bool fits = true;
    /// When !fits: at least this many tokens (more than `limit`); the exact count when the whole
    /// prompt was encoded to find out.
    std::size_t at_least = 0;
    /// When !fits: whether `at_least` is the exact count.
    bool exact = false;
  };

  /// `encode(segments)` for a prompt that may have at most `limit` tokens, at a cost bounded by
  /// the limit rather than the prompt: a prompt whose bytes alone prove it too long (each token
  /// holds at most as many bytes as the longest token with that byte) is refused after one pass
  /// over its bytes; one that fits in its byte count is encoded as usual; anything between is
  /// encoded in rounds of about max(256 KiB, 8 x limit) bytes (cut where the pre-tokenizer splits
  /// anyway, so the ids are the same) until it is certainly over.
  bounded_encoding encode_within(const prompt_segments& segments, std::size_t limit) const;

  /// Encodes trusted text in which added-token spellings become their ids, as HF's
  /// `encode(text)` does. Never use it on user input (see `encode`).
  std::vector<token_id> encode_with_special_tokens(std::string_view text) const;

  /// The text of `ids`: token bytes concatenated, invalid UTF-8 replaced by U+FFFD (as HF's
  /// decode). Ids the tokenizer does not know are skipped.
  std::string decode(std::span<const token_id> ids) const;

  /// The raw bytes of one token (an added token's content, or a vocabulary token's bytes, which
  /// may end inside a UTF-8 sequence); empty for an id the tokenizer does not know.
  std::string_view token_bytes(token_id id) const noexcept;

  /// Whether `id` is a vocabulary or added token of this file.
  bool contains(token_id id) const noexcept;

  /// The id of the added token spelled `content` (e.g. `<｜User｜>`); nullopt if there is none.
  std::optional<token_id> special_id(std::string_view content) const;

  /// The added token with this id, or nullptr.
  const added_token* find_added(token_id id) const noexcept;

  /// One past the largest id the tokenizer knows (V3.2: 128,815).
  std::size_t vocab_size() const noexcept;

  /// Implementation detail (recipe/tokenizer/tokenizer_impl.hpp).
  struct impl;

private:
  explicit tokenizer(std::unique_ptr<impl> p);
  std::unique_ptr<impl> impl_;
};

/// The asset file for a prompt template: `dsv41` -> `<cache_dir>/tokenizer/tokenizer_v41.json`,
/// `dsv32` -> `tokenizer_v32.json`, `dsv3` -> `tokenizer_v3.json`; nullopt for another name.
/// `cache_dir` is what scripts/bootstrap.sh filled (`${DEEPINFER_CACHE:-$HOME/.cache/deepinfer}`).
std::optional<std::filesystem::path> default_tokenizer_path(const std::filesystem::path& cache_dir,
                                                            std::string_view template_name);

} // namespace deepinfer::recipe
