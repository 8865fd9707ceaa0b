#include "actors/entrypoint/entrypoint.hpp"

#include <charconv>
#include <random>

#include <nlohmann/json.hpp>

#include "actors/http/anthropic_error.hpp"
#include "actors/http/request_checks.hpp"
#include "actors/log.hpp"
#include "actors/node/lowered_thread.hpp"
#include "kv/prefix_cache.hpp"
#include "actors/entrypoint/request_actor.hpp"
#include "actors/entrypoint/request_prepare.hpp"
#include "actors/entrypoint/token_routes.hpp"
#include "actors/entrypoint/serving_context.hpp"
#include "recipe/protocol/api_error.hpp"
#include "recipe/render/renderer.hpp"
#include "recipe/stream/input_items.hpp"

namespace deepinfer::actors {

namespace {

void send_api_error(http::response_writer& w, recipe::api_kind api, int status, std::string type,
                    std::string message, std::string param = {}) {
  w.send_json(static_cast<unsigned>(status),
              request_error(api, status, std::move(type), std::move(message), std::move(param)).body());
}

/// The API key check; false (answered with the API's 401) when the request may not go on.
/// `tenant` is its API key.
bool key_accepted(const std::shared_ptr<entrypoint::context>& ctx, recipe::api_kind api, const http::http_request& req,
                  http::response_writer& w, std::string& tenant) {
  return http::key_allows(ctx->keys.get(), req, w, api, &tenant);
}

/// On the I/O thread only what costs nothing: the body's media type and the API key; false
/// (answered with the API's error) when the request may not go on. `tenant` is its API key.
bool accepted(const std::shared_ptr<entrypoint::context>& ctx, recipe::api_kind api, http::http_request& req,
              http::response_writer& w, std::string& tenant) {
  if (auto problem = http::json_body_problem(req)) {
    send_api_error(w, api, 415, "invalid_request_error", *problem);
    return false;
  }
  return key_accepted(ctx, api, req, w, tenant);
}

/// GET / DELETE /v1/responses/{id}: the tenant's stored response (OpenAI's 404 otherwise); a
/// background one still running is there `queued` (deleting it cancels it too).
void stored_response(const std::shared_ptr<entrypoint::context>& ctx, const http::http_request& req,
                     const std::shared_ptr<http::response_writer>& writer, bool remove) {
  auto& w = *writer;
  std::string tenant;
  if (!key_accepted(ctx, recipe::api_kind::responses, req, w, tenant))
    return;
  auto id = std::string{req.path.substr(std::string_view{"/v1/responses/"}.size())};
  constexpr std::string_view items_suffix = "/input_items";
  const bool items = !remove && id.ends_with(items_suffix) && id.size() > items_suffix.size();
  if (items)
    id.resize(id.size() - items_suffix.size());
  // Another sub-resource: say so, rather than look for a response whose id has a slash in it.
  if (id.find('/') != std::string::npos)
    return send_api_error(w, recipe::api_kind::responses, 404, "invalid_request_error",
                          "Invalid URL (" + req.method + " " + req.path + "): this server stores responses for "
                          "GET / DELETE /v1/responses/{id}, GET /v1/responses/{id}/input_items, "
                          "POST /v1/responses/{id}/cancel and previous_response_id.");
  auto missing = [&] {
    send_api_error(w, recipe::api_kind::responses, 404, "invalid_request_error",
                   "Response with id '" + id + "' not found.", "response_id");
  };
  if (items) {
    // The conversation the response read: its stored history without the output at its end (a
    // background turn still running has none stored yet).
    auto q = recipe::parse_input_items_query(req.query);
    if (!q)
      return w.send_json(400, q.error().body());
    auto stored = ctx->responses->get(tenant, id);
    if (!stored)
      return missing();
    std::span<const recipe::message> input = stored->history;
    if (!input.empty())
      input = input.first(input.size() - 1);
    auto page = recipe::input_items_page(input, id, *q);
    if (!page)
      return w.send_json(400, page.error().body());
    return w.send_json(200, page->dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace));
  }
  if (remove) {
    auto stored = ctx->responses->get(tenant, id);
    if (!ctx->responses->erase(tenant, id))
      return missing();
    if (stored && stored->running())
      stored->cancel();
    return w.send_json(200, nlohmann::json{{"id", id}, {"object", "response.deleted"}, {"deleted", true}}.dump());
  }
  bool stream = false;
  int64_t starting_after = -1;
  for (std::string_view q = req.query; !q.empty();) {
    auto amp = q.find('&');
    auto field = q.substr(0, amp);
    q = amp == std::string_view::npos ? std::string_view{} : q.substr(amp + 1);
    if (field == "stream=true" || field == "stream=1") {
      stream = true;
    } else if (field.starts_with("starting_after=")) {
      auto v = field.substr(std::string_view{"starting_after="}.size());
      auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), starting_after);
      if (ec != std::errc{} || end != v.data() + v.size() || starting_after < -1)
        return send_api_error(w, recipe::api_kind::responses, 400, "invalid_request_error",
                              "Invalid 'starting_after': expected the sequence number of an event (an integer >= 0).",
                              "starting_after");
    }
  }
  auto stored = ctx->responses->get(tenant, id);
  if (!stored)
    return missing();
  if (!stream)
    return w.send_json(200, stored->body);
  if (!stored->events)
    return send_api_error(w, recipe::api_kind::responses, 400, "invalid_request_error",
                          "Response with id '" + id + "' was not created with background: true; only a background "
                          "response can be streamed again. GET it without 'stream'.",
                          "stream");
  stored->events->replay(writer, starting_after);
}

