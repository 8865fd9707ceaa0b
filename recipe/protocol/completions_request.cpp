#include "recipe/protocol/json_reader.hpp"
#include "recipe/protocol/request_common.hpp"
#include "recipe/protocol/request_parsers.hpp"

// OpenAI's legacy `/v1/completions` (what many tools and eval harnesses still call): a raw
// prompt, text out. The prompt is one string or one list of token ids (a list of prompts is split
// into requests before this parser: recipe/protocol/prompt_batch.hpp); the fields this server
// cannot honour are refused.

namespace deepinfer::recipe {

namespace jr = json_reader;
namespace rc = request_common;

namespace {

bool all_ints(const json& v) {
  for (const auto& x : v)
    if (!x.is_number_integer())
      return false;
  return true;
}

raw_prompt parse_prompt(const json& v, const json_path& at) {
  raw_prompt p;
  if (v.is_string()) {
    p.text = v.get<std::string>();
    return p;
  }
  jr::array(v, at);
  if (v.empty())
    at.fail("Invalid 'prompt': empty array. Expected a string or a list of token ids.");
  const json* one = &v;
  if (v[0].is_string() || v[0].is_array()) {
    if (v.size() != 1)
      at.fail("Invalid 'prompt': only one prompt per request is supported; send one request per prompt.");
    one = &v[0];
    if (one->is_string()) {
      p.text = one->get<std::string>();
      return p;
    }
    if (one->empty())
      (at / 0).fail("Invalid 'prompt': empty token list.");
  }
  if (!all_ints(*one))
    at.fail("Invalid 'prompt': expected a string, a list of token ids, or one list of either.");
  p.is_ids = true;
  for (const auto& x : *one) {
    const auto id = x.get<std::int64_t>();
    if (id < 0 || id > INT32_MAX)
      at.fail("Invalid 'prompt': token ids must be non-negative.");
    p.ids.push_back(static_cast<std::int32_t>(id));
  }
  return p;
}

} // namespace

conversation parse_completions_body(const json& j, const json_path& root) {
  conversation c;
  c.api = api_kind::completions;
  c.model = jr::req_string(j, "model", root);
  const json* prompt = jr::find(j, "prompt");
  if (!prompt || prompt->is_null())
    (root / "prompt").fail("Missing required parameter: 'prompt'.");
  c.prompt = parse_prompt(*prompt, root / "prompt");
  auto& s = c.sampling;
  rc::parse_openai_sampling(j, root, s);
  // `logprobs` here is a count (0 to 5 in OpenAI's API; up to 20 here, as vLLM allows): the
  // sampled token's log-probability and that many alternatives.
  if (auto n = jr::opt_int(j, "logprobs", root, 0, 20)) {
    s.logprobs = true;
    s.top_logprobs = *n;
  }
  // OpenAI's default for this endpoint is 16 tokens, not the server's chat default.
  s.max_tokens = jr::opt_int(j, "max_tokens", root, 1, INT32_MAX).value_or(16);
  // best_of > n would rank candidates by log-probability, which is not implemented.
  if (auto b = jr::opt_int(j, "best_of", root, 1, 16); b && *b != s.n)
    (root / "best_of").fail("Invalid value: only best_of equal to n (or absent) is supported; ask for n choices and "
                            "pick among them.");
  // `echo`: the prompt comes back before the completion; with `logprobs`, scored token by token
  // (what evaluation harnesses read a prompt's likelihood from).
  if (jr::opt_bool(j, "echo", root).value_or(false)) {
    c.prompt->echo = true;
    if (s.logprobs)
      s.prompt_logprobs = s.top_logprobs;
  }
  // `suffix`: DeepSeek's FIM completion, the model writes what goes between prompt and suffix.
  if (auto suffix = jr::opt_string(j, "suffix", root)) {
    if (c.prompt->is_ids)
      (root / "suffix").fail("Invalid value: 'suffix' needs a text prompt (fill-in-the-middle places the text before "
                             "and after the hole); send the prompt as a string.");
    if (c.prompt->echo)
      (root / "suffix").fail("Invalid value: 'echo' and 'suffix' cannot be used together.");
    c.prompt->suffix = std::move(*suffix);
  }
  if (const json* st = jr::find(j, "stop"); st && !st->is_null())
    s.stop = jr::stop_list(*st, root / "stop", 16);
  if (const json* rf = jr::find(j, "response_format"); rf && !rf->is_null())
    c.format = rc::parse_format(*rf, root / "response_format", true);
  rc::parse_openai_stream(j, root, c);
  rc::finish(c, j, root);
  return c;
}

} // namespace deepinfer::recipe
