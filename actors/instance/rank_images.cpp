// A prefill job's images (issue 21): their prefix-cache marks, and their placeholder embeddings
// (from a vision rank, or encoded here).
#include <chrono>

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

/// Encodes the job's images into the placeholders' input embeddings (`req.images`), dropping
/// their pixels. An error when the model has no vision encoder or an image does not match its
/// placeholders (the entrypoint counted them with the same model config).
caf::error encode_images(rank_state& st, engine::rank_engine& engine, prefill_job& job, engine::prefill_request& req) {
  if (job.images.empty())
    return {};
  auto* vision = engine.vision();
  if (vision == nullptr)
    return make_error(errc::engine_invalid_request,
                      "this model has no vision encoder; send the request without images");
  for (auto& im : job.images) {
    const auto tokens = vision->tokens_for(im.width, im.height);
    if (tokens != im.mark.tokens || tokens <= 0 ||
        im.rgb.size() != static_cast<std::size_t>(im.width) * static_cast<std::size_t>(im.height) * 3)
      return make_error(errc::engine_invalid_request, "an image does not match its placeholder positions");
    engine::image_embedding e;
    e.position = im.mark.position;
    e.tokens = tokens;
    // A vision rank encoded it already (the same encoder and weights: the same bits).
    if (im.embedding.size() == static_cast<std::size_t>(tokens * engine.model().hidden)) {
      e.values = std::move(im.embedding);
      req.images.push_back(std::move(e));
      im.rgb = {};
      continue;
    }
    const auto t0 = std::chrono::steady_clock::now();
    e.values = vision->encode({im.width, im.height, im.rgb});
    if (st.images_encoded) {
      st.images_encoded->inc();
      st.encode_seconds->observe(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    req.images.push_back(std::move(e));
    im.rgb = {};
  }
  return {};
}

} // namespace deepinfer::actors
