#include "actors/entrypoint/vllm_metrics.hpp"

#include <vector>

namespace deepinfer::actors {

vllm_metrics vllm_metrics::add(registry& reg, const std::string& model, sources src) {
  using sample = registry::sample;
  using kind = registry::kind;
  vllm_metrics m;
  m.model = model;
  const std::vector<std::string> label{"model_name"};
  auto one = [model](double v) { return std::vector<sample>{{{model}, v}}; };
  reg.add_collector("vllm:num_requests_running", "Requests admitted and not yet finished.", kind::gauge, label,
                    [one, a = src.admission] { return one(static_cast<double>(a->current().sequences)); });
  reg.add_collector("vllm:num_requests_waiting", "Requests waiting for admission.", kind::gauge, label,
                    [one, a = src.admission] { return one(static_cast<double>(a->current().waiting)); });
  // The ranks of this process register their pools on the same registry (actors/instance/rank.cpp).
  auto& used = reg.add_gauge("deepinfer_rank_kv_blocks_used", "KV pool blocks in use.", {"instance", "rank"});
  auto& total = reg.add_gauge("deepinfer_rank_kv_blocks_total", "KV pool blocks.", {"instance", "rank"});
  reg.add_collector("vllm:kv_cache_usage_perc", "KV pool use of this node's ranks (1 = full).", kind::gauge, label,
                    [one, &used, &total] {
                      const double t = total.total();
                      return one(t > 0 ? used.total() / t : 0.0);
                    });
  auto view = [one](registry::counter* c) { return [one, c] { return one(c->value()); }; };
  reg.add_collector("vllm:prompt_tokens_total", "Prompt tokens received.", kind::counter, label,
                    view(src.prompt_tokens));
  reg.add_collector("vllm:generation_tokens_total", "Tokens generated.", kind::counter, label,
                    view(src.generated_tokens));
  reg.add_collector("vllm:prefix_cache_queries_total", "Prompt tokens looked up in the prefix cache.",
                    kind::counter, label, view(src.prompt_tokens));
  reg.add_collector("vllm:prefix_cache_hits_total", "Prompt tokens served from the prefix cache.", kind::counter,
                    label, view(src.cached_tokens));
  const auto latency = registry::default_latency_buckets();
  m.ttft = &reg.add_histogram("vllm:time_to_first_token_seconds", "Request arrival to its first token.", label,
                              latency).with({model});
  m.itl = &reg.add_histogram("vllm:inter_token_latency_seconds", "Time between consecutive tokens of a request.",
                             label, {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5})
             .with({model});
  m.e2e = &reg.add_histogram("vllm:e2e_request_latency_seconds", "Request arrival to its last token.", label,
                             latency).with({model});
  m.success = &reg.add_counter("vllm:request_success_total", "Requests that ended, by finished_reason.",
                               {"model_name", "finished_reason"});
  for (auto r : {"stop", "length", "abort"})
    m.success->with({model, r});
  return m;
}

} // namespace deepinfer::actors
