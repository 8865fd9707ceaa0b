#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/model/model_config.hpp"

namespace deepinfer::engine {

class safetensors_file;

/// A tensor the config requires: its name and shape (row-major, out x in for matrices).
struct tensor_spec {
  std::string name;
  std::vector<int64_t> shape;
};

/// Every tensor of a `ced_moe` model with `c`'s shape, in file order.
std::vector<tensor_spec> tensor_specs(const model_config& c);

/// Pre-attention norm and projections of one self-attention block.
struct attention_weights {
  const float* norm = nullptr;
  const float* wq = nullptr; ///< [heads*head_dim, hidden]
  const float* wk = nullptr; ///< [kv_heads*head_dim, hidden]
  const float* wv = nullptr; ///< [kv_heads*head_dim, hidden]
  const float* wo = nullptr; ///< [hidden, heads*head_dim]
};

/// Pre-FFN norm, router and experts of one MoE block. Experts are stacked per layer.
struct moe_weights {
  const float* norm = nullptr;
  const float* router = nullptr;      ///< [experts, hidden]
  const float* router_bias = nullptr; ///< [experts]
  const float* w1 = nullptr;          ///< [experts, ffn, hidden] (gate)
  const float* w3 = nullptr;          ///< [experts, ffn, hidden] (up)
  const float* w2 = nullptr;          ///< [experts, hidden, ffn] (down)
  const float* shared_w1 = nullptr;   ///< [shared*ffn, hidden]; null when there are none
  const float* shared_w3 = nullptr;
  const float* shared_w2 = nullptr;   ///< [hidden, shared*ffn]
};

/// One encoder layer.
struct encoder_layer_weights {
  attention_weights attn;
  moe_weights moe;
};

/// One decoder layer: SWA, cross-attention over global KV (with the indexer query), MoE.
struct decoder_layer_weights {
  attention_weights attn;
  const float* cross_norm = nullptr;
  const float* cross_wq = nullptr; ///< [heads*head_dim, hidden]
  const float* cross_wo = nullptr; ///< [hidden, heads*head_dim]
  const float* index_wq = nullptr; ///< [index_heads*index_dim, hidden]
  const float* index_w = nullptr;  ///< [index_heads]
  moe_weights moe;
};

/// Projections of the global KV (the block KV) from the encoder output.
struct global_kv_weights {
  const float* norm = nullptr;
  const float* wk = nullptr;  ///< [groups*kv_heads*head_dim, hidden]
  const float* wv = nullptr;  ///< [groups*kv_heads*head_dim, hidden]
  const float* wik = nullptr; ///< [index_dim, hidden]
};

/// One ViT layer of the vision encoder: bidirectional attention over the image's patches, then a
/// gated MLP; each block pre-normed with a residual.
struct vision_layer_weights {
  const float* attn_norm = nullptr;
  const float* wq = nullptr; ///< [vhidden, vhidden]
  const float* wk = nullptr;
  const float* wv = nullptr;
  const float* wo = nullptr;
  const float* mlp_norm = nullptr;
  const float* w1 = nullptr; ///< [vffn, vhidden] (gate)
  const float* w3 = nullptr; ///< [vffn, vhidden] (up)
  const float* w2 = nullptr; ///< [vhidden, vffn] (down)
};

/// The vision encoder (`model_config::vision`; empty when the model has none).
struct vision_weights {
  const float* patch_embed = nullptr; ///< [vhidden, patch*patch*3] (RGB, row-major in the patch)
  const float* row_embed = nullptr;   ///< [max_grid, vhidden]
  const float* col_embed = nullptr;   ///< [max_grid, vhidden]
  std::vector<vision_layer_weights> layers;
  const float* merge_norm = nullptr;  ///< [merge*merge*vhidden]
  const float* proj = nullptr;        ///< [hidden, merge*merge*vhidden]
  const float* out_norm = nullptr;    ///< [hidden]
};
/// The draft head (DESIGN.md §5.1), from `draft.safetensors`; P = draft_positions, r =
/// draft_rank, Vd = draft_vocab. Draft j of a row with final hidden state x and previous token t:
/// z_j = rms_norm(proj_j * final_norm(x), norm); logits_j = out * z_j + bias_out * bias_in[t]
/// over the draft vocabulary, where t itself is always a candidate, with its logit there or,
/// outside the vocabulary, the target's own lm_head[t] . z_j, plus repeat_j (a model that repeats
/// tokens stays draftable whatever the token). The draft is the argmax (ties to the lower index,
/// then to the vocabulary; `choose_draft`) and becomes t for j + 1. Its confidence is
/// sigmoid(conf_j . [z_j, top probability, 1 if the draft is t else 0, 1]).
struct draft_weights {
  const float* proj = nullptr;     ///< [P, hidden, hidden]
  const float* norm = nullptr;     ///< [hidden]
  const float* vocab = nullptr;    ///< [Vd] token ids (exact in f32: ids < 2^24)
  const float* out = nullptr;      ///< [Vd, hidden]
  const float* bias_in = nullptr;  ///< [vocab, r]
  const float* bias_out = nullptr; ///< [Vd, r]
  const float* repeat = nullptr;   ///< [P] logit offset of the token before each position
  const float* conf = nullptr;     ///< [P, hidden + 3]
};

/// Every tensor of the draft head with `c`'s shape, in file order (empty when it has none).
std::vector<tensor_spec> draft_tensor_specs(const model_config& c);

/// Loaded, validated weights (f32 in memory; f32 files are used straight from the mapping, bf16
/// is widened once at load and its mapping let go).
class model_weights {
public:
  /// Result of `load`: the weights, or a message naming the directory and the offending tensor.
  struct load_result {
    std::unique_ptr<model_weights> weights;
    std::string error;
  };

