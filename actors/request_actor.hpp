#pragma once

#include <memory>
#include <vector>

#include <caf/fwd.hpp>

#include "actors/entrypoint.hpp"
#include "actors/http/response_writer.hpp"
#include "recipe/protocol/conversation.hpp"

namespace deepinfer::actors {

/// Spawns the actor that carries one parsed request through render + tokenize, the prefill and
/// decode routers, prefill and decode, and answers `writer` (SSE or one JSON body). It monitors
/// the decode rank that holds its sequence and resubmits (prefill of prompt + tokens so far)
/// when that rank dies or its prefill rank does not answer; every wait is bounded.
void spawn_request_actor(std::shared_ptr<entrypoint::context> ctx, recipe::conversation conv,
                         std::shared_ptr<http::response_writer> writer);

} // namespace deepinfer::actors
