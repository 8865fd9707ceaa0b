#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/backends/backend.hpp"
#include "engine/model/weights.hpp"

namespace deepinfer::engine {

/// An image as the vision encoder reads it: 8-bit RGB, row-major, `width * height * 3` bytes.
struct image_pixels {
  int32_t width = 0;
  int32_t height = 0;
  std::span<const uint8_t> rgb;
};

/// The input embeddings of one image's placeholder positions: rows [position, position + tokens)
/// of a prompt take `values` [tokens x hidden] instead of their token embeddings.
struct image_embedding {
  int64_t position = 0;
  int64_t tokens = 0;
  std::vector<float> values;
};

/// The vision encoder of `model_config::vision` (issue 21): the image is cropped to whole
/// cells of `patch * merge` pixels, cut into `patch` x `patch` patches embedded with learned row
/// and column tables, run through `layers` ViT layers (bidirectional attention over all patches,
/// gated MLP), and each `merge` x `merge` group of patches is concatenated, normed and projected
/// to the model's hidden size: one placeholder position. Every product and reduction is a
/// kernel of the backend's table, so the embeddings are the same bits on every ISA.
class vision_encoder {
public:
  /// Precondition: `w.config().vision.enabled()`; `w` and `b` outlive the encoder.
  vision_encoder(const model_weights& w, backend& b);

  /// Placeholder positions of a width x height image (0 when it is smaller than one cell).
  int64_t tokens_for(int64_t width, int64_t height) const;
  /// Patches the encoder attends over for a width x height image (after the crop).
  int64_t patches_for(int64_t width, int64_t height) const;

  /// The embeddings [tokens_for x hidden], cells in row-major order (the order the template
  /// lays the placeholders out). Precondition: `img.rgb` holds width * height * 3 bytes and
  /// tokens_for(width, height) > 0.
  std::vector<float> encode(const image_pixels& img);

  /// Hands the encoder's matrices to `backend::prepare_weight` (a rank does it at load).
  void prepare_weights();

private:
  const model_weights& w_;
  backend& b_;
  const kernels::kernel_table& k_;
  /// Attention scores, one slice per backend worker (grow-only).
  std::vector<float> scores_;
};

} // namespace deepinfer::engine
