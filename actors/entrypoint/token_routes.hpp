#pragma once

#include <memory>
#include <string>

#include "actors/entrypoint/entrypoint.hpp"
#include "actors/http/response_writer.hpp"

namespace deepinfer::actors {

/// Which token-counting route a body arrived on.
enum class token_route : uint8_t {
  count_tokens, ///< `POST /v1/messages/count_tokens` (Anthropic): `{"input_tokens": N}`
  tokenize,     ///< `POST /tokenize` (vLLM): `{"count", "max_model_len", "tokens"}`
  detokenize,   ///< `POST /detokenize` (vLLM): `{"prompt"}`
};

/// Answers one token-counting `body` on the CAF scheduler (never an HTTP I/O thread). The
/// counts come from the same parse, render and tokenize as a generation request
/// (prepare_request), so `input_tokens` / `count` equal that request's usage prompt tokens.
/// Errors are the API's 400 / 404 (Anthropic's shape for count_tokens, OpenAI's otherwise).
void spawn_token_request(std::shared_ptr<entrypoint::context> ctx, token_route route, std::string body,
                         std::string tenant, std::shared_ptr<http::response_writer> writer);

} // namespace deepinfer::actors
