#pragma once

#include <chrono>
#include <memory>
#include <vector>

#include <caf/fwd.hpp>

#include "actors/entrypoint/entrypoint.hpp"
#include "actors/http/response_writer.hpp"
#include "recipe/protocol/conversation.hpp"

#include <string>

namespace deepinfer::actors {

/// Spawns the actor that carries one request body of `api` through parse, render and tokenize
/// (on the CAF scheduler, never an HTTP I/O thread), admission control, the prefill and decode
/// routers, prefill and decode, and answers `writer` (SSE or one JSON body). `tenant` is the
/// request's API key ("" without keys). It monitors the decode rank that holds its sequence and
/// resubmits (prefill of prompt + tokens so far) when that rank dies or its prefill rank does
/// not answer; every wait is bounded (queue timeout, stall timeout, optional total deadline),
/// and a request cut short ends with the API's error, never a normal-looking end.
/// `arrival`: when the request's first byte came and when its HTTP connection dispatched it (the
/// read and dispatch stages of its Server-Timing; unset: it starts when its actor runs).
struct request_arrival {
  std::chrono::steady_clock::time_point first_byte;
  std::chrono::steady_clock::time_point dispatched;
};
void spawn_request_actor(std::shared_ptr<entrypoint::context> ctx, recipe::api_kind api, std::string body,
                         std::string tenant, std::shared_ptr<http::response_writer> writer,
                         request_arrival arrival = {});

} // namespace deepinfer::actors
