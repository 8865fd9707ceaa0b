#pragma once

#include <spdlog/spdlog.h>

namespace deepinfer::engine {

/// The `engine` logger, created and registered on first use. launcher/ sets sinks, pattern and level.
spdlog::logger& log();

} // namespace deepinfer::engine
