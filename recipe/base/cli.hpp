#pragma once

// The command-line parsing of every tool (CLI11): one way to read flags, print --help and
// report a bad flag.

#include <optional>

#include <CLI/CLI.hpp>

namespace deepinfer {

/// Parses `argv` into `app`. An exit status to return at once: 0 after `--help` (printed on
/// stdout), `usage_status` for bad usage (CLI11's message, naming the flag, and a pointer to
/// --help on stderr); nullopt to go on.
inline std::optional<int> parse_command_line(CLI::App& app, int argc, char** argv, int usage_status = 2) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : usage_status;
  }
  return std::nullopt;
}

} // namespace deepinfer
