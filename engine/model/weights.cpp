#include "engine/model/weights.hpp"

#include <cstring>
#include <map>

#include <fmt/format.h>

#include "engine/kernels/kernel_table.hpp"
#include "engine/model/safetensors.hpp"

namespace deepinfer::engine {

namespace {

void add_attention(std::vector<tensor_spec>& v, const std::string& p, const model_config& c) {
  int64_t h = c.hidden, q = int64_t{c.heads} * c.head_dim, kv = int64_t{c.kv_heads} * c.head_dim;
  v.push_back({p + "attn_norm", {h}});
  v.push_back({p + "attn.wq", {q, h}});
  v.push_back({p + "attn.wk", {kv, h}});
  v.push_back({p + "attn.wv", {kv, h}});
  v.push_back({p + "attn.wo", {h, q}});
}

void add_moe(std::vector<tensor_spec>& v, const std::string& p, const model_config& c) {
  int64_t h = c.hidden, e = c.routed_experts, f = c.expert_ffn, s = c.shared_experts;
  v.push_back({p + "ffn_norm", {h}});
  v.push_back({p + "moe.router", {e, h}});
  v.push_back({p + "moe.router_bias", {e}});
  v.push_back({p + "moe.w1", {e, f, h}});
  v.push_back({p + "moe.w3", {e, f, h}});
  v.push_back({p + "moe.w2", {e, h, f}});
  if (s > 0) {
    v.push_back({p + "moe.shared_w1", {s * f, h}});
    v.push_back({p + "moe.shared_w3", {s * f, h}});
    v.push_back({p + "moe.shared_w2", {h, s * f}});
  }
}

std::string shape_text(const std::vector<int64_t>& s) {
  return fmt::format("[{}]", fmt::join(s, ", "));
}

void widen_bf16(const std::byte* src, float* dst, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    uint16_t b;
    std::memcpy(&b, src + 2 * i, 2);
    dst[i] = kernels::bf16_value(b);
  }
}

} // namespace

std::vector<tensor_spec> tensor_specs(const model_config& c) {
  std::vector<tensor_spec> v;
  int64_t h = c.hidden, q = int64_t{c.heads} * c.head_dim;
  int64_t gkv = int64_t{c.kv_groups} * c.kv_heads * c.head_dim;
  v.push_back({"embed", {c.vocab_size, h}});
  for (int i = 0; i < c.encoder_layers; ++i) {
    auto p = fmt::format("enc.{}.", i);
    add_attention(v, p, c);
    add_moe(v, p, c);
  }
  v.push_back({"global.norm", {h}});
  v.push_back({"global.wk", {gkv, h}});
  v.push_back({"global.wv", {gkv, h}});
  v.push_back({"global.wik", {c.index_dim, h}});
  for (int i = 0; i < c.decoder_layers; ++i) {
    auto p = fmt::format("dec.{}.", i);
    add_attention(v, p, c);
    v.push_back({p + "cross_norm", {h}});
    v.push_back({p + "cross.wq", {q, h}});
    v.push_back({p + "cross.wo", {h, q}});
    v.push_back({p + "index.wq", {int64_t{c.index_heads} * c.index_dim, h}});
    v.push_back({p + "index.w", {c.index_heads}});
    add_moe(v, p, c);
  }
  v.push_back({"final_norm", {h}});
  if (!c.tied_embeddings)
    v.push_back({"lm_head", {c.vocab_size, h}});
  // The vision encoder comes last, so a text-only model's tensors (and their seeded values) are
  // the same with or without it.
  if (c.vision.enabled()) {
    const auto& vc = c.vision;
    const int64_t vh = vc.hidden, vf = vc.ffn, mm = int64_t{vc.merge} * vc.merge * vh;
    v.push_back({"vis.patch_embed", {vh, int64_t{vc.patch} * vc.patch * 3}});
    v.push_back({"vis.row_embed", {vc.max_grid, vh}});
    v.push_back({"vis.col_embed", {vc.max_grid, vh}});
    for (int i = 0; i < vc.layers; ++i) {
      auto p = fmt::format("vis.{}.", i);
      v.push_back({p + "attn_norm", {vh}});
      v.push_back({p + "attn.wq", {vh, vh}});
      v.push_back({p + "attn.wk", {vh, vh}});
      v.push_back({p + "attn.wv", {vh, vh}});
      v.push_back({p + "attn.wo", {vh, vh}});
      v.push_back({p + "mlp_norm", {vh}});
      v.push_back({p + "mlp.w1", {vf, vh}});
      v.push_back({p + "mlp.w3", {vf, vh}});
      v.push_back({p + "mlp.w2", {vh, vf}});
    }
    v.push_back({"vis.merge_norm", {mm}});
    v.push_back({"vis.proj", {h, mm}});
    v.push_back({"vis.out_norm", {h}});
  }
  return v;
}

