#include "engine/model/draft_head.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "engine/kernels/canonical.hpp"
#include "engine/model/safetensors.hpp"

namespace deepinfer::engine {

draft_head::draft_head(const model_weights& w, backend& b) : w_(w), d_(*w.draft), b_(b) {}

void draft_head::prepare_weights() {
  const auto& c = config();
  const int64_t h = c.hidden;
  b_.prepare_weight(d_.proj, int64_t{c.draft_positions} * h, h);
  b_.prepare_weight(d_.out, c.draft_vocab, h);
  b_.prepare_weight(d_.bias_out, c.draft_vocab, c.draft_rank);
}

void draft_head::add_biases(const int32_t* before, int64_t n, float* logits, int64_t stride) {
  const auto& c = config();
  const int64_t vd = c.draft_vocab, r = c.draft_rank;
  u_.resize(static_cast<std::size_t>(n * r));
  bool any = false;
  for (int64_t i = 0; i < n; ++i) {
    const float* u = d_.bias_in + int64_t{before[i]} * r;
    std::copy(u, u + r, u_.begin() + i * r);
    any = any || std::any_of(u, u + r, [](float x) { return x != 0.0f; });
  }
  // Most ids have no bias (distillation gives one only to ids seen in its rollouts, none when
  // the bias did not help on held-out rollouts): adding zeros would change nothing.
  if (!any)
    return;
  // One product for the n rows (was a scalar loop per row: a tenth of a batch-64 step).
  bias_.resize(static_cast<std::size_t>(n * vd));
  b_.matmul(u_.data(), n, r, d_.bias_out, vd, bias_.data());
  for (int64_t i = 0; i < n; ++i) {
    float* lg = logits + i * stride;
    const float* bi = bias_.data() + i * vd;
    for (int64_t v = 0; v < vd; ++v)
      lg[v] += bi[v];
  }
}

draft_choice choose_draft(const float* logits, const float* vocab, int64_t vd, const float* lm_head, int64_t vocab_size,
                          const float* z, int64_t hidden, int32_t before, float repeat, bool with_top,
                          const kernels::kernel_table* k) {
  // The token before is always a candidate: without it a target that repeats ids outside the
  // draft vocabulary (a tiny random model under greedy repeats its last token 92 % of the time)
  // could never be drafted. `repeat`, fitted by distillation, says how much the target favours it.
  int64_t slot = -1;
  bool outside = false;
  float again = 0.0f;
  if (before >= 0 && before < vocab_size) {
    const float id = static_cast<float>(before);
    const float* it = std::lower_bound(vocab, vocab + vd, id);
    if (it != vocab + vd && *it == id) {
      slot = it - vocab;
      again = logits[slot] + repeat;
    } else {
      const float* row = lm_head + int64_t{before} * hidden;
      for (int64_t t = 0; t < hidden; ++t)
        again += row[t] * z[t];
      again += repeat;
      outside = true;
    }
  }
  auto logit = [&](int64_t v) { return v == slot ? again : logits[v]; };
  int64_t best = 0;
  float top = logit(0);
  for (int64_t v = 1; v < vd; ++v)
    if (logit(v) > top) {
      top = logit(v);
      best = v;
    }
  draft_choice c{static_cast<int32_t>(vocab[best]), 0.0f, best == slot};
  if (outside && again > top) {
    top = again;
    c.token = before;
    c.repeated = true;
  }
  if (!with_top)
    return c;
  // The exponentials in one vector pass (they were libm's double exp, one call per id: a tenth of
  // a batch-64 decode step), the slot's own after.
  thread_local std::vector<float> e;
  e.resize(static_cast<std::size_t>(vd));
  (k != nullptr ? *k : kernels::kernels_for(kernels::cpu_isa::portable)).exp_shifted(logits, vd, top, e.data());
  double sum = 0.0;
  for (int64_t v = 0; v < vd; ++v)
    sum += static_cast<double>(v == slot ? kernels::canonical::exp(again - top) : e[static_cast<std::size_t>(v)]);
  if (outside)
    sum += static_cast<double>(kernels::canonical::exp(again - top));
  c.top = static_cast<float>(1.0 / sum);
  return c;
}

void draft_head::features(const float* x, const int32_t* prev_of, float* z, float* logits, draft_choice* choices) {
  const auto& c = config();
  const int64_t h = c.hidden, p = c.draft_positions, vd = c.draft_vocab;
  const auto& k = b_.kernels();
  xn_.resize(static_cast<std::size_t>(h));
  proj_.resize(static_cast<std::size_t>(p * h));
  k.rms_norm(x, 1, h, w_.final_norm, c.norm_eps, xn_.data());
  // One product drafts every position: proj is [P*hidden x hidden].
  b_.matmul(xn_.data(), 1, h, d_.proj, p * h, proj_.data());
  k.rms_norm(proj_.data(), p, h, d_.norm, c.norm_eps, z);
  b_.matmul(z, p, h, d_.out, vd, logits);
  for (int64_t j = 0; j < p; ++j) {
    add_biases(prev_of + j, 1, logits + j * vd, vd);
    choices[j] = choose_draft(logits + j * vd, d_.vocab, vd, w_.lm_head, c.vocab_size, z + j * h, h, prev_of[j],
                              d_.repeat[j], true, &k);
  }
}

void draft_head::propose(const float* x, const int32_t* prev, int64_t n, draft_proposal* out) {
  const auto& c = config();
  const int64_t h = c.hidden, p = c.draft_positions, vd = c.draft_vocab;
  if (n <= 0)
    return;
  const auto& k = b_.kernels();
  xn_.resize(static_cast<std::size_t>(n * h));
  proj_.resize(static_cast<std::size_t>(n * p * h));
  z_.resize(proj_.size());
  logits_.resize(static_cast<std::size_t>(n * p * vd));
  k.rms_norm(x, n, h, w_.final_norm, c.norm_eps, xn_.data());
  b_.matmul(xn_.data(), n, h, d_.proj, p * h, proj_.data());
  k.rms_norm(proj_.data(), n * p, h, d_.norm, c.norm_eps, z_.data());
  b_.matmul(z_.data(), n * p, h, d_.out, vd, logits_.data());
  // The bias depends on the token drafted just before, so positions go one after another (one
  // bias product over the n rows each), while the base logits came from one parallel product.
  std::vector<int32_t> before(prev, prev + n);
  for (int64_t j = 0; j < p; ++j) {
    add_biases(before.data(), n, logits_.data() + j * vd, p * vd);
    b_.parallel_for(n, [&](int64_t i) {
      auto& o = out[i];
      o.count = static_cast<int32_t>(p);
      const float* lg = logits_.data() + (i * p + j) * vd;
      const float* zj = z_.data() + (i * p + j) * h;
      const auto pick = choose_draft(lg, d_.vocab, vd, w_.lm_head, c.vocab_size, zj, h, before[static_cast<std::size_t>(i)],
                                     d_.repeat[j], true, &k);
      const float* cw = d_.conf + j * (h + 3);
      float a = cw[h] * pick.top + (pick.repeated ? cw[h + 1] : 0.0f) + cw[h + 2];
      for (int64_t t = 0; t < h; ++t)
        a += cw[t] * zj[t];
      o.tokens[j] = pick.token;
      o.confidence[j] = kernels::canonical::sigmoid(a);
      before[static_cast<std::size_t>(i)] = o.tokens[j];
    });
  }
}

draft_tensors random_draft_tensors(const model_config& c, uint64_t seed) {
  draft_tensors t;
  const auto specs = draft_tensor_specs(c);
  for (std::size_t i = 0; i < specs.size(); ++i) {
    const auto& s = specs[i];
    std::size_t n = 1;
    for (auto d : s.shape)
      n *= static_cast<std::size_t>(d);
    std::vector<float> v(n);
    // Streams apart from the target's (random_model seeds tensor i with seed * 1000003 + i).
    std::mt19937_64 rng(seed * 7000009ull + 0xD5A7 + i);
    std::normal_distribution<float> n01(0.0f, 1.0f);
    if (s.name == "draft.norm") {
      std::fill(v.begin(), v.end(), 1.0f);
    } else if (s.name == "draft.vocab") {
      // A seeded sample of distinct ids, ascending.
      std::vector<int32_t> ids(static_cast<std::size_t>(c.vocab_size));
      std::iota(ids.begin(), ids.end(), 0);
      std::shuffle(ids.begin(), ids.end(), rng);
      ids.resize(n);
      std::sort(ids.begin(), ids.end());
      for (std::size_t k = 0; k < n; ++k)
        v[k] = static_cast<float>(ids[k]);
    } else if (s.name == "draft.repeat") {
      std::fill(v.begin(), v.end(), 0.0f);
    } else if (s.name == "draft.conf") {
      // Untrained: every draft predicted at about 1/4 acceptance.
      for (std::size_t k = 0; k < n; ++k)
        v[k] = (k % static_cast<std::size_t>(c.hidden + 3)) == static_cast<std::size_t>(c.hidden + 2) ? -1.0f : 0.0f;
    } else {
      const float scale = 1.0f / std::sqrt(static_cast<float>(s.shape.back()));
      for (auto& x : v)
        x = scale * n01(rng);
    }
    t.values.push_back(std::move(v));
  }
  return t;
}

std::string write_draft_file(const model_config& c, const draft_tensors& t, const std::string& dir) {
  const auto specs = draft_tensor_specs(c);
  if (specs.size() != t.values.size())
    return "draft tensors do not match the config's draft head";
  safetensors_writer w;
  for (const auto& s : specs)
    w.add(s.name, "F32", s.shape);
  // Written beside and renamed over: a reader never maps a half-written head.
  const std::string path = dir + "/draft.safetensors", tmp = path + ".tmp";
  if (!w.begin(tmp))
    return "cannot write " + tmp;
  for (const auto& v : t.values)
    w.write(v.data(), v.size() * sizeof(float));
  if (!w.finish())
    return "I/O error writing " + tmp;
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    return "cannot rename " + tmp + " to " + path;
  return {};
}

} // namespace deepinfer::engine
