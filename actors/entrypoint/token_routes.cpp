#include "actors/entrypoint/token_routes.hpp"

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <nlohmann/json.hpp>

#include "actors/entrypoint/request_prepare.hpp"
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

/// The prompt tokens of a Messages body without the output fields count_tokens does not take:
/// it is prepared as the generation request it describes, with the smallest valid max_tokens.
expected<std::vector<int32_t>, recipe::api_error> count_messages(const entrypoint::context& ctx, json j,
                                                                 const std::string& tenant, recipe::api_kind api) {
  if (!j.contains("max_tokens")) {
    int64_t at_least = 1;
    if (auto t = j.find("thinking"); t != j.end() && t->is_object() && t->contains("budget_tokens") &&
                                     (*t)["budget_tokens"].is_number_integer())
      at_least = (*t)["budget_tokens"].get<int64_t>() + 1;
    j["max_tokens"] = at_least;
  }
  j.erase("stream");
  auto p = prepare_request(ctx, api, j.dump(), tenant);
  if (!p)
    return std::move(p).error();
  return std::move(p->prompt);
}

expected<std::string, recipe::api_error> answer(const entrypoint::context& ctx, token_route route,
                                                const std::string& body, const std::string& tenant) {
  const auto api = route == token_route::count_tokens ? recipe::api_kind::messages : recipe::api_kind::chat;
  json j = json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    return bad_request(api, "The request body is not a JSON object.");
  switch (route) {
    case token_route::count_tokens: {
      auto ids = count_messages(ctx, std::move(j), tenant, api);
      if (!ids)
        return std::move(ids).error();
      return json{{"input_tokens", ids->size()}}.dump();
    }
    case token_route::tokenize: {
      std::vector<int32_t> ids;
      if (auto m = j.find("messages"); m != j.end()) {
        // The chat prompt exactly as /v1/chat/completions renders it.
        j.erase("add_special_tokens");
        j.erase("add_generation_prompt");
        j.erase("return_token_strs");
        auto r = count_messages(ctx, std::move(j), tenant, api);
        if (!r)
          return std::move(r).error();
        ids = std::move(*r);
      } else if (auto p = j.find("prompt"); p != j.end() && p->is_string()) {
        if (j.value("model", std::string{}) != ctx.cfg.model_name) {
          auto e = bad_request(api, "The model '" + j.value("model", std::string{}) +
                                      "' does not exist; this server serves '" + ctx.cfg.model_name + "'.",
                               "model");
          e.status = 404;
          return e;
        }
        // vLLM's default: the BOS token first, then the text (special spellings stay text).
        if (j.value("add_special_tokens", true))
          if (auto bos = ctx.specials->id(recipe::spelling::bos))
            ids.push_back(*bos);
        auto text = ctx.tok->encode(p->get<std::string>());
        ids.insert(ids.end(), text.begin(), text.end());
      } else {
        return bad_request(api, "Send either `prompt` (a string) or `messages`.", "prompt");
      }
      return json{{"count", ids.size()}, {"max_model_len", ctx.cfg.context_limit}, {"tokens", ids}}.dump();
    }
    case token_route::detokenize: {
      auto t = j.find("tokens");
      if (t == j.end() || !t->is_array())
        return bad_request(api, "`tokens` must be an array of token ids.", "tokens");
      std::vector<int32_t> ids;
      for (const auto& x : *t) {
        if (!x.is_number_integer() || !ctx.tok->contains(x.get<int32_t>()))
          return bad_request(api, "`tokens` holds " + x.dump() + ", which is not a token id of this model.", "tokens");
        ids.push_back(x.get<int32_t>());
      }
      return json{{"prompt", ctx.tok->decode(ids)}}.dump();
    }
  }
  return bad_request(api, "unknown route");
}

} // namespace

void spawn_token_request(std::shared_ptr<entrypoint::context> ctx, token_route route, std::string body,
                         std::string tenant, std::shared_ptr<http::response_writer> writer) {
  auto& sys = *ctx->sys;
  sys.spawn([ctx = std::move(ctx), route, body = std::move(body), tenant = std::move(tenant),
             writer = std::move(writer)](caf::event_based_actor* self) {
    auto r = answer(*ctx, route, body, tenant);
    if (r)
      writer->send_json(200, std::move(*r));
    else
      writer->send_json(static_cast<unsigned>(r.error().status), r.error().body());
    self->quit();
  });
}

} // namespace deepinfer::actors
