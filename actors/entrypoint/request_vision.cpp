// The request's images on their way to vision ranks (issue 21) before its first attempt is placed.

#include <algorithm>
#include <chrono>

#include <caf/actor_cast.hpp>
#include <caf/event_based_actor.hpp>

#include "actors/control/live_instances.hpp"
#include "actors/entrypoint/request_state.hpp"
#include "actors/entrypoint/serving_context.hpp"
#include "actors/entrypoint/vision_router.hpp"
#include "actors/log.hpp"

namespace deepinfer::actors {

namespace {

/// Limit for a vision rank's answer; without one the prefill rank encodes the image itself.
constexpr auto vision_timeout = std::chrono::seconds(10);

} // namespace

bool send_to_vision(request_pointer self, int placing, const membership_view& view, int64_t hit_length) {
  auto& st = self->state;
  if (st.vision_pending > 0)
    return true;
  if (st.vision_sent || st.images.empty() || !st.ctx->vision_routes)
    return false;
  st.vision_sent = true;
  const auto vision = live_instances(view, node_role::vision);
  auto router = st.ctx->vision_routes;
  for (std::size_t i = 0; i < st.images.size(); ++i) {
    const auto& im = st.images[i];
    if (im.mark.position + im.mark.tokens <= hit_length - st.ctx->window) {
      log().debug("request={} image {} lies in the prefix-cache hit: not encoded", st.id, i);
      if (st.ctx->vision_skipped)
        st.ctx->vision_skipped->inc();
      continue;
    }
    auto r = router->pick(vision, im.width, im.height);
    if (!r) {
      // Not silent: an image the prefill rank encodes costs its prefill the encoder's time.
      log().warn("request={} no live vision rank ({} vision instance(s) in the view): the prefill rank encodes image {} "
                 "and the rest", st.id, vision.size(), i);
      break;
    }
    vision_job job{st.id * 64 + i, im.width, im.height, im.rgb};
    ++st.vision_pending;
    const auto sent = std::chrono::steady_clock::now();
    auto back = [=](std::vector<float>* embedding) {
      router->done(*r);
      auto& s = self->state;
      if (embedding && i < s.images.size())
        s.images[i].embedding = std::move(*embedding);
      if (--s.vision_pending == 0 && !s.done) {
        s.timeline.close(request_timeline::stage::vision);
        place(self, placing);
      }
    };
    self->request(caf::actor_cast<rank_actor>(r->rank), vision_timeout, encode_atom::value, std::move(job))
      .then(
        [=](vision_result& res) {
          auto& s = self->state;
          const double trip = std::chrono::duration<double>(std::chrono::steady_clock::now() - sent).count();
          if (s.ctx->vision_queue)
            s.ctx->vision_queue->observe(std::max(0.0, trip - res.encode_seconds));
          if (res.error)
            log().warn("request={} vision rank refused image {}: {}", s.id, i, self->system().render(res.error));
          back(res.error ? nullptr : &res.embedding);
        },
        [=](caf::error& e) {
          log().warn("request={} vision rank lost image {}: {}; the prefill rank encodes it", self->state.id, i,
                     self->system().render(e));
          back(nullptr);
        });
  }
  return st.vision_pending > 0;
}

} // namespace deepinfer::actors
