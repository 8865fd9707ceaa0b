#include "recipe/protocol/vllm_sampling.hpp"

#include <algorithm>
#include <cstdint>

namespace deepinfer::recipe {

namespace jr = json_reader;

namespace {

/// Enough for any real use (vLLM sets no limit, but each id costs a comparison per token and
/// each bad word a match per token).
constexpr std::size_t most_ids = 64;

std::vector<std::int32_t> id_list(const json& v, const json_path& at, std::size_t max) {
  jr::array(v, at);
  if (v.size() > max)
    at.fail("Invalid value: at most " + std::to_string(max) + " token ids are allowed here.");
  std::vector<std::int32_t> out;
  out.reserve(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (!v[i].is_number_integer() || v[i].get<std::int64_t>() < 0 || v[i].get<std::int64_t>() > INT32_MAX)
      (at / i).fail("Invalid value: expected a token id (an integer, 0 or more).");
    out.push_back(static_cast<std::int32_t>(v[i].get<std::int64_t>()));
  }
  return out;
}

} // namespace

void parse_vllm_sampling(const json& j, const json_path& root, sampling& s) {
  if (const json* v = jr::find(j, "stop_token_ids"))
    s.stop_token_ids = id_list(*v, root / "stop_token_ids", most_ids);
  s.include_stop_str_in_output = jr::opt_bool(j, "include_stop_str_in_output", root).value_or(false);
  s.skip_special_tokens = jr::opt_bool(j, "skip_special_tokens", root).value_or(true);
  // Only meaningful for tokenizers that join tokens with spaces; byte-level BPE decodes bytes.
  (void)jr::opt_bool(j, "spaces_between_special_tokens", root);
  if (const json* v = jr::find(j, "allowed_token_ids")) {
    // vLLM's limit is the vocabulary; a list that long is a mask anyway.
    s.allowed_token_ids = id_list(*v, root / "allowed_token_ids", std::size_t{1} << 20);
    if (s.allowed_token_ids.empty())
      (root / "allowed_token_ids").fail("Invalid value: 'allowed_token_ids' must not be empty (leave it out to allow any token).");
    std::sort(s.allowed_token_ids.begin(), s.allowed_token_ids.end());
    s.allowed_token_ids.erase(std::unique(s.allowed_token_ids.begin(), s.allowed_token_ids.end()),
                              s.allowed_token_ids.end());
  }
  if (const json* v = jr::find(j, "bad_words")) {
    const auto at = root / "bad_words";
    jr::array(*v, at);
    if (v->size() > most_ids)
      at.fail("Invalid value: at most " + std::to_string(most_ids) + " bad words are allowed.");
    for (std::size_t i = 0; i < v->size(); ++i) {
      auto w = jr::string((*v)[i], at / i);
      if (w.find_first_not_of(" \t\r\n") == std::string::npos)
        (at / i).fail("Invalid value: a bad word must have a character that is not whitespace.");
      s.bad_words.push_back(std::move(w));
    }
  }
  s.return_tokens_as_token_ids = jr::opt_bool(j, "return_tokens_as_token_ids", root).value_or(false);
  s.truncate_prompt_tokens = jr::opt_int(j, "truncate_prompt_tokens", root, -1, INT32_MAX);
  if (s.truncate_prompt_tokens == 0)
    (root / "truncate_prompt_tokens").fail("Invalid value: 'truncate_prompt_tokens' keeps the prompt's last N tokens "
                                           "(N at least 1), or as many as fit with -1.");
}

} // namespace deepinfer::recipe
