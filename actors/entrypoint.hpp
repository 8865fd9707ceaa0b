#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <caf/fwd.hpp>

#include "actors/http/metrics_registry.hpp"
#include "actors/http/router.hpp"
#include "actors/interfaces.hpp"
#include "actors/serving_config.hpp"

namespace deepinfer::actors {

/// The serving entrypoint: routes POST /v1/chat/completions, /v1/responses and /v1/messages
/// through parse -> render -> tokenize -> prefill rank -> decode rank -> stream parser ->
/// encoder, one request actor per request.
class entrypoint {
public:
  /// Loads the tokenizer and builds the special-token table; nullopt + `error` on failure.
  /// `decode_ranks` is the decode instance's configured rank count (the router's slots).
  static std::unique_ptr<entrypoint> create(caf::actor_system& sys, const serving_config& cfg,
                                            instance_supervisor_actor prefill,
                                            instance_supervisor_actor decode, uint32_t decode_ranks,
                                            std::shared_ptr<http::metrics_registry> metrics,
                                            std::string* error);
  ~entrypoint();

  /// Adds the three API routes.
  void add_routes(http::router& routes);

  struct context;

private:
  explicit entrypoint(std::shared_ptr<context> ctx);
  std::shared_ptr<context> ctx_;
};

} // namespace deepinfer::actors
