#pragma once

#include <spdlog/spdlog.h>

namespace deepinfer::actors {

/// The `actors` logger, created and registered on first use. launcher/ sets sinks, pattern and level.
spdlog::logger& log();

} // namespace deepinfer::actors