/// POST /v1/responses/{id}/cancel: stops a background response. Cancelling one that ended
/// already answers it as it is (OpenAI's cancel is idempotent); one that did not run in the
/// background cannot be cancelled.
void cancel_response(const std::shared_ptr<entrypoint::context>& ctx, const http::http_request& req,
                     http::response_writer& w) {
  std::string tenant;
  if (!key_accepted(ctx, recipe::api_kind::responses, req, w, tenant))
    return;
  constexpr std::string_view prefix = "/v1/responses/", suffix = "/cancel";
  std::string_view rest = std::string_view{req.path}.substr(prefix.size());
  if (!rest.ends_with(suffix) || rest.size() == suffix.size() ||
      rest.substr(0, rest.size() - suffix.size()).find('/') != std::string_view::npos)
    return send_api_error(w, recipe::api_kind::responses, 404, "invalid_request_error",
                          "Invalid URL (POST " + req.path + "): POST /v1/responses/{id}/cancel cancels a "
                          "background response; create one with POST /v1/responses.");
  const auto id = std::string{rest.substr(0, rest.size() - suffix.size())};
  auto stored = ctx->responses->get(tenant, id);
  if (!stored)
    return send_api_error(w, recipe::api_kind::responses, 404, "invalid_request_error",
                          "Response with id '" + id + "' not found.", "response_id");
  if (!stored->background)
    return send_api_error(w, recipe::api_kind::responses, 400, "invalid_request_error",
                          "Response with id '" + id + "' did not run in the background: only responses created "
                          "with background: true can be cancelled.", "response_id");
  if (!stored->running())
    return w.send_json(200, stored->body);
  stored->cancel();
  // The turn stores its end (with what it generated) as it stops; this answer is the response
  // as created, now cancelled.
  auto body = nlohmann::ordered_json::parse(stored->body);
  body["status"] = "cancelled";
  w.send_json(200, body.dump());
}

/// Parse, render and tokenize run in the request actor, on the CAF scheduler.
void handle(const std::shared_ptr<entrypoint::context>& ctx, recipe::api_kind api, http::http_request& req,
            std::shared_ptr<http::response_writer> w) {
  std::string tenant;
  if (accepted(ctx, api, req, *w, tenant))
    spawn_request_actor(ctx, api, std::move(req.body), std::move(tenant), std::move(w),
                        {req.first_byte, req.dispatched});
}

} // namespace

entrypoint::entrypoint(std::shared_ptr<context> ctx) : ctx_(std::move(ctx)) {}

entrypoint::~entrypoint() = default;

