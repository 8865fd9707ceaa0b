#include "actors/entrypoint/admin_routes.hpp"

#include <chrono>
#include <optional>

#include <caf/actor_cast.hpp>
#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/send.hpp>
#include <nlohmann/json.hpp>

#include "actors/control/cluster_snapshot.hpp"
#include "actors/control/membership.hpp"
#include "actors/http/request_checks.hpp"
#include "actors/http/response_writer.hpp"
#include "actors/interfaces.hpp"
#include "actors/log.hpp"
#include "actors/names.hpp"
#include "recipe/protocol/api_error.hpp"

namespace deepinfer::actors {

namespace {

using nlohmann::json;

/// How long the listing waits for a supervisor (one on a dead node answers with an error).
constexpr auto supervisor_timeout = std::chrono::seconds(2);

void send_error(http::response_writer& w, int status, std::string message, std::string param = {}) {
  recipe::api_error e;
  e.status = status;
  e.type = status == 404 ? "not_found_error" : "invalid_request_error";
  e.message = std::move(message);
  e.param = std::move(param);
  w.send_json(static_cast<unsigned>(status), e.body());
}

json describe(const instance_status& s, const ep_report* ep) {
  json j{{"instance", s.instance},
         {"node", s.node},
         {"role", to_string(s.role)},
         {"state", to_string(s.state)},
         {"generation", s.generation},
         {"configured_ranks", s.configured_ranks},
         {"ep_size", s.state == instance_state::running || s.state == instance_state::draining ? s.healthy_ranks : 0},
         {"ranks", json::array()},
         {"last_failure", s.last_failure}};
  for (uint32_t r = 0; r < s.ranks.size(); ++r)
    j["ranks"].push_back({{"rank", r}});
  if (ep == nullptr)
    return j;
  j["ep"] = {{"steps", ep->steps},
             {"moe_lb", ep->moe_lb},
             {"replacements", ep->replacements},
             {"moved_slots", ep->moved_slots}};
  // Per rank: the routed experts of its slots, per layer ([layer][slot] = expert).
  for (uint32_t r = 0; r < j["ranks"].size(); ++r) {
    auto& rank = j["ranks"][r];
    if (r < ep->routed_expert_bytes.size())
      rank["routed_expert_bytes"] = ep->routed_expert_bytes[r];
    if (ep->slots_per_rank == 0)
      continue;
    json layers = json::array();
    const auto per_layer = static_cast<std::size_t>(ep->slots_per_rank) * ep->ep_size;
    for (uint32_t l = 0; l < ep->layers; ++l) {
      json slots = json::array();
      for (uint32_t k = 0; k < ep->slots_per_rank; ++k) {
        const auto at = l * per_layer + r * ep->slots_per_rank + k;
        if (at < ep->placement.size())
          slots.push_back(ep->placement[at]);
      }
      layers.push_back(std::move(slots));
    }
    rank["experts"] = std::move(layers);
  }
  j["slots_per_rank"] = ep->slots_per_rank;
  j["routed_experts"] = ep->experts;
  return j;
}

void list_instances(caf::actor_system& sys, const cluster_snapshot& cluster,
                    std::shared_ptr<http::response_writer> w) {
  auto view = cluster.get().view;
  sys.spawn([view = std::move(view), w = std::move(w)](caf::event_based_actor* self) {
    struct gather {
      std::vector<json> out;
      std::size_t pending = 0;
    };
    auto g = std::make_shared<gather>();
    g->out.resize(view.instances.size());
    auto done = [g, w] {
      if (--g->pending > 0)
        return;
      json body{{"object", "list"}, {"data", json::array()}};
      for (auto& j : g->out)
        body["data"].push_back(std::move(j));
      w->send_json(200, body.dump());
    };
    g->pending = view.instances.size() + 1;
    for (std::size_t i = 0; i < view.instances.size(); ++i) {
      const auto& s = view.instances[i];
      g->out[i] = describe(s, nullptr);
      auto sup = caf::actor_cast<instance_supervisor_actor>(s.supervisor);
      if (!sup) {
        done();
        continue;
      }
      self->request(sup, supervisor_timeout, ep_atom::value)
        .then([g, i, s, done](const ep_report& r) {
                g->out[i] = describe(s, &r);
                done();
              },
              [done](const caf::error&) { done(); });
    }
    done();
  });
}

/// The body of a route about one instance: a JSON object with an `instance` string (its `name`);
/// nullopt once a 400 is answered (`shape` shows the object expected).
struct instance_request {
  json body;
  std::string name;
};
std::optional<instance_request> instance_body(const http::http_request& req, http::response_writer& w,
                                              const std::string& shape) {
  auto body = json::parse(req.body, nullptr, false);
  if (body.is_discarded() || !body.is_object()) {
    send_error(w, 400, "The body must be a JSON object: " + shape + ".");
    return std::nullopt;
  }
  auto instance = body.find("instance");
  if (instance == body.end() || !instance->is_string()) {
    send_error(w, 400, "'instance' (a string, as GET /admin/instances lists it) is required.", "instance");
    return std::nullopt;
  }
  return instance_request{body, instance->get<std::string>()};
}

void fail_rank(const cluster_snapshot& cluster, const http::http_request& req, http::response_writer& w) {
  auto parsed = instance_body(req, w, "{\"instance\": \"<node>/<role>\", \"rank\": 0, \"down_ms\": 3000}");
  if (!parsed)
    return;
  auto& [body, name] = *parsed;
  auto rank = body.find("rank");
  if (rank == body.end() || !rank->is_number_unsigned()) {
    send_error(w, 400, "'rank' (a rank index of the instance's current generation, >= 0) is required.", "rank");
    return;
  }
  int64_t down_ms = 0;
  if (auto d = body.find("down_ms"); d != body.end()) {
    if (!d->is_number_unsigned() || d->get<uint64_t>() > 86400000u) {
      send_error(w, 400, "'down_ms' must be an integer from 0 to 86400000 (how long the rank stays failed).",
                 "down_ms");
      return;
    }
    down_ms = d->get<int64_t>();
  }
  auto view = cluster.get().view;
  for (auto& s : view.instances) {
    if (s.instance != name)
      continue;
    const auto r = rank->get<uint64_t>();
    if (s.state != instance_state::running || r >= s.ranks.size()) {
      send_error(w, 409, "Instance '" + name + "' is " + to_string(s.state) + " with " +
                         std::to_string(s.ranks.size()) + " running ranks; no rank " + std::to_string(r) +
                         " to fail now.", "rank");
      return;
    }
    auto sup = caf::actor_cast<instance_supervisor_actor>(s.supervisor);
    if (!sup) {
      send_error(w, 409, "Instance '" + name + "' has no reachable supervisor.", "instance");
      return;
    }
    log().warn("admin: failing instance={} rank={} generation={} down_ms={}", name, r, s.generation, down_ms);
    caf::anon_send(sup, fail_atom::value, static_cast<uint32_t>(r),
                   std::string{"failed by POST /admin/fail-rank"}, down_ms);
    json out{{"instance", name}, {"rank", r}, {"generation", s.generation}, {"down_ms", down_ms}};
    w.send_json(202, out.dump());
    return;
  }
  send_error(w, 404, "No instance '" + name + "'; GET /admin/instances lists them.", "instance");
}

/// `POST /admin/drain`: the decode instance's drain notice (issue 17), answered 202 once sent;
/// the drain itself runs on (GET /admin/instances shows it `draining`).
void drain_instance(const cluster_snapshot& cluster, const http::http_request& req, http::response_writer& w) {
  auto parsed = instance_body(req, w, "{\"instance\": \"<node>/decode\", \"grace_s\": 60}");
  if (!parsed)
    return;
  auto& [body, name] = *parsed;
  int64_t grace_ms = -1; // the instance's own ([autoscaler] decode_grace_seconds)
  if (auto g = body.find("grace_s"); g != body.end()) {
    if (!g->is_number() || g->get<double>() < 0 || g->get<double>() > 86400) {
      send_error(w, 400, "'grace_s' must be a number of seconds from 0 to 86400 (how long the instance "
                         "decodes on before it hands its requests off).", "grace_s");
      return;
    }
    grace_ms = static_cast<int64_t>(g->get<double>() * 1000.0);
  }
  auto view = cluster.get().view;
  for (auto& s : view.instances) {
    if (s.instance != name)
      continue;
    auto sup = caf::actor_cast<instance_supervisor_actor>(s.supervisor);
    if (s.role != node_role::decode || !sup) {
      send_error(w, 409, "Instance '" + name + "' is a " + to_string(s.role) + " instance" +
                         (sup ? "" : " without a reachable supervisor") + "; only decode instances drain.",
                 "instance");
      return;
    }
    log().warn("admin: draining instance={} grace_ms={}", name, grace_ms);
    caf::anon_send(sup, drain_atom::value, grace_ms);
    json out{{"instance", name}, {"state", "draining"}};
    if (grace_ms >= 0)
      out["grace_s"] = static_cast<double>(grace_ms) / 1000.0;
    w.send_json(202, out.dump());
    return;
  }
  send_error(w, 404, "No instance '" + name + "'; GET /admin/instances lists them.", "instance");
}

} // namespace

void add_admin_routes(http::router& routes, caf::actor_system& sys, std::shared_ptr<cluster_snapshot> cluster,
                      std::shared_ptr<const http::api_keys> keys) {
  // The operator routes take capacity away: behind the API keys whenever the server has some.
  auto allowed = [keys = std::move(keys)](const http::http_request& req, http::response_writer& w) {
    return http::key_allows(keys.get(), req, w);
  };
  routes.add("GET", "/admin/instances",
             [&sys, cluster, allowed](http::http_request req, std::shared_ptr<http::response_writer> w) {
               if (allowed(req, *w))
                 list_instances(sys, *cluster, std::move(w));
             });
  routes.add("POST", "/admin/fail-rank",
             [cluster, allowed](http::http_request req, std::shared_ptr<http::response_writer> w) {
               if (allowed(req, *w))
                 fail_rank(*cluster, req, *w);
             });
  routes.add("POST", "/admin/drain",
             [cluster, allowed](http::http_request req, std::shared_ptr<http::response_writer> w) {
               if (allowed(req, *w))
                 drain_instance(*cluster, req, *w);
             });
}

} // namespace deepinfer::actors
