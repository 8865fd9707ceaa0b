#pragma once

#include "actors/http/metrics_registry.hpp"
#include "actors/http/router.hpp"

#include <memory>

namespace deepinfer::actors::http {

/// A handler that answers with `registry->render()` as Prometheus text (200,
/// `metrics_registry::content_type`); register it as `routes.add("GET", "/metrics", ...)`.
/// Rendering runs the collectors on the I/O thread, so they must read cached state, never wait
/// for an actor.
router::handler metrics_endpoint(std::shared_ptr<const metrics_registry> registry);

} // namespace deepinfer::actors::http
