#pragma once

#include <atomic>
#include <memory>

#include <caf/actor_system.hpp>

#include "actors/decode_load.hpp"
#include "actors/entrypoint.hpp"
#include "actors/http/metrics_registry.hpp"
#include "recipe/render/special_table.hpp"
#include "recipe/tokenizer/tokenizer.hpp"

namespace deepinfer::actors {

/// What every request actor shares (read-only after start, apart from the id counter).
struct entrypoint::context {
  caf::actor_system* sys = nullptr;
  serving_config cfg;
  std::shared_ptr<const recipe::tokenizer> tok;
  std::optional<recipe::special_table> specials;
  int32_t eos = 0;
  instance_supervisor_actor prefill;
  instance_supervisor_actor decode;
  /// Load of the decode ranks as this entrypoint placed requests (the decode router's input).
  std::shared_ptr<decode_load> decode_ranks;
  std::atomic<uint64_t> next_id{1};
  /// Request metrics (owned by `metrics`, which this keeps alive).
  std::shared_ptr<http::metrics_registry> metrics;
  http::metrics_registry::histogram* ttft = nullptr;
  http::metrics_registry::histogram* itl = nullptr;
  http::metrics_registry::counter* prompt_tokens = nullptr;
  http::metrics_registry::counter* cached_tokens = nullptr;
  http::metrics_registry::counter* generated_tokens = nullptr;
  http::metrics_registry::gauge* in_flight = nullptr;
};

} // namespace deepinfer::actors