std::vector<tensor_spec> draft_tensor_specs(const model_config& c) {
  if (c.draft_positions <= 0)
    return {};
  const int64_t p = c.draft_positions, h = c.hidden, r = c.draft_rank, vd = c.draft_vocab;
  return {{"draft.proj", {p, h, h}},        {"draft.norm", {h}},
          {"draft.vocab", {vd}},            {"draft.out", {vd, h}},
          {"draft.bias_in", {c.vocab_size, r}}, {"draft.bias_out", {vd, r}},
          {"draft.repeat", {p}},            {"draft.conf", {p, h + 3}}};
}

uint64_t hash_bytes(const void* data, std::size_t n, uint64_t seed) {
  constexpr uint64_t k = 0x9E3779B97F4A7C15ull;
  uint64_t h = seed ^ (n * k);
  auto* p = static_cast<const unsigned char*>(data);
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    h = (h ^ w) * k;
    h ^= h >> 31;
  }
  for (; i < n; ++i)
    h = (h ^ p[i]) * k;
  return h ^ (h >> 29);
}

std::string make_fingerprint(const std::vector<uint64_t>& tensor_hashes, const model_config& c) {
  std::string tail = std::string{to_string(c.dtype)} + "|" + c.kv_layout();
  uint64_t h = hash_bytes(tensor_hashes.data(), tensor_hashes.size() * 8, 1);
  h = hash_bytes(tail.data(), tail.size(), h);
  return fmt::format("{:016x}", h);
}

model_weights::~model_weights() = default;

