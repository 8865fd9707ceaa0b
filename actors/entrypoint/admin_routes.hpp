#pragma once

#include <memory>
#include <string>
#include <vector>

#include <caf/fwd.hpp>

#include "actors/http/api_keys.hpp"
#include "actors/http/router.hpp"

namespace deepinfer::actors {

class cluster_snapshot;

/// The operator endpoints on a node's HTTP port, served only when `[http] admin = true` (or
/// `--admin`): they can take capacity away, so they are never on by default.
/// - `GET /admin/instances`: every instance of the membership view with its ranks, EP size,
///   generation, state and expert placement (asked of each instance's supervisor).
/// - `POST /admin/fail-rank` `{"instance": "...", "rank": 0, "down_ms": 3000}`: fails that rank of
///   the instance's current generation as a crash would; the instance restarts without it and
///   grows back once `down_ms` (default 0) has passed. 202 when the failure was sent.
/// - `POST /admin/drain` `{"instance": "<node>/decode", "grace_s": 60}`: the decode instance's drain
///   notice (issue 17): routers pass it over at once, it decodes on for `grace_s` (default: its
///   `[autoscaler] decode_grace_seconds`), then hands every unfinished request with its KV to other
///   decode instances. 202 when the notice was sent; 409 for other roles.
/// Errors are in the OpenAI error shape. When `keys` requires keys they need one of them, as the
/// API routes do (401 otherwise).
void add_admin_routes(http::router& routes, caf::actor_system& sys, std::shared_ptr<cluster_snapshot> cluster,
                      std::shared_ptr<const http::api_keys> keys = nullptr);

} // namespace deepinfer::actors
