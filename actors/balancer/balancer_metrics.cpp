#include "actors/balancer/balancer_metrics.hpp"

#include <string>

#include "actors/http/metrics_registry.hpp"

namespace deepinfer::actors {

namespace {

template <class Value>
void add_rank_collector(http::metrics_registry& m, std::string name, std::string help,
                    std::shared_ptr<const balancer_loads> table, Value value,
                    http::metrics_registry::kind kind = http::metrics_registry::kind::gauge) {
  m.add_collector(std::move(name), std::move(help), kind,
                  {"instance", "rank"}, [table, value] {
                    std::vector<http::metrics_registry::sample> out;
                    for (auto& s : table->get())
                      out.push_back({{s.where.instance, std::to_string(s.where.rank)}, value(s)});
                    return out;
                  });
}

} // namespace

void export_balancer_loads(http::metrics_registry& m, std::shared_ptr<const balancer_loads> prefill,
                           std::shared_ptr<const balancer_loads> decode) {
  using load = balancers::serving_router::rank_load;
  add_rank_collector(m, "deepinfer_decode_router_requests",
                 "Requests the decode balancer has placed on each decode rank and not yet released.", decode,
                 [](const load& s) { return static_cast<double>(s.requests); });
  add_rank_collector(m, "deepinfer_decode_router_kv_tokens",
                 "KV tokens the decode balancer counts on each decode rank (growing as requests generate).",
                 decode, [](const load& s) { return static_cast<double>(s.kv_tokens); });
  add_rank_collector(m, "deepinfer_decode_router_kv_capacity_tokens",
                 "KV tokens each decode rank's pool holds, as the decode balancer sizes it.", decode,
                 [](const load& s) { return static_cast<double>(s.kv_capacity); });
  add_rank_collector(m, "deepinfer_decode_router_kv_reserved_tokens",
                 "KV tokens each decode rank's requests may reach (prompt + max_tokens); a rank takes a "
                 "request only while this fits its pool.",
                 decode, [](const load& s) { return static_cast<double>(s.kv_reserved); });
  add_rank_collector(m, "deepinfer_prefill_queue_requests",
                 "Prefills each prefill rank has pulled and not yet answered.", prefill,
                 [](const load& s) { return static_cast<double>(s.requests); });
  add_rank_collector(m, "deepinfer_prefill_router_placed_total",
                 "Prefills the prefill balancer has handed to each prefill rank so far (an instance on "
                 "slower hardware prices jobs higher with its own cost model, and pulls fewer).",
                 prefill, [](const load& s) { return static_cast<double>(s.placed); },
                 http::metrics_registry::kind::counter);
  add_rank_collector(m, "deepinfer_prefill_queue_quota_seconds",
                 "Outstanding compute-quota (fitted seconds) on each prefill rank.", prefill,
                 [](const load& s) { return s.quota_s; });
}

} // namespace deepinfer::actors
