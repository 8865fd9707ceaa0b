#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "recipe/protocol/conversation.hpp"

namespace deepinfer::recipe {

/// The public identifiers of one request in its API's style, random so that they never repeat
/// (not even after a restart): `chatcmpl-<29 base62>` (Chat Completions), `resp_<48 hex>`
/// (Responses), `msg_01<22 base62>` (Messages), and per choice the prefix of its tool call ids
/// (`call_<24 base62>_` for OpenAI, `toolu_01<22 base62>_` for Anthropic; the call's index
/// follows).
struct api_ids {
  std::string response;
  /// One prefix per choice (`n`), each drawn on its own: the choices of one request share the
  /// response id but never a tool call id.
  std::vector<std::string> tool_prefixes;

  /// Draws fresh ids for a request of `api` with `choices` choices (at least 1).
  static api_ids draw(api_kind api, int choices = 1);
};

/// `n` characters drawn uniformly from [0-9A-Za-z] by a per-thread generator seeded from the OS.
std::string random_base62(std::size_t n);
/// `n` lowercase hex digits, drawn the same way.
std::string random_hex(std::size_t n);
/// A fresh 64-bit sampling seed for a request that gave none.
std::uint64_t random_seed();

} // namespace deepinfer::recipe
