#pragma once

#include <spdlog/spdlog.h>

namespace deepinfer::launcher {

/// The `launcher` logger, created and registered on first use. launcher/ sets sinks, pattern and level.
spdlog::logger& log();

} // namespace deepinfer::launcher
