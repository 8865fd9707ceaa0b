// A request from its parsed body to its start: a large body (an inline image, in practice)
// parsed on the entrypoint's lowered-priority thread, its inline images decoded there too (issue
// 21: ~25 ms to parse a 4 MB image and ~10 ms to decode it, which on a CAF worker would hold it
// from the text requests), then its image URLs fetched.

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <caf/actor_cast.hpp>
#include <caf/send.hpp>

#include "actors/entrypoint/request_prepare.hpp"
#include "actors/entrypoint/request_state.hpp"
#include "actors/entrypoint/serving_context.hpp"
#include "actors/log.hpp"
#include "actors/node/lowered_thread.hpp"

namespace deepinfer::actors {

namespace {

/// How long a large body waits for the lowered thread before its request actor parses it.
constexpr std::chrono::milliseconds parse_fallback_after{2000};

/// Waits for the request's image URLs, fetched on the fetcher's thread (never on this actor's,
/// which would hold a CAF worker for the whole fetch), then starts it; a client gone meanwhile
/// ends it.
caf::behavior await_images(request_pointer self, recipe::conversation conv, const std::vector<std::string>& urls) {
  log().debug("request={} fetching {} image URL(s)", self->state.id, urls.size());
  auto parsed = std::make_shared<recipe::conversation>(std::move(conv));
  auto fetched = std::make_shared<fetched_images>();
  // The callback holds the actor strongly: nothing else does while it waits (no request is out
  // yet), and CAF ends an actor nobody references.
  fetch_images(*self->state.ctx, urls, [fetched, h = caf::actor_cast<caf::actor>(self)](fetched_images got) {
    // The message orders the write before the actor reads it.
    *fetched = std::move(got);
    caf::anon_send(h, fetched_atom::value);
  });
  return {
    [=](fetched_atom) {
      log().debug("request={} image URLs fetched", self->state.id);
      self->state.timeline.close(request_timeline::stage::fetch);
      if (auto next = compile_then_start(self, std::move(*parsed), std::move(*fetched)))
        self->become(std::move(next));
    },
    [=](cancel_atom, uint64_t) { abandon_request(self, "its images were fetched"); },
    // No deadline runs before admission: this is the background parse's fallback timer, stale.
    [=](deadline_atom, uint64_t) {},
  };
}

} // namespace

caf::behavior after_parse(request_pointer self, expected<recipe::conversation, recipe::api_error> conv) {
  self->state.timeline.close(request_timeline::stage::parse);
  if (!conv) {
    refuse_request(self, conv.error());
    return {};
  }
  if (auto urls = image_urls(*conv); !urls.empty() && self->state.ctx->fetcher)
    return await_images(self, std::move(*conv), urls);
  return compile_then_start(self, std::move(*conv), {});
}

caf::behavior parse_in_background(request_pointer self, recipe::api_kind api, std::string body, std::string tenant) {
  auto& st = self->state;
  log().debug("request={} parsing its {} byte body in the background", st.id, body.size());
  // The lowered thread parses it; should it not have answered after `parse_fallback_after`
  // (normal-priority work keeps every core busy: a SCHED_IDLE thread gets next to nothing for as
  // long as that lasts, as an encoder does before its prefill rank encodes the image itself),
  // this actor parses it too. The first to finish claims the result; the other's is dropped.
  struct pending {
    std::string body, tenant;
    std::atomic<bool> claimed{false};
    std::optional<expected<recipe::conversation, recipe::api_error>> result;
    decoded_inline_images decoded;
  };
  auto p = std::make_shared<pending>();
  p->body = std::move(body);
  p->tenant = std::move(tenant);
  // The job holds the actor strongly (nothing else does while it waits, and CAF ends an actor
  // nobody references); the actor holds the context, so the context outlives the job.
  st.ctx->background->post([ctx = st.ctx.get(), p, api, h = caf::actor_cast<caf::actor>(self)] {
    if (p->claimed.load())
      return;
    auto parsed = parse_for_serving(*ctx, api, p->body, p->tenant);
    auto decoded = parsed ? decode_inline_images(*ctx, *parsed) : decoded_inline_images{};
    if (p->claimed.exchange(true))
      return;
    p->result.emplace(std::move(parsed));
    p->decoded = std::move(decoded);
    // The message orders the write before the actor reads it.
    caf::anon_send(h, parsed_atom::value);
  });
  self->delayed_send(self, parse_fallback_after, deadline_atom::value, ++st.timer);
  auto go_on = [self, p] {
    self->state.predecoded = std::move(p->decoded);
    if (auto next = after_parse(self, std::move(*p->result)))
      self->become(std::move(next));
  };
  return {
    [=](parsed_atom) { go_on(); },
    [=](deadline_atom, uint64_t timer) {
      if (timer != self->state.timer || p->claimed.load())
        return; // parsed: its message comes
      log().info("request={} its body waited {} ms for the background parser (the cores are busy); parsing it here",
                 self->state.id, parse_fallback_after.count());
      auto parsed = parse_for_serving(*self->state.ctx, api, p->body, p->tenant);
      if (p->claimed.exchange(true))
        return; // the thread finished first: its message comes
      p->result.emplace(std::move(parsed));
      go_on();
    },
    [=](cancel_atom, uint64_t) { abandon_request(self, "its body was parsed"); },
  };
}

} // namespace deepinfer::actors