  /// Loads `dir/config.json` + `dir/model.safetensors`, validating every tensor's presence, dtype,
  /// shape and extent, and the fingerprint when the config carries one. Never throws.
  static load_result load(const std::string& dir);

  /// Result of `load_shared`.
  struct shared_load_result {
    std::shared_ptr<const model_weights> weights;
    std::string error;
  };
  /// `load`, once per process for the same files: while some holder keeps the weights of `dir`
  /// alive, a rank that loads `dir` again gets the same object (the embedded default's prefill,
  /// decode and vision ranks hold one copy of the model, not one each). The files are known by
  /// their inode, size and modification time, so a model made again in the same directory
  /// (`deepinfer-mkmodel`, the preset cache) is loaded afresh. Thread-safe; ranks that load
  /// together wait for the first one's load.
  static shared_load_result load_shared(const std::string& dir);

  ~model_weights();
  const model_config& config() const { return config_; }

  const float* embed = nullptr;      ///< [vocab, hidden]
  const float* final_norm = nullptr; ///< [hidden]
  const float* lm_head = nullptr;    ///< [vocab, hidden] (== embed when tied)
  std::vector<encoder_layer_weights> encoder;
  global_kv_weights global;
  std::vector<decoder_layer_weights> decoder;
  vision_weights vision;
  /// Set when config().draft_positions > 0.
  std::optional<draft_weights> draft;

private:
  model_weights() = default;
  model_config config_;
  std::unique_ptr<safetensors_file> file_;
  std::unique_ptr<safetensors_file> draft_file_;
  std::vector<std::vector<float>> owned_;
};

/// 64-bit hash of bytes (the fingerprint's building block; not cryptographic).
uint64_t hash_bytes(const void* data, std::size_t n, uint64_t seed);

/// Fingerprint text from the per-tensor hashes (in spec order), dtype and KV layout.
std::string make_fingerprint(const std::vector<uint64_t>& tensor_hashes, const model_config& c);

} // namespace deepinfer::engine
