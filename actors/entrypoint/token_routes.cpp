#include "actors/entrypoint/token_routes.hpp"

#include <optional>

#include <caf/actor_cast.hpp>
#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/send.hpp>
#include <nlohmann/json.hpp>

#include "actors/entrypoint/request_prepare.hpp"
#include "actors/messages.hpp"
#include "actors/entrypoint/serving_context.hpp"
#include "recipe/protocol/api_error.hpp"

namespace deepinfer::actors {

namespace {

using json = nlohmann::json;

recipe::api_error bad_request(recipe::api_kind api, std::string message, std::string param = {}) {
  recipe::api_error e;
  e.api = api;
  e.status = 400;
  e.type = "invalid_request_error";
  e.message = std::move(message);
  e.param = std::move(param);
  return e;
}

/// A Messages (or chat) body as the generation request it describes, for counting: the output
/// fields count_tokens does not take get their smallest valid values.
json as_generation_request(json j) {
  if (!j.contains("max_tokens")) {
    int64_t at_least = 1;
    if (auto t = j.find("thinking"); t != j.end() && t->is_object() && t->contains("budget_tokens") &&
                                     (*t)["budget_tokens"].is_number_integer())
      at_least = (*t)["budget_tokens"].get<int64_t>() + 1;
    j["max_tokens"] = at_least;
  }
  j.erase("stream");
  j.erase("add_special_tokens");
  j.erase("add_generation_prompt");
  j.erase("return_token_strs");
  return j;
}

/// What a route answers once its prompt is known.
std::string counted(const entrypoint::context& ctx, token_route route, const std::vector<int32_t>& ids) {
  if (route == token_route::count_tokens)
    return json{{"input_tokens", ids.size()}}.dump();
  return json{{"count", ids.size()}, {"max_model_len", ctx.cfg.context_limit}, {"tokens", ids}}.dump();
}

/// One request's answer: either done (`answer`), or a conversation whose image URLs must be
/// fetched first (`conversation`, `urls`), then counted by `answer_fetched`.
struct token_answer {
  std::optional<expected<std::string, recipe::api_error>> answer;
  std::optional<recipe::conversation> conversation;
  std::vector<std::string> urls;
};

token_answer done(expected<std::string, recipe::api_error> a) {
  token_answer t;
  t.answer = std::move(a);
  return t;
}

/// The prompt of a conversation with messages: rendered and tokenized exactly as the generation
/// route would (images included: an image URL is fetched for its size, as generation does).
token_answer count_conversation(const entrypoint::context& ctx, token_route route, json j, const std::string& tenant,
                                recipe::api_kind api) {
  auto conv = parse_for_serving(ctx, api, as_generation_request(std::move(j)).dump(), tenant);
  if (!conv)
    return done(std::move(conv).error());
  auto urls = image_urls(*conv);
  if (!urls.empty() && ctx.fetcher) {
    token_answer t;
    t.conversation = std::move(*conv);
    t.urls = std::move(urls);
    return t;
  }
  auto p = prepare_conversation(ctx, std::move(*conv), tenant, {});
  if (!p)
    return done(std::move(p).error());
  return done(counted(ctx, route, p->prompt));
}

token_answer answer(const entrypoint::context& ctx, token_route route, const std::string& body,
                    const std::string& tenant) {
  const auto api = route == token_route::count_tokens ? recipe::api_kind::messages : recipe::api_kind::chat;
  json j = json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    return done(bad_request(api, "The request body is not a JSON object."));
  // vLLM's /tokenize and /detokenize take `model` as optional: absent means the served one.
  // (Anthropic's count_tokens requires it, as generation does.)
  if (route != token_route::count_tokens && (!j.contains("model") || j["model"].is_null()))
    j["model"] = ctx.cfg.model_name;
  if (route == token_route::detokenize && j["model"] != ctx.cfg.model_name) {
    auto e = bad_request(api, "The model '" + recipe::shown_value(j["model"].dump()) + "' does not exist; this server serves '" +
                                  ctx.cfg.model_name + "'.",
                         "model");
    e.status = 404;
    e.code = "model_not_found";
    return done(e);
  }
  switch (route) {
    case token_route::count_tokens:
      return count_conversation(ctx, route, std::move(j), tenant, api);
    case token_route::tokenize: {
      // The chat prompt exactly as /v1/chat/completions renders it.
      if (j.contains("messages"))
        return count_conversation(ctx, route, std::move(j), tenant, api);
      std::vector<int32_t> ids;
      if (auto p = j.find("prompt"); p != j.end() && p->is_string()) {
        if (j.value("model", std::string{}) != ctx.cfg.model_name) {
          auto e = bad_request(api, "The model '" + recipe::shown_value(j.value("model", std::string{})) +
                                      "' does not exist; this server serves '" + ctx.cfg.model_name + "'.",
                               "model");
          e.status = 404;
          e.code = "model_not_found";
          return done(e);
        }
        // vLLM's default: the BOS token first, then the text (special spellings stay text).
        if (j.value("add_special_tokens", true))
          if (auto bos = ctx.specials->id(recipe::spelling::bos))
            ids.push_back(*bos);
        auto text = ctx.tok->encode(p->get<std::string>());
        ids.insert(ids.end(), text.begin(), text.end());
      } else {
        return done(bad_request(api, "Send either `prompt` (a string) or `messages`.", "prompt"));
      }
      return done(counted(ctx, route, ids));
    }
    case token_route::detokenize: {
      auto t = j.find("tokens");
      if (t == j.end() || !t->is_array())
        return done(bad_request(api, "`tokens` must be an array of token ids.", "tokens"));
      std::vector<int32_t> ids;
      for (const auto& x : *t) {
        if (!x.is_number_integer() || !ctx.tok->contains(x.get<int32_t>()))
          return done(bad_request(api, "`tokens` holds " + x.dump() + ", which is not a token id of this model.",
                                  "tokens"));
        ids.push_back(x.get<int32_t>());
      }
      return done(json{{"prompt", ctx.tok->decode(ids)}}.dump());
    }
  }
  return done(bad_request(api, "unknown route"));
}

void reply(http::response_writer& writer, const expected<std::string, recipe::api_error>& r) {
  if (r)
    writer.send_json(200, *r);
  else
    writer.send_json(static_cast<unsigned>(r.error().status), r.error().body());
}

} // namespace

void spawn_token_request(std::shared_ptr<entrypoint::context> ctx, token_route route, std::string body,
                         std::string tenant, std::shared_ptr<http::response_writer> writer) {
  auto& sys = *ctx->sys;
  sys.spawn([ctx = std::move(ctx), route, body = std::move(body), tenant = std::move(tenant),
             writer = std::move(writer)](caf::event_based_actor* self) -> caf::behavior {
    auto t = answer(*ctx, route, body, tenant);
    if (t.answer) {
      reply(*writer, *t.answer);
      self->quit();
      return {};
    }
    // Image URLs: counted once fetched (an image's placeholders depend on its size), off this
    // worker; the callback holds the actor, which nothing else references while it waits.
    auto fetched = std::make_shared<fetched_images>();
    fetch_images(*ctx, t.urls, [fetched, h = caf::actor_cast<caf::actor>(self)](fetched_images got) {
      *fetched = std::move(got); // the message orders the write before the read
      caf::anon_send(h, fetched_atom::value);
    });
    auto conv = std::make_shared<recipe::conversation>(std::move(*t.conversation));
    return {
      [=](fetched_atom) {
        auto p = prepare_conversation(*ctx, std::move(*conv), tenant, *fetched);
        if (p)
          reply(*writer, counted(*ctx, route, p->prompt));
        else
          reply(*writer, std::move(p).error());
        self->quit();
      },
    };
  });
}

} // namespace deepinfer::actors
