#pragma once

#include <cstdint>
#include <string>

#include "recipe/protocol/conversation.hpp"

namespace deepinfer::recipe {

/// The public identifiers of one request in its API's style, random so that they never repeat
/// (not even after a restart): `chatcmpl-<29 base62>` (Chat Completions), `resp_<48 hex>`
/// (Responses), `msg_01<22 base62>` (Messages), and the prefix of its tool call ids (`call_<24
/// base62>_` for OpenAI, `toolu_01<22 base62>_` for Anthropic; the call's index follows).
struct api_ids {
  std::string response;
  std::string tool_prefix;

  /// Draws fresh ids for a request of `api`.
  static api_ids draw(api_kind api);
};

/// `n` characters drawn uniformly from [0-9A-Za-z] by a per-thread generator seeded from the OS.
std::string random_base62(std::size_t n);
/// `n` lowercase hex digits, drawn the same way.
std::string random_hex(std::size_t n);
/// A fresh 64-bit sampling seed for a request that gave none.
std::uint64_t random_seed();

} // namespace deepinfer::recipe
