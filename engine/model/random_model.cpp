#include "engine/model/random_model.hpp"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <vector>

#include "engine/model/draft_head.hpp"
#include "engine/model/safetensors.hpp"
#include "engine/model/weights.hpp"

namespace deepinfer::engine {

namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Round-to-nearest-even narrowing of an f32 to bf16.
uint16_t to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u += 0x7FFF + ((u >> 16) & 1);
  return static_cast<uint16_t>(u >> 16);
}

// Fills `v` for tensor `s`: norms near 1, biases and gates small, matrices scaled by fan-in so
// activations stay O(1) through any depth.
void fill(const tensor_spec& s, std::vector<float>& v, std::mt19937_64& rng) {
  std::normal_distribution<float> n01(0.0f, 1.0f);
  const auto& name = s.name;
  if (ends_with(name, "norm")) {
    for (auto& x : v)
      x = 1.0f + 0.05f * n01(rng);
  } else if (ends_with(name, "router_bias")) {
    for (auto& x : v)
      x = 0.1f * n01(rng);
  } else if (ends_with(name, "index.w")) {
    for (auto& x : v)
      x = std::fabs(n01(rng)) / std::sqrt(static_cast<float>(v.size()));
  } else if (name == "embed") {
    for (auto& x : v)
      x = 0.5f * n01(rng);
  } else {
    float scale = 1.0f / std::sqrt(static_cast<float>(s.shape.back()));
    for (auto& x : v)
      x = scale * n01(rng);
  }
}

} // namespace

std::string random_model::write(const model_config& c, uint64_t seed, const std::string& dir,
                                const progress_fn& progress) {
  if (auto err = c.validate(); !err.empty())
    return "bad config: " + err;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    return "cannot create " + dir + ": " + ec.message();
  auto specs = tensor_specs(c);
  const bool bf16 = c.dtype == weight_dtype::bf16;
  safetensors_writer w;
  uint64_t total = 0;
  for (auto& s : specs) {
    w.add(s.name, bf16 ? "BF16" : "F32", s.shape);
    uint64_t n = 1;
    for (auto d : s.shape)
      n *= static_cast<uint64_t>(d);
    total += n * (bf16 ? 2 : 4);
  }
  if (!w.begin(dir + "/model.safetensors"))
    return "cannot write " + dir + "/model.safetensors";
  std::vector<uint64_t> hashes;
  uint64_t done = 0;
  std::vector<float> v;
  std::vector<uint16_t> narrow;
  for (std::size_t i = 0; i < specs.size(); ++i) {
    // One stream per tensor, so a tensor's values do not depend on the tensors before it.
    std::mt19937_64 rng(seed * 1000003ull + i);
    std::size_t n = 1;
    for (auto d : specs[i].shape)
      n *= static_cast<std::size_t>(d);
    v.assign(n, 0.0f);
    fill(specs[i], v, rng);
    if (bf16) {
      narrow.resize(n);
      for (std::size_t k = 0; k < n; ++k)
        narrow[k] = to_bf16(v[k]);
      w.write(narrow.data(), n * 2);
      hashes.push_back(hash_bytes(narrow.data(), n * 2, 0));
      done += n * 2;
    } else {
      w.write(v.data(), n * 4);
      hashes.push_back(hash_bytes(v.data(), n * 4, 0));
      done += n * 4;
    }
    if (progress)
      progress(done, total);
  }
  if (!w.finish())
    return "I/O error writing " + dir + "/model.safetensors";
  if (c.draft_positions > 0)
    if (auto err = write_draft_file(c, random_draft_tensors(c, seed), dir); !err.empty())
      return err;
  model_config out = c;
  out.fingerprint = make_fingerprint(hashes, c);
  std::ofstream cfg(dir + "/config.json", std::ios::trunc);
  cfg << to_json(out);
  if (!cfg)
    return "cannot write " + dir + "/config.json";
  return {};
}

} // namespace deepinfer::engine
