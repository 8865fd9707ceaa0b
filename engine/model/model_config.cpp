#include "engine/model/model_config.hpp"

#include "recipe/base/json_fields.hpp"

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

namespace deepinfer::engine {

const char* to_string(weight_dtype x) {
  return x == weight_dtype::f32 ? "f32" : "bf16";
}

model_config model_config::tiny() {
  model_config c;
  c.vision.layers = 2;
  c.dtype = weight_dtype::bf16;
  return c;
}

model_config model_config::small() {
  model_config c;
  c.name = "small";
  c.hidden = 256;
  c.encoder_layers = 6;
  c.decoder_layers = 6;
  c.heads = 8;
  c.kv_heads = 2;
  c.head_dim = 32;
  c.kv_groups = 3;
  c.index_heads = 4;
  c.index_dim = 64;
  c.index_topk = 512;
  c.routed_experts = 32;
  c.experts_per_token = 4;
  c.shared_experts = 1;
  c.expert_ffn = 256;
  c.route_scale = 2.5f;
  return c;
}

model_config model_config::bench_v4() {
  model_config c;
  c.name = "bench_v4";
  c.hidden = 1024;
  c.encoder_layers = 6;
  c.decoder_layers = 2;
  c.heads = 16;
  c.kv_heads = 4;
  c.head_dim = 64;
  c.kv_groups = 2;
  c.index_heads = 4;
  c.index_dim = 64;
  c.index_topk = 2048;
  c.routed_experts = 32;
  c.experts_per_token = 4;
  c.shared_experts = 1;
  c.expert_ffn = 512;
  c.route_scale = 2.5f;
  return c;
}

std::optional<model_config> model_config::preset(const std::string& name) {
  if (name == "tiny")
    return tiny();
  if (name == "small")
    return small();
  if (name == "bench_v4")
    return bench_v4();
  return std::nullopt;
}

std::string model_config::kv_layout() const {
  std::ostringstream os;
  os << "ced_moe-kv2:f32+i8idx:g" << kv_groups << ":h" << kv_heads << ":d" << head_dim << ":i"
     << index_dim << ":e" << encoder_layers << ":w" << window << ":r" << ring << ":t"
     << template_version;
  return os.str();
}

std::string model_config::validate() const {
  auto positive = [](int32_t v) { return v > 0; };
  if (!positive(vocab_size) || !positive(hidden) || !positive(encoder_layers) ||
      !positive(decoder_layers) || !positive(heads) || !positive(kv_heads) ||
      !positive(head_dim) || !positive(kv_groups) || !positive(index_heads) ||
      !positive(index_dim) || !positive(index_topk) || !positive(routed_experts) ||
      !positive(experts_per_token) || shared_experts < 0 || !positive(expert_ffn))
    return "every size must be positive";
  if (heads % kv_heads != 0)
    return "heads must be a multiple of kv_heads";
  if (head_dim % 2 != 0)
    return "head_dim must be even (RoPE rotates pairs)";
  if (experts_per_token > routed_experts)
    return "experts_per_token exceeds routed_experts";
  if (window != 128 || ring < window)
    return "window must be 128 and ring at least the window";
  if (vision.layers < 0)
    return "vision.layers must not be negative";
  if (vision.enabled()) {
    const auto& v = vision;
    if (v.patch <= 0 || v.merge <= 0 || v.hidden <= 0 || v.heads <= 0 || v.ffn <= 0 || v.max_grid <= 0)
      return "every vision size must be positive";
    if (v.hidden % v.heads != 0)
      return "vision.hidden must be a multiple of vision.heads";
  }
  if (draft_positions < 0 || draft_positions > ring - window - 1)
    return "draft_positions must be in [0, ring - window - 1] (the ring's spare slots absorb a rejected draft)";
  if (draft_positions > 0 && (draft_rank <= 0 || draft_vocab <= 0 || draft_vocab > vocab_size))
    return "a draft head needs a positive draft_rank and a draft_vocab in [1, vocab_size]";
  return {};
}

std::string to_json(const model_config& c) {
  nlohmann::ordered_json j;
  j["model_type"] = "ced_moe";
  j["name"] = c.name;
  j["vocab_size"] = c.vocab_size;
  j["hidden"] = c.hidden;
  j["encoder_layers"] = c.encoder_layers;
  j["decoder_layers"] = c.decoder_layers;
  j["heads"] = c.heads;
  j["kv_heads"] = c.kv_heads;
  j["head_dim"] = c.head_dim;
  j["kv_groups"] = c.kv_groups;
  j["window"] = c.window;
  j["ring"] = c.ring;
  j["index_heads"] = c.index_heads;
  j["index_dim"] = c.index_dim;
  j["index_topk"] = c.index_topk;
  j["routed_experts"] = c.routed_experts;
  j["experts_per_token"] = c.experts_per_token;
  j["shared_experts"] = c.shared_experts;
  j["expert_ffn"] = c.expert_ffn;
  j["route_scale"] = c.route_scale;
  j["rope_theta"] = c.rope_theta;
  j["norm_eps"] = c.norm_eps;
  j["tied_embeddings"] = c.tied_embeddings;
  j["dtype"] = to_string(c.dtype);
  j["template_version"] = c.template_version;
  if (c.vision.enabled())
    j["vision"] = {{"layers", c.vision.layers}, {"patch", c.vision.patch}, {"merge", c.vision.merge},
                   {"hidden", c.vision.hidden}, {"heads", c.vision.heads}, {"ffn", c.vision.ffn},
                   {"max_grid", c.vision.max_grid}};
  j["fingerprint"] = c.fingerprint;
  j["kv_layout"] = c.kv_layout();
  if (c.draft_positions > 0) {
    j["draft_positions"] = c.draft_positions;
    j["draft_rank"] = c.draft_rank;
    j["draft_vocab"] = c.draft_vocab;
  }
  return j.dump(2) + "\n";
}

config_result config_from_json(const std::string& text) {
  config_result out;
  try {
    auto j = nlohmann::json::parse(text);
    if (!j.is_object()) {
      out.error = "config.json: expected one JSON object";
      return out;
    }
    if (j.value("model_type", std::string{"ced_moe"}) != "ced_moe") {
      out.error = "config.json: model_type is not ced_moe";
      return out;
    }
    model_config c;
    // Every key is read by name; one that nothing reads (a typo such as "hiden") is an error
    // below, rather than a model made or loaded with the default it meant to change.
    json_fields fields{j};
    for (const char* key : {"model_type", "dtype", "vision"})
      fields.allow(key);
    auto get = [&](const char* key, auto& field) { fields.get(key, field); };
    get("name", c.name);
    get("vocab_size", c.vocab_size);
    get("hidden", c.hidden);
    get("encoder_layers", c.encoder_layers);
    get("decoder_layers", c.decoder_layers);
    get("heads", c.heads);
    get("kv_heads", c.kv_heads);
    get("head_dim", c.head_dim);
    get("kv_groups", c.kv_groups);
    get("window", c.window);
    get("ring", c.ring);
    get("index_heads", c.index_heads);
    get("index_dim", c.index_dim);
    get("index_topk", c.index_topk);
    get("routed_experts", c.routed_experts);
    get("experts_per_token", c.experts_per_token);
    get("shared_experts", c.shared_experts);
    get("expert_ffn", c.expert_ffn);
    get("route_scale", c.route_scale);
    get("rope_theta", c.rope_theta);
    get("norm_eps", c.norm_eps);
    get("tied_embeddings", c.tied_embeddings);
    get("template_version", c.template_version);
    get("fingerprint", c.fingerprint);
    get("kv_layout", c.made_for_kv_layout);
    // A config without a `vision` object describes a text-only model, whatever tiny has.
    if (j.contains("vision")) {
      const auto& v = j.at("vision");
      if (!v.is_object()) {
        out.error = "config.json: 'vision' must be an object";
        return out;
      }
      json_fields vision_fields{v};
      auto vget = [&](const char* key, int32_t& field) { vision_fields.get(key, field); };
      c.vision.layers = 1;
      vget("layers", c.vision.layers);
      vget("patch", c.vision.patch);
      vget("merge", c.vision.merge);
      vget("hidden", c.vision.hidden);
      vget("heads", c.vision.heads);
      vget("ffn", c.vision.ffn);
      vget("max_grid", c.vision.max_grid);
      if (auto key = vision_fields.unknown_key()) {
        out.error = "config.json: unknown key 'vision." + *key + "'";
        return out;
      }
    }
    get("draft_positions", c.draft_positions);
    get("draft_rank", c.draft_rank);
    get("draft_vocab", c.draft_vocab);
    if (auto key = fields.unknown_key()) {
      out.error = "config.json: unknown key '" + *key + "' (check its spelling against a config "
                  "deepinfer-mkmodel writes)";
      return out;
    }
    std::string dtype = j.value("dtype", std::string{"f32"});
    if (dtype == "f32")
      c.dtype = weight_dtype::f32;
    else if (dtype == "bf16")
      c.dtype = weight_dtype::bf16;
    else {
      out.error = "config.json: unknown dtype '" + dtype + "'";
      return out;
    }
    if (auto err = c.validate(); !err.empty()) {
      out.error = "config.json: " + err;
      return out;
    }
    out.config = std::move(c);
  } catch (const std::exception& e) {
    out.error = std::string{"config.json: "} + e.what();
  }
  return out;
}

config_result load_config_file(const std::string& path) {
  std::ifstream in(path);
  if (!in)
    return {std::nullopt, "cannot open " + path};
  std::stringstream ss;
  ss << in.rdbuf();
  return config_from_json(ss.str());
}

} // namespace deepinfer::engine
