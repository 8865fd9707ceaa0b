#pragma once

#include <string>

namespace deepinfer::launcher {

/// Configures every module logger (STYLE §7): one stderr sink, a pattern that names the node and
/// the module, and one level. Returns false (and changes nothing) for an unknown level name.
bool setup_logging(const std::string& level, const std::string& node_name);

} // namespace deepinfer::launcher
