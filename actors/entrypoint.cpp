#include "actors/entrypoint.hpp"

#include "actors/log.hpp"
#include "actors/request_actor.hpp"
#include "actors/serving_context.hpp"
#include "recipe/protocol/api_error.hpp"
#include "recipe/protocol/parse_request.hpp"
#include "recipe/render/renderer.hpp"

namespace deepinfer::actors {

namespace {

void send_api_error(http::response_writer& w, recipe::api_kind api, int status, std::string type,
                    std::string message, std::string param = {}) {
  recipe::api_error e;
  e.api = api;
  e.status = status;
  e.type = std::move(type);
  e.message = std::move(message);
  e.param = std::move(param);
  w.send_json(static_cast<unsigned>(status), e.body());
}

/// Parse -> model check -> render -> tokenize -> length check, then a request actor. Runs on an
/// I/O thread; the work here is bounded by the body limit.
void handle(const std::shared_ptr<entrypoint::context>& ctx, recipe::api_kind api,
            const http::http_request& req, std::shared_ptr<http::response_writer> w) {
  auto conv = recipe::parse_request(api, req.body);
  if (!conv) {
    w->send_json(static_cast<unsigned>(conv.error().status), conv.error().body());
    return;
  }
  bool anthropic = api == recipe::api_kind::messages;
  if (conv->model != ctx->cfg.model_name) {
    send_api_error(*w, api, 404, anthropic ? "not_found_error" : "invalid_request_error",
                   "The model '" + conv->model + "' does not exist; this server serves '"
                     + ctx->cfg.model_name + "'.",
                   "model");
    return;
  }
  auto segments = recipe::render(*conv, *ctx->specials);
  if (!segments) {
    w->send_json(static_cast<unsigned>(segments.error().status), segments.error().body());
    return;
  }
  auto prompt = ctx->tok->encode(*segments);
  auto max_tokens = conv->sampling.max_tokens.value_or(ctx->cfg.default_max_tokens);
  if (static_cast<int64_t>(prompt.size()) + max_tokens > ctx->cfg.context_limit) {
    send_api_error(*w, api, 400, "invalid_request_error",
                   "This model's maximum context length is " + std::to_string(ctx->cfg.context_limit)
                     + " tokens. However, you requested " + std::to_string(prompt.size() + max_tokens)
                     + " tokens (" + std::to_string(prompt.size()) + " in the messages, "
                     + std::to_string(max_tokens) + " in the completion).",
                   "messages");
    return;
  }
  spawn_request_actor(ctx, std::move(*conv), std::move(prompt), std::move(w));
}

} // namespace

entrypoint::entrypoint(std::shared_ptr<context> ctx) : ctx_(std::move(ctx)) {}

entrypoint::~entrypoint() = default;

std::unique_ptr<entrypoint> entrypoint::create(caf::actor_system& sys, const serving_config& cfg,
                                               instance_supervisor_actor prefill,
                                               instance_supervisor_actor decode, uint32_t decode_ranks,
                                               std::shared_ptr<http::metrics_registry> metrics,
                                               std::string* error) {
  auto ctx = std::make_shared<context>();
  ctx->metrics = metrics;
  auto token_buckets = std::vector<double>{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5};
  ctx->ttft = &metrics->add_histogram("deepinfer_time_to_first_token_seconds",
                                      "Request arrival to its first token.", {},
                                      http::metrics_registry::default_latency_buckets()).with({});
  ctx->itl = &metrics->add_histogram("deepinfer_inter_token_latency_seconds",
                                     "Time between consecutive tokens of a request.", {}, token_buckets)
                .with({});
  ctx->prompt_tokens = &metrics->add_counter("deepinfer_prompt_tokens_total", "Prompt tokens received.").with({});
  ctx->cached_tokens = &metrics->add_counter("deepinfer_cached_tokens_total",
                                             "Prompt tokens served from the prefix cache.").with({});
  ctx->generated_tokens = &metrics->add_counter("deepinfer_generated_tokens_total", "Tokens generated.").with({});
  ctx->in_flight = &metrics->add_gauge("deepinfer_requests_in_flight",
                                       "Requests between parse and their last byte (the entrypoint queue).")
                      .with({});
  ctx->sys = &sys;
  ctx->cfg = cfg;
  ctx->prefill = std::move(prefill);
  ctx->decode = std::move(decode);
  ctx->decode_ranks = std::make_shared<decode_load>(decode_ranks, balancers::decode_balancer::config{});
  metrics->add_collector("deepinfer_decode_router_requests",
                         "Requests the decode router has placed on each decode rank and not yet released.",
                         http::metrics_registry::kind::gauge, {"rank"}, [load = ctx->decode_ranks] {
                           std::vector<http::metrics_registry::sample> out;
                           auto ranks = load->snapshot();
                           for (size_t i = 0; i < ranks.size(); ++i)
                             out.push_back({{std::to_string(i)}, static_cast<double>(ranks[i].requests)});
                           return out;
                         });
  auto loaded = recipe::tokenizer::load(cfg.tokenizer_path);
  if (!loaded) {
    *error = "cannot load tokenizer " + cfg.tokenizer_path + ": " + loaded.error;
    return nullptr;
  }
  ctx->tok = loaded.value;
  auto version = recipe::parse_template_version(cfg.template_version);
  if (!version) {
    *error = "unknown template version '" + cfg.template_version + "'";
    return nullptr;
  }
  auto tok = ctx->tok;
  auto specials = recipe::special_table::build(*version, [tok](std::string_view s) { return tok->special_id(s); });
  if (!specials) {
    *error = "tokenizer lacks a special token: " + specials.error();
    return nullptr;
  }
  ctx->specials = std::move(*specials);
  auto eos = ctx->specials->id(recipe::spelling::eos);
  if (!eos) {
    *error = "tokenizer has no EOS token";
    return nullptr;
  }
  ctx->eos = *eos;
  return std::unique_ptr<entrypoint>(new entrypoint(std::move(ctx)));
}

void entrypoint::add_routes(http::router& routes) {
  for (auto [path, api] : {std::pair{"/v1/chat/completions", recipe::api_kind::chat},
                           std::pair{"/v1/responses", recipe::api_kind::responses},
                           std::pair{"/v1/messages", recipe::api_kind::messages}})
    routes.add("POST", path, [ctx = ctx_, api](http::http_request req, std::shared_ptr<http::response_writer> w) {
      handle(ctx, api, req, std::move(w));
    });
}

} // namespace deepinfer::actors
