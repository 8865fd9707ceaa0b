// Images (issue 21): a vision rank's encodes on its encoder thread; a prefill job's images,
// their prefix-cache marks and their placeholder embeddings (from a vision rank, or encoded here).
#include <algorithm>
#include <chrono>

#include <caf/actor_cast.hpp>
#include <caf/send.hpp>

#include "actors/errors.hpp"
#include "actors/instance/rank_state.hpp"

namespace deepinfer::actors {

/// The prefix-cache marks of a job's images (their positions and content keys).
std::vector<kv::image_mark> marks_of(const prefill_job& job) {
  std::vector<kv::image_mark> out;
  out.reserve(job.images.size());
  for (const auto& im : job.images)
    out.push_back(im.mark);
  return out;
}

caf::error check_images(engine::rank_engine& engine, const prefill_job& job) {
  if (job.images.empty())
    return {};
  auto* vision = engine.vision();
  if (vision == nullptr)
    return make_error(errc::engine_invalid_request,
                      "this model has no vision encoder; send the request without images");
  for (const auto& im : job.images) {
    const auto tokens = vision->tokens_for(im.width, im.height);
    // The pixels, or (an image a vision rank encoded: the entrypoint keeps its pixels) embeddings
    // for every placeholder.
    const bool pixels = im.rgb.size() == static_cast<std::size_t>(im.width) * static_cast<std::size_t>(im.height) * 3;
    const bool encoded = im.embedding.size() == static_cast<std::size_t>(tokens * engine.model().hidden);
    if (tokens != im.mark.tokens || tokens <= 0 || !(pixels || encoded))
      return make_error(errc::engine_invalid_request, "an image does not match its placeholder positions");
  }
  return {};
}

void attach_images(rank_state& st, engine::rank_engine& engine, prefill_job& job, engine::prefill_request& req) {
  auto* vision = engine.vision();
  const int64_t first = engine.first_encoded_position(req);
  for (auto& im : job.images) {
    const int64_t position = im.mark.position, tokens = im.mark.tokens;
    if (position + tokens <= first)
      continue; // the hit holds its KV: nothing reads the embeddings
    auto at = std::lower_bound(req.images.begin(), req.images.end(), position,
                               [](const engine::image_embedding& e, int64_t p) { return e.position < p; });
    if (at != req.images.end() && at->position == position)
      continue; // attached already (before a restart without the hit)
    engine::image_embedding e;
    e.position = position;
    e.tokens = tokens;
    if (im.embedding.size() == static_cast<std::size_t>(tokens * engine.model().hidden)) {
      // A vision rank encoded it already (the same encoder and weights: the same bits).
      e.values = std::move(im.embedding);
    } else {
      const auto t0 = std::chrono::steady_clock::now();
      e.values = vision->encode({im.width, im.height, im.rgb});
      if (st.images_encoded) {
        st.images_encoded->inc();
        st.encode_seconds->observe(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      }
    }
    req.images.insert(at, std::move(e));
    im.rgb = {};
    im.embedding = {};
  }
}

caf::typed_response_promise<vision_result> start_encode(rank_pointer self, vision_job& job) {
  auto& st = self->state;
  auto promise = self->make_response_promise<vision_result>();
  vision_result r;
  r.id = job.id;
  auto* vision = st.engine ? st.engine->vision() : nullptr;
  if (vision == nullptr || !st.encoder)
    r.error = make_error(errc::engine_missing, "this rank has no vision encoder");
  else if (vision->tokens_for(job.width, job.height) <= 0 ||
           job.rgb.size() != static_cast<std::size_t>(job.width) * static_cast<std::size_t>(job.height) * 3)
    r.error = make_error(errc::engine_invalid_request, "the image does not cover one cell of the encoder");
  if (r.error) {
    promise.deliver(std::move(r));
    return promise;
  }
  const auto key = st.next_encode++;
  st.encoding.emplace(key, promise);
  // The thread only reads the encoder's weights and its own buffers; the answer comes back here
  // by message (a weak address: a stopped rank is not kept alive, its answer is dropped).
  st.encoder->post([vision, key, r = std::move(r), job = std::move(job), addr = self->address()]() mutable {
    const auto t0 = std::chrono::steady_clock::now();
    r.embedding = vision->encode({job.width, job.height, job.rgb});
    r.encode_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (auto me = caf::actor_cast<rank_actor>(addr))
      caf::anon_send(me, encode_atom::value, key, std::move(r));
  });
  return promise;
}

void finish_encode(rank_pointer self, uint64_t key, vision_result& r) {
  auto& st = self->state;
  auto it = st.encoding.find(key);
  if (it == st.encoding.end())
    return;
  ++st.steps;
  if (st.images_encoded) {
    st.images_encoded->inc();
    st.encode_seconds->observe(r.encode_seconds);
  }
  it->second.deliver(std::move(r));
  st.encoding.erase(it);
}

} // namespace deepinfer::actors
