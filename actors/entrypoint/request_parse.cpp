// A request from its parsed body to its start: a large body (an inline image, in practice)
// parsed on the entrypoint's lowered-priority thread (issue 21: ~25 ms for a 4 MB image, which on
// a CAF worker would hold it from the text requests), then its image URLs fetched.

#include <memory>
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
      if (auto next = compile_then_start(self, std::move(*parsed), std::move(*fetched)))
        self->become(std::move(next));
    },
    [=](cancel_atom, uint64_t) { abandon_request(self, "its images were fetched"); },
  };
}

} // namespace

caf::behavior after_parse(request_pointer self, expected<recipe::conversation, recipe::api_error> conv) {
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
  using parse_result = expected<recipe::conversation, recipe::api_error>;
  auto parsed = std::make_shared<std::optional<parse_result>>();
  // The job holds the actor strongly (nothing else does while it waits, and CAF ends an actor
  // nobody references); the actor holds the context, so the context outlives the job.
  st.ctx->background->post([ctx = st.ctx.get(), parsed, api, body = std::move(body), tenant = std::move(tenant),
                            h = caf::actor_cast<caf::actor>(self)]() mutable {
    parsed->emplace(parse_for_serving(*ctx, api, body, tenant));
    std::string().swap(body);
    // The message orders the write before the actor reads it.
    caf::anon_send(h, parsed_atom::value);
  });
  return {
    [=](parsed_atom) {
      if (auto next = after_parse(self, std::move(**parsed)))
        self->become(std::move(next));
    },
    [=](cancel_atom, uint64_t) { abandon_request(self, "its body was parsed"); },
  };
}

} // namespace deepinfer::actors
