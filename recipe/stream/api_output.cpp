#include "recipe/stream/api_output.hpp"

#include "recipe/base/assert.hpp"

#include <nlohmann/json.hpp>

namespace deepinfer::recipe {

namespace {

using encoder_variant =
  std::variant<recipe::chat_encoder, recipe::responses_encoder, recipe::messages_encoder, recipe::completions_encoder>;

encoder_variant make_encoder(const recipe::conversation& conv, const std::string& id, int64_t created, int index,
                             int choices) {
  // Chat Completions and the legacy Completions name the same things in every chunk.
  auto fill = [&](recipe::openai_stream_config& c) {
    c.id = id;
    c.model = conv.model;
    c.created = created;
    c.include_usage = conv.stream_include_usage;
    c.continuous_usage = conv.stream_continuous_usage;
    c.index = index;
    c.ends_stream = choices <= 1;
  };
  switch (conv.api) {
    case recipe::api_kind::responses: {
      recipe::responses_encoder::config c;
      c.id = id;
      c.model = conv.model;
      c.created = created;
      c.echo = recipe::responses_echo(conv);
      return recipe::responses_encoder{std::move(c)};
    }
    case recipe::api_kind::messages: {
      recipe::messages_encoder::config c;
      c.id = id;
      c.model = conv.model;
      return recipe::messages_encoder{std::move(c)};
    }
    case recipe::api_kind::completions: {
      recipe::completions_encoder::config c;
      fill(c);
      return recipe::completions_encoder{std::move(c)};
    }
    case recipe::api_kind::chat:
      break;
  }
  recipe::chat_encoder::config c;
  fill(c);
  if (conv.echo_final && !conv.messages.empty() && conv.messages.back().role == recipe::role::assistant)
    for (const auto& part : conv.messages.back().content)
      if (part.type == recipe::content_part::kind::text)
        c.echo += part.value;
  return recipe::chat_encoder{std::move(c)};
}

} // namespace

api_output::api_output(const recipe::conversation& conv, const std::string& id, int64_t created, int index,
                       int choices)
  : enc_(make_encoder(conv, id, created, index, choices)) {}

std::string api_output::end(const recipe::usage_counts& usage) const {
  if (const auto* chat = std::get_if<recipe::chat_encoder>(&enc_))
    return chat->end(usage);
  if (const auto* legacy = std::get_if<recipe::completions_encoder>(&enc_))
    return legacy->end(usage);
  return {}; // the other APIs have one choice, whose finish ended the stream
}

std::string api_output::with_choices(const std::string& first, std::span<const std::string> others) {
  using ojson = nlohmann::ordered_json;
  auto j = ojson::parse(first);
  for (const auto& o : others) {
    auto other = ojson::parse(o);
    for (auto& c : other["choices"])
      j["choices"].push_back(std::move(c));
  }
  return j.dump(-1, ' ', false, ojson::error_handler_t::replace);
}

std::string api_output::start(const recipe::usage_counts& usage) {
  return std::visit(
    [&](auto& e) -> std::string {
      using encoder = std::decay_t<decltype(e)>;
      if constexpr (std::is_same_v<encoder, recipe::messages_encoder>)
        return e.start(usage);
      else {
        if constexpr (std::is_same_v<encoder, recipe::chat_encoder> || std::is_same_v<encoder, recipe::completions_encoder>)
          e.usage_now(usage);
        return e.start();
      }
    },
    enc_);
}

std::string api_output::encode(std::span<const recipe::stream_event> events,
                               const recipe::usage_counts& usage) {
  return std::visit(
    [&](auto& e) {
      using encoder = std::decay_t<decltype(e)>;
      if constexpr (std::is_same_v<encoder, recipe::chat_encoder> || std::is_same_v<encoder, recipe::completions_encoder>)
        e.usage_now(usage);
      return e.encode(events, usage);
    },
    enc_);
}

void api_output::logprobs(std::span<const recipe::token_logprob> entries, bool stream) {
  if (auto* chat = std::get_if<recipe::chat_encoder>(&enc_))
    chat->logprobs(entries, stream);
  if (auto* responses = std::get_if<recipe::responses_encoder>(&enc_))
    responses->logprobs(entries); // carried by the output-text events those tokens produce
  if (auto* legacy = std::get_if<recipe::completions_encoder>(&enc_))
    legacy->logprobs(entries); // carried by the text chunks those tokens produce
}

std::string api_output::echo(std::string text, std::vector<recipe::token_logprob> entries, bool with_logprobs) {
  if (auto* legacy = std::get_if<recipe::completions_encoder>(&enc_))
    return legacy->echo(std::move(text), std::move(entries), with_logprobs);
  return {};
}

void api_output::prompt_logprobs(nlohmann::ordered_json j) {
  if (auto* chat = std::get_if<recipe::chat_encoder>(&enc_))
    chat->prompt_logprobs(std::move(j));
  else if (auto* legacy = std::get_if<recipe::completions_encoder>(&enc_))
    legacy->prompt_logprobs(std::move(j));
}

void api_output::apply(std::span<const recipe::stream_event> events) {
  std::visit([&](auto& e) { e.apply(events); }, enc_);
}

std::string api_output::body(const recipe::usage_counts& usage) const {
  return std::visit([&](const auto& e) { return e.body(usage); }, enc_);
}

std::string api_output::fail(std::string_view type, std::string_view code, std::string_view message,
                             const recipe::usage_counts& usage) {
  return std::visit(
    [&](auto& e) -> std::string {
      if constexpr (std::is_same_v<std::decay_t<decltype(e)>, recipe::responses_encoder>)
        return e.fail(type, code, message, usage);
      else
        return e.fail(type, code, message);
    },
    enc_);
}

std::string api_output::queued_body() const {
  const auto* e = std::get_if<recipe::responses_encoder>(&enc_);
  DEEPINFER_ASSERT(e, "only a Responses turn runs in the background");
  return e->queued();
}

std::string api_output::cancel() {
  auto* e = std::get_if<recipe::responses_encoder>(&enc_);
  DEEPINFER_ASSERT(e, "only a Responses turn runs in the background");
  return e->cancel();
}

const recipe::completion& api_output::result() const {
  return std::visit([](const auto& e) -> const recipe::completion& { return e.result(); }, enc_);
}

std::string api_output::failed_body(const recipe::api_error& e, const recipe::usage_counts& usage) const {
  using ojson = nlohmann::ordered_json;
  auto err = ojson::parse(e.body());
  auto partial = ojson::parse(body(usage));
  // It did not finish: no finish / stop reason, and a Responses object says so.
  if (partial.contains("choices"))
    for (auto& c : partial["choices"])
      c["finish_reason"] = nullptr;
  if (partial.contains("stop_reason"))
    partial["stop_reason"] = nullptr;
  if (partial.value("object", "") == "response") {
    partial["status"] = "failed";
    partial["error"] = {{"code", e.code}, {"message", e.message}};
  }
  err["partial"] = std::move(partial);
  return err.dump(-1, ' ', false, ojson::error_handler_t::replace);
}

} // namespace deepinfer::recipe