std::unique_ptr<entrypoint> entrypoint::create(caf::actor_system& sys, const serving_config& cfg,
                                               std::shared_ptr<cluster_snapshot> cluster,
                                               std::shared_ptr<kv::prefix_cache> cache,
                                               std::shared_ptr<http::metrics_registry> metrics,
                                               std::string* error) {
  auto ctx = std::make_shared<context>();
  ctx->metrics = metrics;
  auto token_buckets = std::vector<double>{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5};
  ctx->ttft = &metrics->add_histogram("deepinfer_time_to_first_token_seconds",
                                      "Request arrival to its first token.", {},
                                      http::metrics_registry::default_latency_buckets()).with({});
  ctx->request_stages = &metrics->add_histogram(
    "deepinfer_request_stage_seconds",
    "Where answered requests' time went, stage by stage from their first byte (the stages of the "
    "Server-Timing header; `total` is the whole request).",
    {"stage"}, http::metrics_registry::default_latency_buckets());
  ctx->itl = &metrics->add_histogram("deepinfer_inter_token_latency_seconds",
                                     "Time between consecutive tokens of a request.", {}, token_buckets)
                .with({});
  ctx->prompt_tokens = &metrics->add_counter("deepinfer_prompt_tokens_total", "Prompt tokens received.").with({});
  ctx->cached_tokens = &metrics->add_counter("deepinfer_cached_tokens_total",
                                             "Prompt tokens served from the prefix cache.").with({});
  ctx->resubmitted_cached_tokens =
    &metrics->add_counter("deepinfer_resubmitted_cached_tokens_total",
                          "Prompt tokens the prefills of resubmitted attempts (a decode or prefill rank was "
                          "lost) found in the prefix cache.").with({});
  ctx->generated_tokens = &metrics->add_counter("deepinfer_generated_tokens_total", "Tokens generated.").with({});
  ctx->in_flight = &metrics->add_gauge("deepinfer_requests_in_flight",
                                       "Requests between parse and their last byte (the entrypoint queue).")
                      .with({});
  ctx->sys = &sys;
  ctx->cfg = cfg;
  ctx->responses = std::make_shared<response_store>(
    response_store::limits{cfg.requests.responses_ttl, cfg.requests.responses_max_bytes});
  ctx->admission = std::make_shared<admission_control>(cfg.admission);
  ctx->admission_refused = &metrics->add_counter("deepinfer_admission_refused_total",
                                                 "Requests refused by admission control (429 / 529) before "
                                                 "any compute, by reason: queue_full, queue_timeout.",
                                                 {"reason"});
  for (auto reason : {"queue_full", "queue_timeout"})
    ctx->admission_refused->with({reason});
  using sample = http::metrics_registry::sample;
  metrics->add_collector("deepinfer_admission_waiting", "Requests waiting for admission.",
                         http::metrics_registry::kind::gauge, {}, [a = ctx->admission] {
                           return std::vector<sample>{{{}, static_cast<double>(a->current().waiting)}};
                         });
  metrics->add_collector("deepinfer_admission_prefill_tokens",
                         "Uncached prompt tokens admitted and not yet prefilled.",
                         http::metrics_registry::kind::gauge, {}, [a = ctx->admission] {
                           return std::vector<sample>{{{}, static_cast<double>(a->current().prefill_tokens)}};
                         });
  metrics->add_collector("deepinfer_admission_sequences", "Requests admitted and not yet finished.",
                         http::metrics_registry::kind::gauge, {}, [a = ctx->admission] {
                           return std::vector<sample>{{{}, static_cast<double>(a->current().sequences)}};
                         });
  ctx->vllm = vllm_metrics::add(*metrics, cfg.model_name,
                                {ctx->admission, ctx->prompt_tokens, ctx->cached_tokens, ctx->generated_tokens});
  ctx->cluster = std::move(cluster);
  ctx->cache = std::move(cache);
  if (!cfg.prefill_cost) {
    *error = "serving_config::prefill_cost is required (node_runtime fits it)";
    return nullptr;
  }
  // Asks are priced by the fit of this node's engine setup (the bucket demand, the autoscaler's
  // quota use); the prefill balancer prices each job again with the fit of the instance that
  // pulls it (instance_status::prefill_cost), so a slower node's ranks hold more quota per job.
  ctx->quota = cfg.prefill_cost;
  auto& terms = metrics->add_gauge("deepinfer_prefill_cost_model",
                                   "The fitted prefill cost model prefills are priced with: seconds (per "
                                   "token, per token^2) of each term of a0 + a1 q + a2 q c + a3 q^2 + "
                                   "f0 + f1 (c + q).",
                                   {"term"});
  const auto& k = cfg.prefill_cost->coefficients();
  for (auto [term, value] : {std::pair{"a0", k.a0}, {"a1", k.a1}, {"a2", k.a2}, {"a3", k.a3}, {"f0", k.f0}, {"f1", k.f1}})
    terms.with({term}).set(value);
  // The low 40 bits carry the attempt id (request id x 16 + attempt).
  ctx->balancer_tag = (std::random_device{}() * uint64_t{0x9e3779b97f4a7c15}) << 40;
  ctx->kv_transfers = &metrics->add_counter("deepinfer_kv_transfers_total",
                                            "Prefilled sequences handed to a decode rank, by KV transport.",
                                            {"transport"});
  ctx->kv_transfer_bytes = &metrics->add_counter("deepinfer_kv_transfer_bytes_total",
                                                 "KV bytes moved prefill -> decode, by transport.",
                                                 {"transport"});
  ctx->handoffs = &metrics->add_counter("deepinfer_handoffs_total",
                                        "Requests a draining decode rank handed, with their KV, to a rank "
                                        "of another decode instance.").with({});
  ctx->handoff_seconds = &metrics->add_histogram("deepinfer_handoff_seconds",
                                                 "A handoff's offer to the new rank's first tokens: the pause "
                                                 "its stream sees.",
                                                 {}, http::metrics_registry::default_latency_buckets()).with({});
  ctx->snapshot_hits = &metrics->add_counter("deepinfer_prefix_cache_snapshot_hits_total",
                                             "Prefix hits with their SWA snapshot (exact, no replay), by "
                                             "where the snapshot was: this node (local) or another (remote).",
                                             {"source"});
  metrics->add_collector("deepinfer_prefix_cache_hit_ratio",
                         "Prompt tokens served from the prefix cache / prompt tokens, since start.",
                         http::metrics_registry::kind::gauge, {},
                         [c = ctx->cached_tokens, p = ctx->prompt_tokens] {
                           auto prompt = p->value();
                           return std::vector<http::metrics_registry::sample>{
                             {{}, prompt > 0 ? c->value() / prompt : 0.0}};
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
  // The engine ranks load the same config.json; an entrypoint that cannot read it (tests with
  // a tokenizer only) refuses images with a 400 instead of failing to start.
  if (auto mc = engine::load_config_file(cfg.model_dir + "/config.json"); mc.config) {
    ctx->vision = mc.config->vision;
    ctx->window = mc.config->window;
    // Every prompt would fail at the prefill rank ("token id out of range"): refuse to start.
    if (static_cast<int64_t>(mc.config->vocab_size) < static_cast<int64_t>(ctx->tok->vocab_size())) {
      *error = "the model in " + cfg.model_dir + " has " + std::to_string(mc.config->vocab_size) +
               " token ids, fewer than its tokenizer's " + std::to_string(ctx->tok->vocab_size()) +
               " (" + cfg.tokenizer_path + "): make the model with the tokenizer's vocabulary (deepinfer-mkmodel's "
               "default vocab_size)";
      return nullptr;
    }
  }
  ctx->so_compiles = &metrics->add_counter("deepinfer_so_compile_requests_total",
                                           "Structured-output constraints this entrypoint had compiled, by where "
                                           "(so_node: a node with the so role; local: this node's compiler) and "
                                           "result (compiled, refused, unanswered).",
                                           {"where", "result"});
  if (ctx->vision.enabled()) {
    auto& in_flight = metrics->add_gauge("deepinfer_vision_patches_in_flight",
                                         "Patches of the images this entrypoint has in flight on each vision rank.",
                                         {"node", "rank"});
    ctx->vision_routes = std::make_shared<vision_router>(ctx->vision.patch, &in_flight, cfg.vision_balancer);
    // http(s) image URLs: fetched on the fetcher's own thread, under the same byte limit as an
    // inline image.
    auto fetch = cfg.image_fetch;
    fetch.max_bytes = cfg.vision.max_bytes;
    ctx->fetcher = std::make_shared<http::image_fetcher>(fetch);
    if (cfg.background_body_bytes > 0) {
      ctx->background = std::make_shared<lowered_thread>(cfg.vision_priority, "http.parse");
      if (const auto& refused = ctx->background->priority_error())
        log().warn("entrypoint: large request bodies are parsed at the process's CPU priority: {}", *refused);
    }
    ctx->image_fetches = &metrics->add_counter("deepinfer_image_fetches_total",
                                               "Image URLs fetched by the entrypoint, by result (ok, or why not: "
                                               "bad_url, refused_address, unreachable, tls, timeout, too_large, "
                                               "not_image, http_status, too_many_redirects).",
                                               {"result"});
    ctx->image_fetch_seconds = &metrics->add_histogram("deepinfer_image_fetch_seconds",
                                                       "One image URL's fetch, redirects included.", {},
                                                       http::metrics_registry::default_latency_buckets())
                                  .with({});
    ctx->image_fetch_bytes = &metrics->add_counter("deepinfer_image_fetch_bytes_total",
                                                   "Bytes of the image files fetched from URLs.").with({});
    ctx->vision_skipped = &metrics->add_counter("deepinfer_vision_images_cached_total",
                                                "Images not encoded because the prompt's prefix-cache hit holds "
                                                "their KV (a conversation sent again with its images).").with({});
    ctx->vision_queue = &metrics->add_histogram("deepinfer_vision_queue_seconds",
                                                "Encoder queue time: an image's round trip to its vision rank "
                                                "less the encode itself (mailbox wait and transfer).",
                                                // Finer than the default latency buckets from 0.1 s to
                                                // 10 s, where one large image holds a rank: the
                                                // balancer comparison reads its p99 from them.
                                                {}, {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.3, 0.4,
                                                     0.5, 0.75, 1, 1.5, 2, 2.5, 3, 4, 5, 7.5, 10, 30, 120})
                           .with();
  }
  return std::unique_ptr<entrypoint>(new entrypoint(std::move(ctx)));
}

void entrypoint::set_structured_output(std::shared_ptr<structured_output> so, so_compiler_actor compiler) {
  ctx_->so = std::move(so);
  ctx_->so_compiler = std::move(compiler);
}

void entrypoint::set_api_keys(std::shared_ptr<const http::api_keys> keys) { ctx_->keys = std::move(keys); }

void entrypoint::add_routes(http::router& routes) {
  for (auto [path, api] : {std::pair{"/v1/chat/completions", recipe::api_kind::chat},
                           std::pair{"/v1/responses", recipe::api_kind::responses},
                           std::pair{"/v1/messages", recipe::api_kind::messages},
                           std::pair{"/v1/completions", recipe::api_kind::completions}})
    routes.add("POST", path, [ctx = ctx_, api](http::http_request req, std::shared_ptr<http::response_writer> w) {
      handle(ctx, api, req, std::move(w));
    });
  for (auto [method, remove] : {std::pair{"GET", false}, std::pair{"DELETE", true}})
    routes.add(method, "/v1/responses/*", [ctx = ctx_, remove](http::http_request req, std::shared_ptr<http::response_writer> w) {
      stored_response(ctx, req, w, remove);
    });
  routes.add("POST", "/v1/responses/*", [ctx = ctx_](http::http_request req, std::shared_ptr<http::response_writer> w) {
    cancel_response(ctx, req, *w);
  });
  for (auto [path, route] : {std::pair{"/v1/messages/count_tokens", token_route::count_tokens},
                             std::pair{"/tokenize", token_route::tokenize},
                             std::pair{"/detokenize", token_route::detokenize}})
    routes.add("POST", path, [ctx = ctx_, route](http::http_request req, std::shared_ptr<http::response_writer> w) {
      const auto api = route == token_route::count_tokens ? recipe::api_kind::messages : recipe::api_kind::chat;
      std::string tenant;
      if (accepted(ctx, api, req, *w, tenant))
        spawn_token_request(ctx, route, std::move(req.body), std::move(tenant), std::move(w));
    });
  // The server's own answers (404, 405, 408, 413, 415, 431, 503) on Anthropic's routes in its shape.
  auto anthropic = [](unsigned status, std::string_view message, std::string_view) {
    return http::anthropic_error(message, http::anthropic_error_type(status));
  };
  routes.set_error_format("/v1/messages/*", anthropic);
}

} // namespace deepinfer::actors
