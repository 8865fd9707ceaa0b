#pragma once

#include <string>
#include <string_view>

#include "actors/control/cluster_snapshot.hpp"

namespace deepinfer::actors {

/// The operator's status page served at `/`: one static HTML file with its script inline (no
/// CDN, nothing fetched but this server's own `/status.json` and `/metrics`), polling both every
/// second: nodes, instances with their ranks, EP size and generation, router load per rank, the
/// KV store and hit ratio, and live TTFT / inter-token latency charts from the histograms.
std::string_view status_page_html();

/// `/status.json`: what this node's snapshot says of the cluster (nodes with roles, state and
/// joins; instances with ranks, EP size, generation and state), for the page and for scripts.
std::string status_json(const cluster_snapshot::state& s);

} // namespace deepinfer::actors
