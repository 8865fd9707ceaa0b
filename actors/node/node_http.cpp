#include "actors/node/node_http.hpp"

#include <chrono>

#include <fmt/chrono.h>
#include <nlohmann/json.hpp>

#include "actors/http/anthropic_error.hpp"
#include "actors/http/api_keys.hpp"
#include "actors/http/http_server.hpp"
#include "actors/http/request_checks.hpp"
#include "actors/http/metrics_registry.hpp"
#include "actors/http/router.hpp"
#include "recipe/protocol/api_error.hpp"
#include "actors/control/membership.hpp"
#include "actors/node/status_page.hpp"

namespace deepinfer::actors {

namespace {

using http::metrics_registry;

/// Membership and instance state as Prometheus families, read from the snapshot at scrape time.
void add_cluster_collectors(metrics_registry& reg, std::shared_ptr<cluster_snapshot> snap) {
  using sample = metrics_registry::sample;
  auto gauge = metrics_registry::kind::gauge;
  reg.add_collector("deepinfer_controller_connected", "1 when this node is registered with the controller.",
                    gauge, {}, [snap] {
                      return std::vector<sample>{{{}, snap->get().controller_connected ? 1.0 : 0.0}};
                    });
  reg.add_collector("deepinfer_node_up", "1 when the controller sees the node alive, 0 when dead or left.",
                    gauge, {"node", "host", "port", "state"}, [snap] {
                      std::vector<sample> out;
                      for (auto& n : snap->get().view.nodes)
                        out.push_back({{n.info.name, n.info.host, std::to_string(n.info.port),
                                        to_string(n.state)},
                                       n.state == node_state::alive ? 1.0 : 0.0});
                      return out;
                    });
  reg.add_collector("deepinfer_node_joins", "How many times the node registered (restarts + 1).",
                    gauge, {"node"}, [snap] {
                      std::vector<sample> out;
                      for (auto& n : snap->get().view.nodes)
                        out.push_back({{n.info.name}, static_cast<double>(n.joins)});
                      return out;
                    });
  reg.add_collector("deepinfer_node_state_since_seconds", "Unix time of the node's last state change.",
                    gauge, {"node"}, [snap] {
                      std::vector<sample> out;
                      for (auto& n : snap->get().view.nodes)
                        out.push_back({{n.info.name}, static_cast<double>(n.since_ms) / 1000.0});
                      return out;
                    });
  reg.add_collector("deepinfer_instance_state", "1 for the instance's current state.", gauge,
                    {"instance", "node", "role", "state"}, [snap] {
                      std::vector<sample> out;
                      for (auto& i : snap->get().view.instances)
                        out.push_back({{i.instance, i.node, to_string(i.role), to_string(i.state)}, 1.0});
                      return out;
                    });
  reg.add_collector("deepinfer_instance_healthy_ranks", "Ranks of the instance's current generation (its EP size).",
                    gauge, {"instance"}, [snap] {
                      std::vector<sample> out;
                      for (auto& i : snap->get().view.instances)
                        out.push_back({{i.instance}, static_cast<double>(i.healthy_ranks)});
                      return out;
                    });
  reg.add_collector("deepinfer_instance_configured_ranks", "Ranks the instance was configured with.",
                    gauge, {"instance"}, [snap] {
                      std::vector<sample> out;
                      for (auto& i : snap->get().view.instances)
                        out.push_back({{i.instance}, static_cast<double>(i.configured_ranks)});
                      return out;
                    });
  reg.add_collector("deepinfer_instance_generation", "Restarts of the instance + 1.", gauge,
                    {"instance"}, [snap] {
                      std::vector<sample> out;
                      for (auto& i : snap->get().view.instances)
                        out.push_back({{i.instance}, static_cast<double>(i.generation)});
                      return out;
                    });
}

} // namespace

struct node_http::impl {
  http_endpoint cfg;
  std::shared_ptr<cluster_snapshot> snap;
  std::function<void(http::router&)> extra_routes;
  std::shared_ptr<metrics_registry> metrics = std::make_shared<metrics_registry>();
  std::unique_ptr<http::http_server> server;
  std::shared_ptr<const http::api_keys> keys;
};

node_http::node_http(http_endpoint cfg, std::shared_ptr<cluster_snapshot> snapshot,
                     std::function<void(http::router&)> extra_routes,
                     std::shared_ptr<http::metrics_registry> metrics,
                     std::shared_ptr<const http::api_keys> keys)
  : impl_(std::make_unique<impl>()) {
  impl_->keys = std::move(keys);
  if (metrics)
    impl_->metrics = std::move(metrics);
  impl_->extra_routes = std::move(extra_routes);
  impl_->cfg = std::move(cfg);
  impl_->snap = std::move(snapshot);
}

node_http::~node_http() {
  stop(std::chrono::milliseconds{0});
}

std::optional<std::string> node_http::start() {
  auto& d = *impl_;
  add_cluster_collectors(*d.metrics, d.snap);
  http::router routes;
  routes.add("GET", "/health", [snap = d.snap](http::http_request, std::shared_ptr<http::response_writer> w) {
    auto s = snap->get();
    nlohmann::json body{{"status", "ok"}, {"node", s.self.name},
                        {"controller_connected", s.controller_connected}};
    w->send_json(200, body.dump());
  });
  // vLLM's probes, which clients and orchestration written for vLLM call: /version (the server's
  // version) and /ping (SageMaker's liveness check, GET or POST), open like /health.
  routes.add("GET", "/version", [](http::http_request, std::shared_ptr<http::response_writer> w) {
    w->send_json(200, nlohmann::json{{"version", DEEPINFER_VERSION}}.dump());
  });
  for (const char* method : {"GET", "POST"})
    routes.add(method, "/ping", [](http::http_request, std::shared_ptr<http::response_writer> w) {
      w->send_json(200, "{}");
    });
  // A keyed server answers only its clients (OpenAI's 401 shape); /health stays open for
  // probes and load balancers.
  auto keyed = [keys = d.keys](const http::http_request& req, http::response_writer& w) {
    return http::key_allows(keys.get(), req, w);
  };
  // One shape for both SDKs: OpenAI's Model {id, object, created, owned_by} and Anthropic's
  // ModelInfo {id, type, display_name, created_at}; the list is OpenAI's {object, data} and
  // Anthropic's page {data, first_id, last_id, has_more}. Each SDK reads its own fields.
  // vLLM adds `root` and `max_model_len`, which clients built for it (LiteLLM, Open WebUI) read
  // for the context window.
  const auto served_since = std::chrono::system_clock::now();
  auto model_json = [served_since, max_len = d.cfg.max_model_len](const std::string& id) {
    auto j = nlohmann::json{{"id", id}, {"object", "model"},
                            {"created", std::chrono::duration_cast<std::chrono::seconds>(served_since.time_since_epoch()).count()},
                            {"owned_by", "deepinfer"}, {"type", "model"}, {"display_name", id},
                            {"created_at", fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", std::chrono::floor<std::chrono::seconds>(served_since))},
                            {"root", id}};
    if (max_len > 0)
      j["max_model_len"] = max_len;
    return j;
  };
  routes.add("GET", "/v1/models", [models = d.cfg.models, keyed, model_json](http::http_request req, std::shared_ptr<http::response_writer> w) {
    if (!keyed(req, *w))
      return;
    auto data = nlohmann::json::array();
    for (auto& m : models)
      data.push_back(model_json(m));
    nlohmann::json page{{"object", "list"}, {"data", data}, {"has_more", false}};
    page["first_id"] = models.empty() ? nlohmann::json() : nlohmann::json(models.front());
    page["last_id"] = models.empty() ? nlohmann::json() : nlohmann::json(models.back());
    w->send_json(200, page.dump());
  });
  routes.add("GET", "/v1/models/*", [models = d.cfg.models, keyed, model_json](http::http_request req, std::shared_ptr<http::response_writer> w) {
    if (!keyed(req, *w))
      return;
    auto id = req.path.substr(std::string_view{"/v1/models/"}.size());
    for (auto& m : models)
      if (m == id)
        return w->send_json(200, model_json(m).dump());
    const auto message = "The model '" + recipe::shown_value(id) + "' does not exist; GET /v1/models lists the served models.";
    // An Anthropic client (its SDK always sends the version header) reads Anthropic's errors.
    if (req.header("anthropic-version"))
      return w->send_json(404, http::anthropic_error(message, "not_found_error"));
    w->send_error(404, message, "model_not_found");
  });
  routes.add("GET", "/metrics", [metrics = d.metrics, keyed, guard = d.cfg.protect_metrics](
                                  http::http_request req, std::shared_ptr<http::response_writer> w) {
    if (guard && !keyed(req, *w))
      return;
    http::http_response r;
    r.content_type = std::string{metrics_registry::content_type};
    r.body = metrics->render();
    w->send(std::move(r));
  });
  // The status page (static; its data come from /status.json and /metrics, guarded like /metrics).
  routes.add("GET", "/", [](http::http_request, std::shared_ptr<http::response_writer> w) {
    http::http_response r;
    r.content_type = "text/html; charset=utf-8";
    r.body = std::string{status_page_html()};
    r.headers = {{"Content-Security-Policy", "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'"},
                 {"Cache-Control", "no-cache"}};
    w->send(std::move(r));
  });
  routes.add("GET", "/status.json", [snap = d.snap, keyed, guard = d.cfg.protect_metrics](
                                      http::http_request req, std::shared_ptr<http::response_writer> w) {
    if (guard && !keyed(req, *w))
      return;
    w->send_json(200, status_json(snap->get()));
  });
  if (d.extra_routes)
    d.extra_routes(routes);
  http::http_server::config sc;
  sc.host = d.cfg.host;
  sc.port = d.cfg.port;
  sc.body_limit_bytes = d.cfg.body_limit_bytes;
  sc.threads = d.cfg.threads;
  sc.max_connections = d.cfg.max_connections;
  sc.idle_timeout = d.cfg.idle_timeout;
  sc.header_timeout = d.cfg.header_timeout;
  sc.body_timeout = d.cfg.body_timeout;
  sc.allowed_hosts = d.cfg.allowed_hosts;
  sc.cors_origins = d.cfg.cors_origins;
  d.server = std::make_unique<http::http_server>(sc, std::move(routes), d.metrics);
  if (auto ec = d.server->start()) {
    d.server.reset();
    return ec.message();
  }
  return std::nullopt;
}

void node_http::stop(std::chrono::milliseconds deadline) {
  if (impl_->server) {
    impl_->server->stop(deadline);
    impl_->server.reset();
  }
}

uint16_t node_http::port() const {
  return impl_->server ? impl_->server->port() : 0;
}

} // namespace deepinfer::actors
