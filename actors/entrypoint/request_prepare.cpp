#include "actors/entrypoint/request_prepare.hpp"

#include "actors/entrypoint/serving_context.hpp"
#include "recipe/base/assert.hpp"
#include "recipe/protocol/api_ids.hpp"
#include "recipe/protocol/parse_request.hpp"
#include "recipe/render/renderer.hpp"
#include "recipe/tokenizer/tokenizer.hpp"
#include "recipe/vision/image_decode.hpp"

#include <algorithm>
#include <chrono>
#include <mutex>
#include <optional>

namespace deepinfer::actors {

recipe::api_error request_error(recipe::api_kind api, int status, std::string type, std::string message,
                           std::string param) {
  recipe::api_error e;
  e.api = api;
  e.status = status;
  e.type = std::move(type);
  e.message = std::move(message);
  e.param = std::move(param);
  return e;
}


namespace {

/// Where an API's messages are (the `param` of an image's 400).
const char* messages_param(recipe::api_kind api) {
  return api == recipe::api_kind::responses ? "input" : "messages";
}

/// Decodes every image part of `conv` under the `[vision]` limits and sets how many placeholders
/// each takes; the decoded images in order (the order the renderer writes them). Image URLs
/// take their bytes from `fetched`. A 400 naming the image and its field when one is refused.
expected<std::vector<prompt_image>, recipe::api_error> decode_images(const entrypoint::context& ctx,
                                                                     recipe::conversation& conv,
                                                                     const fetched_images& fetched,
                                                                     decoded_inline_images* predecoded) {
  const auto api = conv.api;
  const auto& lim = ctx.cfg.vision;
  std::vector<prompt_image> out;
  int image = 0;
  for (std::size_t m = 0; m < conv.messages.size(); ++m)
    for (std::size_t p = 0; p < conv.messages[m].content.size(); ++p) {
      auto& part = conv.messages[m].content[p];
      if (part.type != recipe::content_part::kind::image)
        continue;
      ++image;
      const std::string which = "Image " + std::to_string(image) + " (message " + std::to_string(m + 1) + ", part " +
                                std::to_string(p + 1) + ")";
      auto refuse = [&](const std::string& why) {
        return request_error(api, 400, "invalid_request_error", which + ": " + why + ".",
                        part.path.empty() ? messages_param(api) : part.path);
      };
      if (!ctx.vision.enabled())
        return refuse("this model has no vision encoder; send the request without images");
      if (image > lim.max_images_per_request)
        return request_error(api, 400, "invalid_request_error",
                        "The request has more than " + std::to_string(lim.max_images_per_request) +
                          " images, the most this server accepts in one request; send fewer.",
                        messages_param(api));
      std::optional<expected<recipe::decoded_image, std::string>> img;
      if (part.value.rfind("data:", 0) == 0) {
        auto ahead = predecoded ? predecoded->find({m, p}) : decoded_inline_images::iterator{};
        if (predecoded && ahead != predecoded->end() && ahead->second.uri_bytes == part.value.size())
          img.emplace(std::move(ahead->second.image));
        else
          img.emplace(recipe::decode_data_uri(part.value, lim));
      } else {
        auto file = fetched.find(part.value);
        if (file == fetched.end())
          return refuse("image URLs are not fetched on this route; send the image inline as a base64 data URI "
                        "(or Anthropic's base64 source)");
        if (!file->second)
          return refuse("cannot fetch " + part.value + ": " + file->second.error().message);
        // The fetched file goes the way of an inline one from here: the same decode, the same
        // content key, so the same image by URL or by data URI shares its prefix-cache entry.
        img.emplace(recipe::decode_image(*file->second, lim));
      }
      if (!*img)
        return refuse(img->error());
      // A side shorter than one cell (an icon, a thin banner) is stretched to one cell, within
      // the pixel limit, rather than refused.
      const int64_t decoded_w = (*img)->width, decoded_h = (*img)->height;
      const int32_t cell = ctx.vision.cell();
      if (std::max<int64_t>(decoded_w, cell) * std::max<int64_t>(decoded_h, cell) > lim.max_pixels)
        return refuse("the image is " + std::to_string(decoded_w) + "x" + std::to_string(decoded_h) +
                      " pixels; with each side stretched to at least " + std::to_string(cell) +
                      " pixels it is over the " + std::to_string(lim.max_pixels) +
                      "-pixel limit (send a less elongated image)");
      auto pixels = recipe::stretch_to_min_side(std::move(**img), cell);
      const auto tokens = ctx.vision.tokens_for(pixels.width, pixels.height);
      DEEPINFER_ASSERT(tokens > 0, "an image stretched to one cell per side has a placeholder");
      part.image_tokens = tokens;
      prompt_image pi;
      pi.width = pixels.width;
      pi.height = pixels.height;
      pi.rgb = std::move(pixels.rgb);
      pi.mark.tokens = tokens;
      pi.mark.content = kv::image_content_key(pi.width, pi.height, pi.rgb);
      // Only the pixels the encoder reads matter, but the key covers the whole image: a crop
      // that differs only outside the cells is still another image to the client.
      out.push_back(std::move(pi));
    }
  return out;
}

} // namespace

decoded_inline_images decode_inline_images(const entrypoint::context& ctx, const recipe::conversation& conv) {
  decoded_inline_images out;
  if (!ctx.vision.enabled())
    return out;
  int image = 0;
  for (std::size_t m = 0; m < conv.messages.size(); ++m)
    for (std::size_t p = 0; p < conv.messages[m].content.size(); ++p) {
      const auto& part = conv.messages[m].content[p];
      if (part.type != recipe::content_part::kind::image)
        continue;
      if (++image > ctx.cfg.vision.max_images_per_request)
        return out;
      if (part.value.rfind("data:", 0) == 0)
        out.emplace(std::make_pair(m, p),
                    decoded_inline_image{part.value.size(), recipe::decode_data_uri(part.value, ctx.cfg.vision)});
    }
  return out;
}

namespace {

/// Finds each image's run of placeholders in the token ids (the renderer writes them, never
/// the tokenizer: client text cannot spell them) and records where it starts.
bool place_images(std::vector<prompt_image>& images, const std::vector<int32_t>& prompt, int32_t placeholder) {
  std::size_t at = 0;
  for (auto& im : images) {
    while (at < prompt.size() && prompt[at] != placeholder)
      ++at;
    const auto end = at + static_cast<std::size_t>(im.mark.tokens);
    if (end > prompt.size())
      return false;
    for (auto i = at; i < end; ++i)
      if (prompt[i] != placeholder)
        return false;
    im.mark.position = static_cast<int64_t>(at);
    at = end;
  }
  return true;
}

} // namespace

kv::traffic_class traffic_class_of(const recipe::conversation& conv) {
  if (conv.metadata.is_object())
    if (auto it = conv.metadata.find("traffic_class"); it != conv.metadata.end() && it->is_string())
      if (auto cls = kv::parse_traffic_class(it->get<std::string>()))
        return *cls;
  if (!conv.tools.empty())
    return kv::traffic_class::agent;
  for (const auto& m : conv.messages)
    if (m.role == recipe::role::tool || !m.tool_calls.empty())
      return kv::traffic_class::agent;
  return kv::traffic_class::chatbot;
}

kv::cache_salt cache_salt_of(const std::string& tenant, const std::string& request_salt) {
  if (tenant.empty() && request_salt.empty())
    return {};
  // Length-prefixed, so no (key, salt) pair spells another.
  return kv::cache_salt::of("key:" + std::to_string(tenant.size()) + ":" + tenant + "salt:" + request_salt);
}

expected<recipe::conversation, recipe::api_error> parse_for_serving(const entrypoint::context& ctx,
                                                                    recipe::api_kind api, std::string_view body,
                                                                    const std::string& tenant) {
  const bool anthropic = api == recipe::api_kind::messages;
  // 1. Parse (bounded by the body limit; linear, depth-limited).
  auto conv = recipe::parse_request(api, body, ctx.cfg.requests.json);
  if (!conv)
    return std::move(conv).error();
  if (conv->model != ctx.cfg.model_name) {
    auto e = request_error(api, 404, anthropic ? "not_found_error" : "invalid_request_error",
                      "The model '" + recipe::shown_value(conv->model) + "' does not exist; this server serves '" + ctx.cfg.model_name + "'.",
                      "model");
    e.code = "model_not_found"; // OpenAI's code, as GET /v1/models/{id} gives it
    return e;
  }
  if (!conv->previous_response_id.empty()) {
    // Continue a stored turn: its history goes between this request's instructions (which are
    // the only ones that apply) and its input.
    auto prev = ctx.responses ? ctx.responses->get(tenant, conv->previous_response_id) : nullptr;
    if (!prev) {
      auto e = request_error(api, 404, "invalid_request_error",
                        "Previous response with id '" + conv->previous_response_id +
                          "' not found. It was never stored (store: false), was deleted, or expired; send the "
                          "full input instead.",
                        "previous_response_id");
      e.code = "previous_response_not_found";
      return e;
    }
    if (prev->running())
      return request_error(api, 400, "invalid_request_error",
                      "Previous response with id '" + conv->previous_response_id +
                        "' is a background response still in progress; poll GET /v1/responses/" +
                        conv->previous_response_id + " until its status is no longer queued, then continue it.",
                      "previous_response_id");
    auto at = conv->messages.begin() + (conv->instructions ? 1 : 0);
    conv->messages.insert(at, prev->history.begin(), prev->history.end());
  }
  return conv;
}

namespace {

/// What `truncate_to_fit` dropped and the prompt of what is left.
struct truncation {
  std::size_t dropped_messages = 0;
  std::size_t dropped_images = 0;
  recipe::tokenizer::bounded_encoding encoding;
};

/// Responses `truncation: "auto"`: drops the fewest oldest turns (the messages after the leading
/// system ones, up to a user message) so the conversation fits `room` tokens, and leaves `conv`
/// without them. Bisection over the turn boundaries: each try renders and tokenizes at most
/// `room` tokens, so a long history costs a few tries, not one per message. When even the last
/// turn alone is too long nothing is dropped (the caller reports the prompt too long).
expected<truncation, recipe::api_error> truncate_to_fit(const entrypoint::context& ctx, recipe::conversation& conv,
                                                        std::size_t room) {
  std::size_t head = 0;
  while (head < conv.messages.size() && conv.messages[head].role == recipe::role::system)
    ++head;
  std::vector<std::size_t> cuts; // a try drops messages [head, cut)
  for (std::size_t i = head + 1; i < conv.messages.size(); ++i)
    if (conv.messages[i].role == recipe::role::user)
      cuts.push_back(i);
  if (cuts.empty())
    return truncation{};
  auto all = std::move(conv.messages);
  auto keep = [&](std::size_t cut) {
    conv.messages.assign(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(head));
    conv.messages.insert(conv.messages.end(), all.begin() + static_cast<std::ptrdiff_t>(cut), all.end());
  };
  auto encode = [&](std::size_t cut) -> expected<recipe::tokenizer::bounded_encoding, recipe::api_error> {
    keep(cut);
    auto rendered = recipe::render(conv, *ctx.specials);
    if (!rendered)
      return std::move(rendered).error();
    return ctx.tok->encode_within(*rendered, room);
  };
  std::size_t lo = 0, hi = cuts.size(); // the answer is in [lo, hi); hi: nothing fits
  std::optional<recipe::tokenizer::bounded_encoding> best;
  while (lo < hi) {
    const auto mid = lo + (hi - lo) / 2;
    auto enc = encode(cuts[mid]);
    if (!enc) {
      conv.messages = std::move(all);
      return std::move(enc).error();
    }
    if (enc->fits) {
      best = std::move(*enc);
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  if (!best) {
    conv.messages = std::move(all);
    return truncation{};
  }
  truncation out;
  const auto cut = cuts[lo];
  out.dropped_messages = cut - head;
  for (std::size_t m = head; m < cut; ++m)
    for (const auto& part : all[m].content)
      out.dropped_images += part.type == recipe::content_part::kind::image ? 1 : 0;
  keep(cut); // the bisection ends at lo == hi, the last try that fit: `best` is its prompt
  out.encoding = std::move(*best);
  return out;
}

/// vLLM's `truncate_prompt_tokens`: keeps the last `keep` of `ids`; the images whose placeholders
/// were cut off go with them (images are in prompt order), and one cut through is a 400.
std::optional<recipe::api_error> keep_last_tokens(recipe::api_kind api, std::vector<int32_t>& ids, std::size_t keep,
                                                  std::vector<prompt_image>& images, std::optional<int32_t> placeholder) {
  if (ids.size() <= keep)
    return std::nullopt;
  const auto cut = static_cast<std::ptrdiff_t>(ids.size() - keep);
  auto gone = placeholder ? std::count(ids.begin(), ids.begin() + cut, *placeholder) : 0;
  std::size_t dropped = 0;
  while (gone > 0 && dropped < images.size() && gone >= images[dropped].mark.tokens)
    gone -= images[dropped++].mark.tokens;
  if (gone > 0)
    return request_error(api, 400, "invalid_request_error",
                         "'truncate_prompt_tokens' " + std::to_string(keep) + " cuts through an image (" +
                           std::to_string(gone) + " of its tokens would go); keep more tokens, or send the image later in the conversation.",
                         "truncate_prompt_tokens");
  images.erase(images.begin(), images.begin() + static_cast<std::ptrdiff_t>(dropped));
  ids.erase(ids.begin(), ids.begin() + cut);
  return std::nullopt;
}

} // namespace

expected<prepared_request, recipe::api_error> prepare_request(const entrypoint::context& ctx,
                                                                      recipe::api_kind api, std::string_view body,
                                                                      const std::string& tenant) {
  auto conv = parse_for_serving(ctx, api, body, tenant);
  if (!conv)
    return std::move(conv).error();
  return prepare_conversation(ctx, std::move(*conv), tenant, {});
}

expected<prepared_request, recipe::api_error> prepare_conversation(const entrypoint::context& ctx,
                                                                   recipe::conversation conv,
                                                                   const std::string& tenant,
                                                                   const fetched_images& fetched,
                                                                   std::optional<int64_t> compiled_shortest,
                                                                   decoded_inline_images* predecoded) {
  const auto api = conv.api;
  prepared_request out;
  // No limit named: the configured default, lowered below to what the context leaves after the
  // prompt (vLLM's rule), so leaving max_tokens out never makes a prompt too long.
  const bool default_limit = !conv.sampling.max_tokens;
  out.max_tokens = static_cast<int32_t>(conv.sampling.max_tokens.value_or(ctx.cfg.requests.default_max_tokens));
  out.salt = cache_salt_of(tenant, conv.cache_salt);
  const int64_t limit = ctx.cfg.context_limit;
  const bool legacy = api == recipe::api_kind::completions;
  auto too_long = [&](const std::string& prompt_part, int64_t total) {
    return request_error(api, 400, "invalid_request_error",
                    "This model's maximum context length is " + std::to_string(limit) + " tokens. However, you requested " +
                      prompt_part + " (" + std::to_string(total - limit) + " over the limit). Shorten the " +
                      (legacy ? "prompt" : "messages") + " or lower the maximum number of output tokens.",
                    legacy ? "prompt" : "messages");
  };
  if (!default_limit && out.max_tokens >= limit)
    return too_long(std::to_string(out.max_tokens) + " tokens for the output alone", out.max_tokens);
  // Token ids the client names must be the model's (OpenAI and vLLM answer 400 too).
  const auto vocab = static_cast<int64_t>(ctx.tok->vocab_size());
  auto not_in_vocab = [&](const std::string& what, int64_t id) {
    return request_error(api, 400, "invalid_request_error",
                    "Invalid '" + what + "': token id " + std::to_string(id) + " is not in the vocabulary (0 to " +
                      std::to_string(vocab - 1) + ").",
                    what);
  };
  for (auto& [id, bias] : conv.sampling.logit_bias)
    if (id >= vocab)
      return not_in_vocab("logit_bias", id);
  for (auto id : conv.sampling.stop_token_ids)
    if (id >= vocab)
      return not_in_vocab("stop_token_ids", id);
  for (auto id : conv.sampling.allowed_token_ids)
    if (id >= vocab)
      return not_in_vocab("allowed_token_ids", id);
  // 2. Decode the images (their placeholder counts shape the prompt), 3. render, 4. tokenize,
  // stopping once the prompt is certainly over what the limit leaves.
  auto images = decode_images(ctx, conv, fetched, predecoded);
  if (!images)
    return std::move(images).error();
  const auto room = static_cast<std::size_t>(limit - (default_limit ? 1 : out.max_tokens));
  recipe::tokenizer::bounded_encoding enc;
  if (conv.prompt && conv.prompt->is_ids) {
    // A legacy completion of token ids: used as they are (the client tokenized).
    for (auto id : conv.prompt->ids)
      if (id >= vocab)
        return not_in_vocab("prompt", id);
    enc.ids = conv.prompt->ids;
    enc.fits = enc.ids.size() <= room;
    enc.exact = true;
    enc.at_least = enc.ids.size();
  } else {
    recipe::prompt_segments segments;
    if (conv.prompt) {
      // A legacy completion of text: no template, only the BOS every prompt of the model starts
      // with (what HF's tokenizer adds), then the text as ordinary text.
      segments.push_back(recipe::prompt_segment::special(ctx.specials->id(recipe::spelling::bos).value_or(0),
                                                         std::string(recipe::spelling::bos)));
      if (conv.prompt->suffix) {
        // DeepSeek's fill-in-the-middle: begin, the text before the hole, hole, the text after
        // it, end; the model writes the middle.
        auto fim = [&](std::string_view spelling) -> std::optional<recipe::prompt_segment> {
          if (auto id = ctx.tok->special_id(spelling))
            return recipe::prompt_segment::special(*id, std::string(spelling));
          return std::nullopt;
        };
        auto begin = fim(recipe::spelling::fim_begin), hole = fim(recipe::spelling::fim_hole),
             end = fim(recipe::spelling::fim_end);
        if (!begin || !hole || !end)
          return request_error(api, 400, "invalid_request_error",
                               "'suffix' (fill-in-the-middle) needs the tokenizer's FIM tokens, and this model's has "
                               "none; send the prompt without 'suffix'.",
                               "suffix");
        segments.push_back(std::move(*begin));
        segments.push_back(recipe::prompt_segment::plain(conv.prompt->text));
        segments.push_back(std::move(*hole));
        segments.push_back(recipe::prompt_segment::plain(*conv.prompt->suffix));
        segments.push_back(std::move(*end));
      } else {
        segments.push_back(recipe::prompt_segment::plain(conv.prompt->text));
      }
    } else {
      auto rendered = recipe::render(conv, *ctx.specials);
      if (!rendered)
        return std::move(rendered).error();
      segments = std::move(*rendered);
    }
    // Left truncation needs the whole prompt (its length bounded by the body's).
    enc = conv.sampling.truncate_prompt_tokens ? recipe::tokenizer::bounded_encoding{ctx.tok->encode(segments)}
                                               : ctx.tok->encode_within(segments, room);
    if (!enc.fits && conv.truncate_auto && !conv.prompt) {
      auto cut = truncate_to_fit(ctx, conv, room);
      if (!cut)
        return std::move(cut).error();
      if (cut->dropped_messages > 0) {
        // The images of the dropped turns go with them (images are in prompt order).
        images->erase(images->begin(), images->begin() + static_cast<std::ptrdiff_t>(cut->dropped_images));
        enc = std::move(cut->encoding);
      }
    }
  }
  if (const auto keep = conv.sampling.truncate_prompt_tokens) {
    if (*keep > limit)
      return request_error(api, 400, "invalid_request_error",
                           "'truncate_prompt_tokens' is " + std::to_string(*keep) + ", more than the model's context of " +
                             std::to_string(limit) + " tokens; use at most that, or -1 to keep what fits with the output.",
                           "truncate_prompt_tokens");
    const auto placeholder = ctx.specials->id(recipe::spelling::image);
    if (auto e = keep_last_tokens(api, enc.ids, *keep < 0 ? room : static_cast<std::size_t>(*keep), *images, placeholder))
      return std::move(*e);
    enc.fits = enc.ids.size() <= room;
    enc.exact = true;
    enc.at_least = enc.ids.size();
  }
  if (!enc.fits) {
    if (default_limit)
      out.max_tokens = 1; // the least a completion takes
    const auto prompt = static_cast<int64_t>(enc.at_least);
    const std::string n = (enc.exact ? "" : "at least ") + std::to_string(prompt + out.max_tokens);
    return too_long(n + " tokens (" + (enc.exact ? "" : "at least ") + std::to_string(prompt) + (legacy ? " in the prompt, " : " in the messages, ") +
                      std::to_string(out.max_tokens) + " in the completion)",
                    prompt + out.max_tokens);
  }
  if (default_limit)
    out.max_tokens = static_cast<int32_t>(std::min<int64_t>(out.max_tokens, limit - static_cast<int64_t>(enc.ids.size())));
  if (const int64_t most = ctx.cfg.requests.max_prompt_logprobs_tokens;
      std::max(conv.sampling.prompt_logprobs, conv.sampling.vllm_prompt_logprobs) >= 0 &&
      static_cast<int64_t>(enc.ids.size()) > most) {
    const bool vllm = conv.sampling.vllm_prompt_logprobs >= 0;
    return request_error(api, 400, "invalid_request_error",
                    std::string(vllm ? "'prompt_logprobs'" : "'echo' with 'logprobs'") + " scores prompts of up to " +
                      std::to_string(most) + " tokens; this one has " + std::to_string(enc.ids.size()) +
                      ". Shorten the prompt, or send it without " + (vllm ? "'prompt_logprobs'." : "'logprobs' (or without 'echo')."),
                    vllm ? "prompt_logprobs" : "logprobs");
  }
  auto constraint = constraint_of(ctx, conv, compiled_shortest);
  if (!constraint)
    return std::move(constraint).error();
  if (!constraint->spec.empty())
    if (auto e = too_short_for_the_format(conv, out.max_tokens, !default_limit, constraint->shortest))
      return std::move(*e);
  out.constraint = std::move(constraint->spec);
  out.traffic = traffic_class_of(conv);
  if (!images->empty()) {
    const auto placeholder = ctx.specials->id(recipe::spelling::image);
    if (!placeholder || !place_images(*images, enc.ids, *placeholder))
      return request_error(api, 500, "api_error", "the prompt lost an image's placeholders; please report this",
                      messages_param(api));
  }
  out.images = std::move(*images);
  out.prompt = std::move(enc.ids);
  out.conv = std::move(conv);
  return out;
}

} // namespace deepinfer::actors
