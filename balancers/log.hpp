#pragma once

#include <spdlog/spdlog.h>

namespace deepinfer::balancers {

/// The `balancers` logger, created and registered on first use. launcher/ sets sinks, pattern and level.
spdlog::logger& log();

} // namespace deepinfer::balancers
