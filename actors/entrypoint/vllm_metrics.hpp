#pragma once

#include <memory>
#include <string>

#include "actors/entrypoint/admission_control.hpp"
#include "actors/http/metrics_registry.hpp"

namespace deepinfer::actors {

/// vLLM's metric names beside the `deepinfer_*` ones, each with the `model_name` label, so a
/// dashboard built for vLLM reads this server as it is (examples/grafana/): the gauges and
/// counters are views of what the entrypoint counts already; the histograms and the
/// `finished_reason` counter are observed by the request actor.
struct vllm_metrics {
  using registry = http::metrics_registry;
  registry::histogram* ttft = nullptr;
  registry::histogram* itl = nullptr;
  registry::histogram* e2e = nullptr;
  /// `vllm:request_success_total{finished_reason}`: stop | length | abort.
  registry::family<registry::counter>* success = nullptr;
  std::string model;

  /// What the request actor needs to count one finished request.
  struct sources {
    std::shared_ptr<admission_control> admission;
    registry::counter* prompt_tokens = nullptr;
    registry::counter* cached_tokens = nullptr;
    registry::counter* generated_tokens = nullptr;
  };

  /// Registers the vLLM families on `reg` for `model` over `src` (whose pointers must outlive
  /// `reg`'s scrapes; the counters are `reg`'s own).
  static vllm_metrics add(registry& reg, const std::string& model, sources src);

  /// Counts a request that ended: `reason` is stop, length or abort.
  void finished(const char* reason) const { success->with({model, reason}).inc(); }
};

} // namespace deepinfer::actors
