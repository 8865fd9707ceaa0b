#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "actors/entrypoint/entrypoint.hpp"
#include "actors/http/image_fetcher.hpp"
#include "actors/messages.hpp"
#include "kv/hash_chain.hpp"
#include "kv/traffic_class.hpp"
#include "recipe/base/expected.hpp"
#include "recipe/protocol/api_error.hpp"
#include "recipe/protocol/conversation.hpp"
#include "recipe/structured/compiler.hpp"
#include "recipe/vision/image_decode.hpp"

namespace deepinfer::recipe {
class tokenizer;
}

namespace deepinfer::actors {

/// A request ready to run: what the client asked for, its prompt, and its cache namespace.
struct prepared_request {
  recipe::conversation conv;
  std::vector<int32_t> prompt;
  int32_t max_tokens = 0;
  kv::cache_salt salt;
  /// The structured-output constraint as the engine's spec (empty: none); compiled already.
  std::string constraint;
  /// Its traffic class (`traffic_class_of`): how long its blocks stay in the prefix cache.
  kv::traffic_class traffic = kv::traffic_class::chatbot;
  /// Its images, decoded, in prompt order, each with its placeholder positions and content key.
  std::vector<prompt_image> images;
};

/// A request's traffic class (DESIGN §4.1): `agent` when it carries tools or tool results,
/// `chatbot` otherwise, unless its `metadata` says `"traffic_class": "agent" | "chatbot"`.
kv::traffic_class traffic_class_of(const recipe::conversation& conv);
/// vLLM's `bad_words` as the token sequences the engine blocks (`sampling_params::bad_words`).
std::vector<std::vector<int32_t>> bad_word_ids(const recipe::tokenizer& tok, const std::vector<std::string>& words);
/// The engine's sampling settings of a prepared request (the rest of what `prepare_request` set
/// in `sampling`): temperature, nucleus and the other cuts, the seed (drawn when the client sent
/// none), EOS and vLLM's stop ids as the stops, penalties, logit bias, allowed ids, bad words,
/// logprobs, the thinking budget.
void sampling_from_request(const entrypoint::context& ctx, const recipe::conversation& conv,
                           engine::sampling_params& sampling);

/// Fetched image files by URL: the body, or why it could not be fetched.
using fetched_images = std::map<std::string, http::fetch_result>;

/// An inline image (a data URI) decoded ahead of `prepare_conversation`: the pixels, or why the
/// bytes are not an image, and the length of the URI it came from (a check that the part is the
/// same one).
struct decoded_inline_image {
  std::size_t uri_bytes = 0;
  expected<recipe::decoded_image, std::string> image;
};

/// Inline images decoded ahead, by (message, part) index.
using decoded_inline_images = std::map<std::pair<std::size_t, std::size_t>, decoded_inline_image>;

/// Decodes `conv`'s inline images (base64, then PNG / JPEG / ...) under the `[vision]` limits,
/// for a thread other than the request actor's: the entrypoint's lowered-priority parser runs it
/// after parsing a large body, so a megabyte image's decode (~10 ms) never holds a CAF worker
/// from text requests. Images past `max_images_per_request` or of a model without a vision
/// encoder are left out (prepare_conversation refuses the request).
decoded_inline_images decode_inline_images(const entrypoint::context& ctx, const recipe::conversation& conv);

/// The request-side work between the HTTP body and the routers, all of it off the HTTP I/O
/// threads (the request actor calls it): parse `body` as an `api` request under the configured
/// JSON limits, check the model, decode its images (`[vision]` limits; each takes as many
/// placeholders as the vision encoder gives it tokens), render, and tokenize within the context limit, whose cost is
/// bounded by the limit, not the prompt (tokenizer::encode_within). `tenant` is the API key's
/// tenant ("" without keys); with the body's `cache_salt` it names the prefix-cache namespace.
/// The API's error (400 / 404) otherwise. An http(s) image URL is a 400 here: requests that
/// may carry them go through `parse_for_serving`, `fetch_images` and `prepare_conversation`.
expected<prepared_request, recipe::api_error> prepare_request(const entrypoint::context& ctx,
                                                                      recipe::api_kind api, std::string_view body,
                                                                      const std::string& tenant);

/// The first half of `prepare_request`: parse, check the model, and put a stored turn's history
/// in (`previous_response_id`).
expected<recipe::conversation, recipe::api_error> parse_for_serving(const entrypoint::context& ctx,
                                                                    recipe::api_kind api, std::string_view body,
                                                                    const std::string& tenant);

/// The http(s) URLs of `conv`'s images, each once, in order (empty: every image is inline).
std::vector<std::string> image_urls(const recipe::conversation& conv);

/// Fetches `urls` with the entrypoint's fetcher (on its thread, all at once; counted in its
/// `deepinfer_image_fetch*` metrics) and calls `done` with every result once the last one is
/// in, on the fetcher's thread. Precondition: `ctx.fetcher`.
void fetch_images(const entrypoint::context& ctx, const std::vector<std::string>& urls,
                  std::function<void(fetched_images)> done);

/// The structured-output constraint of a request (response_format, text.format, output_config.format,
/// structured_outputs or a forced tool call) before it is compiled: what the compiler gets, the
/// engine spec it travels as, and where the API puts it (the `param` of its 400).
struct constraint_job {
  recipe::so::constraint constraint;
  std::string spec;
  recipe::api_kind api = recipe::api_kind::chat;
  std::string param;
  /// The 400 when the compiler cannot enforce it (`why`: the compiler's reason).
  recipe::api_error refused(const std::string& why) const;
};

/// The constraint `conv` asks for (nullopt: none); a 400 when it asks for two at once, for a
/// reasoning-first constraint the template cannot start, or when this server has no compiler.
expected<std::optional<constraint_job>, recipe::api_error> constraint_job_of(const entrypoint::context& ctx,
                                                                            const recipe::conversation& conv);

/// The second half of `prepare_request`, for a conversation from `parse_for_serving`: image URLs
/// take their bytes from `fetched` (a fetch error is the image's 400) and then go the way of
/// inline images (the same decode, the same content key: the same prefix-cache entry). The
/// constraint is compiled here unless `compiled_shortest` (a compiler actor did it: the request
/// actor's path, which never compiles on its own thread; the shortest output it accepts, in
/// tokens). An output limit under that shortest output is a 400. Inline images in `predecoded`
/// are taken from it instead of decoded again.
expected<prepared_request, recipe::api_error> prepare_conversation(const entrypoint::context& ctx,
                                                                   recipe::conversation conv, const std::string& tenant,
                                                                   const fetched_images& fetched,
                                                                   std::optional<int64_t> compiled_shortest = std::nullopt,
                                                                   decoded_inline_images* predecoded = nullptr);

/// The API's error of `status` (request_prepare.cpp and request_constraint.cpp build theirs so).
recipe::api_error request_error(recipe::api_kind api, int status, std::string type, std::string message,
                                std::string param);

/// request_constraint.cpp: the request's structured-output constraint as the engine's spec
/// (empty: none) and the length of the shortest output it accepts, in tokens.
struct format_constraint {
  std::string spec;
  int64_t shortest = 0;
};

/// request_constraint.cpp: the request's constraint, compiled now (unless `compiled_shortest`: a
/// compiler actor did it) so that one it cannot enforce is refused before it is placed.
expected<format_constraint, recipe::api_error> constraint_of(const entrypoint::context& ctx,
                                                             const recipe::conversation& conv,
                                                             std::optional<int64_t> compiled_shortest);

/// request_constraint.cpp: a 400 when the output limit (`limit`, `named` by the client or the
/// default lowered to what the context leaves) cannot hold the shortest output of the request's
/// format (`shortest` tokens, plus the reply's end, plus `</think>` with thinking on).
std::optional<recipe::api_error> too_short_for_the_format(const recipe::conversation& conv, int64_t limit,
                                                          bool named, int64_t shortest);

/// The salt of a tenant (API key, "" without keys) and a request's `cache_salt`: each pair names
/// its own namespace, and ("", "") the shared one.
kv::cache_salt cache_salt_of(const std::string& tenant, const std::string& request_salt);

} // namespace deepinfer::actors
