#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace deepinfer::engine {

/// Storage type of the weights in `model.safetensors`.
enum class weight_dtype : uint8_t { f32, bf16 };

/// Returns "f32" or "bf16".
const char* to_string(weight_dtype x);

/// Shape of the optional vision encoder (issue 21): patchify at `patch` pixels, `layers` ViT
/// layers of width `hidden`, then each `merge` x `merge` group of patches is projected to one
/// input embedding of the language model (one image placeholder position).
struct vision_config {
  /// ViT layers; 0: the model has no vision encoder (config.json without a `vision` object).
  int32_t layers = 0;
  int32_t patch = 16;
  int32_t merge = 2;
  int32_t hidden = 64;
  int32_t heads = 4;
  int32_t ffn = 128;
  /// Rows / columns of the learned 2-D position tables; patches past them reuse the last entry.
  int32_t max_grid = 128;

  bool enabled() const { return layers > 0; }
  /// Pixels one placeholder position covers along each side (patch x merge).
  int32_t cell() const { return patch * merge; }
  /// Placeholder positions of a width x height image: the image is cropped to whole cells.
  int64_t tokens_for(int64_t width, int64_t height) const {
    return (width / cell()) * (height / cell());
  }
};

/// Shape of one `ced_moe` model (DESIGN.md §5.1). Every size is a free parameter; `tiny()` and
/// `small()` are the built-in presets.
struct model_config {
  std::string name = "tiny";
  /// DeepSeek's tokenizer has 129,280 ids.
  int32_t vocab_size = 129280;
  int32_t hidden = 128;
  int32_t encoder_layers = 4;
  int32_t decoder_layers = 4;
  int32_t heads = 4;
  int32_t kv_heads = 2;
  int32_t head_dim = 32;
  /// Global KV groups projected from the encoder output; decoder layer l reads group l % G.
  int32_t kv_groups = 2;
  /// Sliding window (keys [i-window+1, i]) and ring size (window + speculative rollback).
  int32_t window = 128;
  int32_t ring = 134;
  int32_t index_heads = 4;
  int32_t index_dim = 32;
  /// Cross-attention keeps the indexer's top k positions when the context is longer than k.
  int32_t index_topk = 256;
  int32_t routed_experts = 16;
  int32_t experts_per_token = 2;
  int32_t shared_experts = 1;
  int32_t expert_ffn = 128;
  float route_scale = 1.0f;
  float rope_theta = 10000.0f;
  float norm_eps = 1e-6f;
  bool tied_embeddings = true;
  weight_dtype dtype = weight_dtype::f32;
  /// Chat template version the KV hash chain is tied to (recipe renders it).
  std::string template_version = "v4.1";
  /// Hex digest of weights + dtype + KV layout; written by mkmodel, checked by the loader.
  std::string fingerprint;
  /// The vision encoder (disabled unless config.json has a `vision` object; tiny has one).
  vision_config vision;
  /// The `kv_layout()` the fingerprint was made with (config.json's `kv_layout`; empty for
  /// files older than the field): a model made for another layout must be made again.
  std::string made_for_kv_layout;
  /// Draft head (DESIGN.md §5.1, `draft.safetensors` beside the model): how many tokens it
  /// drafts per step (0: the model has none), the rank of its previous-token logit bias and the
  /// size of its draft vocabulary (the ids it can propose). Not in the fingerprint: the head
  /// changes no KV and no target logit, and distilling it again must not invalidate caches.
  int32_t draft_positions = 0;
  int32_t draft_rank = 32;
  int32_t draft_vocab = 4096;

  /// The built-in tiny preset: runs on two CPU cores. Its weights are bf16, as DeepSeek's
  /// checkpoints are: the CPU backend streams its lm_head (vocabulary x hidden, 33 MB) in bf16
  /// every decode step, half the bytes of f32 with the same bits (`packed_gemm`).
  static model_config tiny();
  /// The built-in small preset, for benchmarks.
  static model_config small();
  /// V4-shaped in its proportions (DESIGN.md §5.1: V4's top k of 2048; an encoder whose work per
  /// token dwarfs the indexer's per row) and large enough that its products fill a GPU: hidden
  /// 1024, 16 query heads of 64 over 4 KV heads, 2 global KV groups, 32 routed experts (top 4)
  /// plus one shared, 6 encoder and 2 decoder layers; ~2 GB of f32. For the CUDA bench and for
  /// the prefix-hit ratios a V4-shaped model reaches on CPU (bench/RESULTS.md, issue 13).
  static model_config bench_v4();
  /// A preset by name ("tiny", "small", "bench_v4"); nullopt for an unknown name.
  static std::optional<model_config> preset(const std::string& name);

  /// Floats of block KV per token: G x (K and V of kv_heads) in f32, then the indexer key's
  /// record (its 8-bit codes and f32 scale, kernels::index_record_bytes) rounded up to whole
  /// floats.
  int64_t kv_floats_per_token() const {
    const int64_t record_bytes = (int64_t{index_dim} + 3) / 4 * 4 + 4;
    return int64_t{kv_groups} * 2 * kv_heads * head_dim + (record_bytes + 3) / 4;
  }
  /// Text naming the KV layout; part of the fingerprint so differently shaped KV never mixes.
  std::string kv_layout() const;
  /// Empty when the shape is consistent; otherwise what is wrong.
  std::string validate() const;
};

/// The result of reading a config: the config, or an error message.
struct config_result {
  std::optional<model_config> config;
  std::string error;
};

/// Serializes to the `config.json` text.
std::string to_json(const model_config& c);
/// Parses `config.json` text; fields that are absent keep the tiny defaults.
config_result config_from_json(const std::string& text);
/// Reads and parses a `config.json` file.
config_result load_config_file(const std::string& path);

} // namespace deepinfer::engine
