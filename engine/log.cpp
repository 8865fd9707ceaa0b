#include "engine/log.hpp"

namespace deepinfer::engine {

spdlog::logger& log() {
  // A function-local static makes creation thread-safe; spdlog::get finds a logger launcher/ may
  // have registered first with its own sinks.
  static std::shared_ptr<spdlog::logger> logger = [] {
    if (auto existing = spdlog::get("engine"))
      return existing;
    auto created = spdlog::default_logger()->clone("engine");
    spdlog::register_logger(created);
    return created;
  }();
  return *logger;
}

} // namespace deepinfer::engine