model_weights::load_result model_weights::load(const std::string& dir) {
  load_result out;
  auto cfg = load_config_file(dir + "/config.json");
  if (!cfg.config) {
    out.error = dir + ": " + cfg.error;
    return out;
  }
  auto opened = safetensors_file::open(dir + "/model.safetensors");
  if (!opened.file) {
    out.error = opened.error;
    return out;
  }
  std::unique_ptr<model_weights> w{new model_weights};
  w->config_ = *cfg.config;
  w->file_ = std::move(opened.file);
  const auto& c = w->config_;
  const std::string want_dtype = c.dtype == weight_dtype::f32 ? "F32" : "BF16";
  auto specs = tensor_specs(c);
  std::map<std::string, const float*> ptr;
  std::vector<uint64_t> hashes;
  for (auto& s : specs) {
    auto* e = w->file_->find(s.name);
    if (e == nullptr) {
      out.error = fmt::format("{}: missing tensor '{}' (expected shape {})", dir, s.name,
                              shape_text(s.shape));
      return out;
    }
    if (!dtype_size(e->dtype)) {
      out.error = fmt::format("{}: tensor '{}' has unknown dtype '{}'", dir, s.name, e->dtype);
      return out;
    }
    if (e->dtype != want_dtype) {
      out.error = fmt::format("{}: tensor '{}' has dtype {} but config.json says {}", dir, s.name,
                              e->dtype, to_string(c.dtype));
      return out;
    }
    if (e->shape != s.shape) {
      out.error = fmt::format("{}: tensor '{}' has shape {}, expected {}", dir, s.name,
                              shape_text(e->shape), shape_text(s.shape));
      return out;
    }
    std::size_t n = 1;
    for (auto d : s.shape)
      n *= static_cast<std::size_t>(d);
    if (e->end - e->begin != n * *dtype_size(e->dtype)) {
      out.error = fmt::format("{}: tensor '{}' holds {} bytes, its shape needs {}", dir, s.name,
                              e->end - e->begin, n * *dtype_size(e->dtype));
      return out;
    }
    const std::byte* src = w->file_->data(*e);
    hashes.push_back(hash_bytes(src, e->end - e->begin, 0));
    if (c.dtype == weight_dtype::f32 && reinterpret_cast<uintptr_t>(src) % alignof(float) == 0) {
      ptr[s.name] = reinterpret_cast<const float*>(src);
    } else {
      auto& buf = w->owned_.emplace_back(n);
      if (c.dtype == weight_dtype::f32)
        std::memcpy(buf.data(), src, n * 4);
      else
        widen_bf16(src, buf.data(), n);
      ptr[s.name] = buf.data();
    }
  }
  auto fp = make_fingerprint(hashes, c);
  if (!c.fingerprint.empty() && c.fingerprint != fp) {
    out.error = c.made_for_kv_layout != c.kv_layout()
                    ? fmt::format("{}: the model was made for KV layout '{}', this build uses '{}': make it "
                                  "again with deepinfer-mkmodel (same --config and --seed)",
                                  dir, c.made_for_kv_layout.empty() ? "ced_moe-kv1" : c.made_for_kv_layout,
                                  c.kv_layout())
                    : fmt::format("{}: weights fingerprint {} does not match config.json's {}", dir, fp,
                                  c.fingerprint);
    return out;
  }
  w->config_.fingerprint = fp;
  auto attn = [&](const std::string& p) {
    return attention_weights{ptr[p + "attn_norm"], ptr[p + "attn.wq"], ptr[p + "attn.wk"],
                             ptr[p + "attn.wv"], ptr[p + "attn.wo"]};
  };
  auto moe = [&](const std::string& p) {
    moe_weights m{ptr[p + "ffn_norm"], ptr[p + "moe.router"], ptr[p + "moe.router_bias"],
                  ptr[p + "moe.w1"], ptr[p + "moe.w3"], ptr[p + "moe.w2"], nullptr, nullptr,
                  nullptr};
    if (c.shared_experts > 0) {
      m.shared_w1 = ptr[p + "moe.shared_w1"];
      m.shared_w3 = ptr[p + "moe.shared_w3"];
      m.shared_w2 = ptr[p + "moe.shared_w2"];
    }
    return m;
  };
  w->embed = ptr["embed"];
  w->final_norm = ptr["final_norm"];
  w->lm_head = c.tied_embeddings ? w->embed : ptr["lm_head"];
  for (int i = 0; i < c.encoder_layers; ++i) {
    auto p = fmt::format("enc.{}.", i);
    w->encoder.push_back({attn(p), moe(p)});
  }
  w->global = {ptr["global.norm"], ptr["global.wk"], ptr["global.wv"], ptr["global.wik"]};
  for (int i = 0; i < c.decoder_layers; ++i) {
    auto p = fmt::format("dec.{}.", i);
    w->decoder.push_back({attn(p), ptr[p + "cross_norm"], ptr[p + "cross.wq"],
                          ptr[p + "cross.wo"], ptr[p + "index.wq"], ptr[p + "index.w"], moe(p)});
  }
  if (c.vision.enabled()) {
    auto& v = w->vision;
    v.patch_embed = ptr["vis.patch_embed"];
    v.row_embed = ptr["vis.row_embed"];
    v.col_embed = ptr["vis.col_embed"];
    for (int i = 0; i < c.vision.layers; ++i) {
      auto p = fmt::format("vis.{}.", i);
      v.layers.push_back({ptr[p + "attn_norm"], ptr[p + "attn.wq"], ptr[p + "attn.wk"], ptr[p + "attn.wv"],
                          ptr[p + "attn.wo"], ptr[p + "mlp_norm"], ptr[p + "mlp.w1"], ptr[p + "mlp.w3"],
                          ptr[p + "mlp.w2"]});
    }
    v.merge_norm = ptr["vis.merge_norm"];
    v.proj = ptr["vis.proj"];
    v.out_norm = ptr["vis.out_norm"];
  }
  if (c.draft_positions > 0) {
    // f32 always: the head is small, and distillation writes it back without narrowing.
    auto dopen = safetensors_file::open(dir + "/draft.safetensors");
    if (!dopen.file) {
      out.error = fmt::format("{}: config.json declares a draft head ({} positions) but {}; make it with "
                              "deepinfer-mkmodel or drop the draft_* fields",
                              dir, c.draft_positions, dopen.error);
      return out;
    }
    w->draft_file_ = std::move(dopen.file);
    std::map<std::string, const float*> dptr;
    for (auto& s : draft_tensor_specs(c)) {
      auto* e = w->draft_file_->find(s.name);
      std::size_t n = 1;
      for (auto d : s.shape)
        n *= static_cast<std::size_t>(d);
      if (e == nullptr || e->dtype != "F32" || e->shape != s.shape || e->end - e->begin != n * 4) {
        out.error = fmt::format("{}/draft.safetensors: tensor '{}' is missing or not F32 {}; run "
                                "deepinfer-distill-draft or deepinfer-mkmodel again",
                                dir, s.name, shape_text(s.shape));
        return out;
      }
      const std::byte* src = w->draft_file_->data(*e);
      if (reinterpret_cast<uintptr_t>(src) % alignof(float) == 0)
        dptr[s.name] = reinterpret_cast<const float*>(src);
      else {
        auto& buf = w->owned_.emplace_back(n);
        std::memcpy(buf.data(), src, n * 4);
        dptr[s.name] = buf.data();
      }
    }
    w->draft = draft_weights{dptr["draft.proj"],    dptr["draft.norm"],     dptr["draft.vocab"],
                             dptr["draft.out"],     dptr["draft.bias_in"],  dptr["draft.bias_out"],
                             dptr["draft.repeat"],  dptr["draft.conf"]};
    for (int64_t i = 0; i < c.draft_vocab; ++i) {
      const float id = w->draft->vocab[i];
      if (!(id >= 0.0f && id < static_cast<float>(c.vocab_size)) || id != static_cast<float>(static_cast<int32_t>(id))) {
        out.error = fmt::format("{}/draft.safetensors: draft.vocab[{}] = {} is not a token id", dir, i, id);
        return out;
      }
    }
  }
  // Every bf16 tensor was widened into `owned_`: nothing points into the mapping any more, and
  // keeping it would leave the file's pages in the process's resident set.
  if (c.dtype != weight_dtype::f32)
    w->file_.reset();
  out.weights = std::move(w);
  return out;
}

} // namespace deepinfer::engine
