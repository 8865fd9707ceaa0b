#include "engine/sampler.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <numeric>

#include "engine/kernels/canonical.hpp"

namespace deepinfer::engine {

namespace {

// out[i] = exp(x[i] - shift), the canonical exp: by `fn` (the kernels' vectorized one, the same
// bits) when given. The scalar one calls libm's fmaf eight times a value: ~3 ms over 129K ids.
void exps(const float* x, int64_t n, float shift, float* out, sampler::exp_fn fn) {
  if (fn != nullptr) {
    fn(x, n, shift, out);
    return;
  }
  for (int64_t i = 0; i < n; ++i)
    out[i] = kernels::canonical::exp(x[i] - shift);
}

// log-sum-exp of the logits (float exponentials, summed in double in index order; the canonical
// exp, so a token drawn on one ISA is the token drawn on any other).
double log_normalizer(const float* logits, int64_t vocab, float mx, sampler::exp_fn fn) {
  thread_local std::vector<float> e;
  e.resize(static_cast<std::size_t>(vocab));
  exps(logits, vocab, mx, e.data(), fn);
  // 16 running sums (element i goes to sum i % 16), then theirs in a fixed tree: the same bits
  // on every CPU (plain code in a fixed order, no FMA in additions), and no chain of 129K
  // dependent additions (one sum was a fifth of a greedy + logprobs decode row).
  constexpr int64_t lanes = 16;
  double part[lanes] = {};
  const float* x = e.data();
  int64_t i = 0;
  for (; i + lanes <= vocab; i += lanes)
    for (int64_t l = 0; l < lanes; ++l)
      part[l] += static_cast<double>(x[i + l]);
  for (int64_t l = 0; i < vocab; ++i, ++l)
    part[l] += static_cast<double>(x[i]);
  for (int64_t width = lanes / 2; width > 0; width /= 2)
    for (int64_t l = 0; l < width; ++l)
      part[l] += part[l + width];
  return std::log(part[0]) + mx;
}

// SplitMix64's finalizer (Steele, Lea, Flood 2014): a bijection whose outputs over consecutive
// inputs pass BigCrush, which is what makes a counter a random stream.
uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// The largest logit: 16 running maxima the compiler keeps in vector registers (std::max_element's
// one chain of compares took a tenth of a batch-64 decode step over 129K ids), then theirs. A max
// is exact in any order, so this is max_element's value whenever no logit is NaN.
float max_logit(const float* logits, int64_t vocab) {
  constexpr int64_t lanes = 16;
  if (vocab < lanes)
    return *std::max_element(logits, logits + vocab);
  float m[lanes];
  std::copy(logits, logits + lanes, m);
  int64_t i = lanes;
  for (; i + lanes <= vocab; i += lanes)
    for (int64_t l = 0; l < lanes; ++l)
      m[l] = logits[i + l] > m[l] ? logits[i + l] : m[l];
  float mx = *std::max_element(m, m + lanes);
  for (; i < vocab; ++i)
    mx = logits[i] > mx ? logits[i] : mx;
  return mx;
}

// The `k` most likely ids, best first, equal logits by ascending id: one pass keeping the best so
// far (a later id displaces one only with a strictly larger logit), no sort of the vocabulary.
std::vector<int32_t> most_likely(const float* logits, int64_t vocab, int64_t k_asked) {
  const auto k = static_cast<std::size_t>(std::clamp<int64_t>(k_asked, 0, vocab));
  std::vector<int32_t> best;
  if (k == 0)
    return best;
  best.reserve(k + 1);
  for (int64_t i = 0; i < vocab; ++i) {
    if (best.size() == k && !(logits[i] > logits[best.back()]))
      continue;
    auto at = std::upper_bound(best.begin(), best.end(), logits[i], [&](float v, int32_t b) { return v > logits[b]; });
    best.insert(at, static_cast<int32_t>(i));
    if (best.size() > k)
      best.pop_back();
  }
  return best;
}

// Sorts `ids` (ascending) by logit, largest first, equal logits by ascending id: the order a sort
// with (logit greater, or equal and id lower) gives. An LSD radix sort of the logits' order keys,
// stable, so ties keep their ascending ids: 3 passes of 11 bits (their histograms counted in one
// read of the keys; 1.02 -> 0.76 ms on 129K ids against 4 passes of 8 bits, Zen 4), and a pass
// whose digit every key shares is skipped (it would keep the order). A comparison sort of the
// whole vocabulary (top-p without top-k) took ~20 ms a token.
void sort_by_logit(std::vector<int32_t>& ids, const float* logits) {
  const std::size_t n = ids.size();
  if (n == 0)
    return;
  constexpr int digit_bits = 11;
  constexpr uint32_t digit_mask = (1u << digit_bits) - 1;
  thread_local std::vector<uint32_t> keys, keys_out;
  thread_local std::vector<int32_t> ids_out;
  thread_local std::array<std::array<uint32_t, 1u << digit_bits>, 3> at;
  keys.resize(n);
  keys_out.resize(n);
  ids_out.resize(n);
  for (auto& h : at)
    h.fill(0);
  for (std::size_t i = 0; i < n; ++i) {
    const uint32_t key = ~kernels::canonical::order_key(logits[ids[i]]); // descending
    keys[i] = key;
    ++at[0][key & digit_mask];
    ++at[1][(key >> digit_bits) & digit_mask];
    ++at[2][key >> (2 * digit_bits)];
  }
  for (int pass = 0; pass < 3; ++pass) {
    const int shift = pass * digit_bits;
    auto& h = at[static_cast<std::size_t>(pass)];
    if (h[(keys[0] >> shift) & digit_mask] == n)
      continue;
    uint32_t first = 0; // counts become each digit's first place
    for (auto& c : h) {
      const uint32_t count = c;
      c = first;
      first += count;
    }
    for (std::size_t i = 0; i < n; ++i) {
      const uint32_t to = h[(keys[i] >> shift) & digit_mask]++;
      keys_out[to] = keys[i];
      ids_out[to] = ids[i];
    }
    keys.swap(keys_out);
    ids.swap(ids_out);
  }
}

} // namespace

uint64_t sampler::random_bits(uint64_t seed, int64_t position) {
  // The seed is mixed first so seeds 1, 2, 3 ... start streams far apart.
  constexpr uint64_t golden_gamma = 0x9E3779B97F4A7C15ull;
  return mix64(mix64(seed) + (static_cast<uint64_t>(position) + 1) * golden_gamma);
}

void sampler::process_logits(float* logits, int64_t vocab, const sampling_params& p,
                             std::span<const int32_t> tokens) {
  if (!p.processes_logits())
    return;
  auto valid = [vocab](int32_t id) { return id >= 0 && id < vocab; };
  const auto from = static_cast<std::size_t>(std::clamp<int64_t>(p.output_from, 0, static_cast<int64_t>(tokens.size())));
  // 1. repetition (vLLM): each distinct id of prompt and output once.
  if (p.repetition_penalty != 1.0f && p.repetition_penalty > 0.0f) {
    std::vector<int32_t> seen(tokens.begin(), tokens.end());
    std::sort(seen.begin(), seen.end());
    seen.erase(std::unique(seen.begin(), seen.end()), seen.end());
    for (auto id : seen)
      if (valid(id))
        logits[id] = logits[id] > 0 ? logits[id] / p.repetition_penalty : logits[id] * p.repetition_penalty;
  }
  // 2. presence and frequency (OpenAI): over the output only, by count.
  if (p.presence_penalty != 0.0f || p.frequency_penalty != 0.0f) {
    std::vector<int32_t> out(tokens.begin() + static_cast<std::ptrdiff_t>(from), tokens.end());
    std::sort(out.begin(), out.end());
    for (std::size_t i = 0; i < out.size();) {
      std::size_t j = i;
      while (j < out.size() && out[j] == out[i])
        ++j;
      if (valid(out[i]))
        logits[out[i]] -= static_cast<float>(j - i) * p.frequency_penalty + p.presence_penalty;
      i = j;
    }
  }
  // 3. logit_bias, then 4. no stop before min_tokens output tokens.
  for (auto [id, bias] : p.logit_bias)
    if (valid(id))
      logits[id] += bias;
  if (static_cast<int64_t>(tokens.size() - from) < p.min_tokens)
    for (auto id : p.stop_ids)
      if (valid(id))
        logits[id] = -std::numeric_limits<float>::infinity();
  // 5. vLLM's allowed ids: every other id blocked (a pass over the vocabulary; the allowed ids'
  // logits kept aside and put back). 6. Bad words: the id that would complete one after the
  // output so far (vLLM matches over the output only).
  if (!p.allowed_ids.empty()) {
    thread_local std::vector<float> kept;
    kept.clear();
    for (auto id : p.allowed_ids)
      kept.push_back(valid(id) ? logits[id] : 0.0f);
    std::fill(logits, logits + vocab, -std::numeric_limits<float>::infinity());
    for (std::size_t i = 0; i < p.allowed_ids.size(); ++i)
      if (valid(p.allowed_ids[i]))
        logits[p.allowed_ids[i]] = kept[i];
  }
  const std::span<const int32_t> output = tokens.subspan(from);
  for (const auto& word : p.bad_words) {
    if (word.empty() || !valid(word.back()) || output.size() + 1 < word.size())
      continue;
    if (std::equal(word.begin(), word.end() - 1, output.end() - static_cast<std::ptrdiff_t>(word.size() - 1)))
      logits[word.back()] = -std::numeric_limits<float>::infinity();
  }
  // 7. The thinking budget spent and the reasoning still open: only its end may come. A pass
  // over the vocabulary, once per sequence (the next step's output holds the end).
  if (p.thinking_budget >= 0 && valid(p.thinking_end) &&
      static_cast<int64_t>(tokens.size() - from) >= p.thinking_budget &&
      std::find(tokens.begin() + static_cast<std::ptrdiff_t>(from), tokens.end(), p.thinking_end) == tokens.end()) {
    const float end = logits[p.thinking_end];
    std::fill(logits, logits + vocab, -std::numeric_limits<float>::infinity());
    logits[p.thinking_end] = std::isfinite(end) ? end : 0.0f;
  }
}

sampled_token sampler::score(const float* logits, int64_t vocab, int32_t id, int32_t top_n, exp_fn fn) {
  sampled_token out;
  out.id = id;
  const float mx = max_logit(logits, vocab);
  const double lz = log_normalizer(logits, vocab, mx, fn);
  out.logprob = static_cast<float>(logits[id] - lz);
  int64_t above = 0;
  for (int64_t i = 0; i < vocab; ++i)
    above += logits[i] > logits[id] ? 1 : 0;
  out.rank = static_cast<int32_t>(above + 1);
  for (auto b : most_likely(logits, vocab, top_n))
    out.top.emplace_back(b, static_cast<float>(logits[b] - lz));
  return out;
}

sampled_token sampler::sample(const float* logits, int64_t vocab, const sampling_params& p, int64_t position,
                             exp_fn fn) {
  sampled_token out;
  const float mx = max_logit(logits, vocab);
  const bool want = p.logprobs || p.top_logprobs > 0;
  const double lz = want ? log_normalizer(logits, vocab, mx, fn) : 0.0;
  auto logprob = [&](int64_t i) { return want ? static_cast<float>(logits[i] - lz) : 0.0f; };
  for (auto id : most_likely(logits, vocab, p.top_logprobs))
    out.top.emplace_back(id, logprob(id));
  // Nothing left to draw (the request's own masks exclude every id: allowed ids that are all
  // stop ids under min_tokens, say): the lowest id, as greedy picks among equals.
  if (p.temperature <= 0.0f || mx == -std::numeric_limits<float>::infinity()) {
    out.id = static_cast<int32_t>(std::find(logits, logits + vocab, mx) - logits);
    out.logprob = logprob(out.id);
    return out;
  }
  // Candidates cut by min-p, then sorted by logit (ties to the lower id) and cut by top-k, then
  // by top-p (vLLM's order).
  // Every id's weight exp((logit - max) / T) at once (vectorized; min-p and the draw read them).
  const double t = p.temperature;
  thread_local std::vector<float> scaled, weights;
  scaled.resize(static_cast<std::size_t>(vocab));
  weights.resize(scaled.size());
  for (int64_t i = 0; i < vocab; ++i)
    scaled[static_cast<std::size_t>(i)] = static_cast<float>((logits[i] - mx) / t);
  exps(scaled.data(), vocab, 0.0f, weights.data(), fn); // x - 0 is x: exp of the scaled logit
  auto weight = [&](int32_t id) { return static_cast<double>(weights[static_cast<std::size_t>(id)]); };
  // Kept per thread: 1.5 MB a draw would otherwise be fresh pages, faulted in and zeroed.
  thread_local std::vector<int32_t> ids;
  ids.resize(static_cast<std::size_t>(vocab));
  std::iota(ids.begin(), ids.end(), 0);
  // The most likely id weighs exactly 1, so min-p is a floor on the weights themselves (and the
  // same rounded weights the draw uses: what survives never depends on the platform).
  if (p.min_p > 0.0f)
    std::erase_if(ids, [&](int32_t id) { return weight(id) < p.min_p; });
  const auto left = static_cast<int64_t>(ids.size());
  const int64_t keep = p.top_k > 0 ? std::min<int64_t>(p.top_k, left) : left;
  auto better = [&](int32_t a, int32_t b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  };
  if (keep < left)
    std::partial_sort(ids.begin(), ids.begin() + keep, ids.end(), better);
  else if (p.top_p < 1.0f)
    sort_by_logit(ids, logits); // the same order as sorting with `better`, ~20x faster on 129K ids
  ids.resize(static_cast<std::size_t>(keep));
  thread_local std::vector<double> w;
  w.resize(ids.size());
  double total = 0.0;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    w[i] = weight(ids[i]);
    total += w[i];
  }
  if (p.top_p < 1.0f) {
    double acc = 0.0;
    std::size_t n = 0;
    while (n < ids.size() && acc < p.top_p * total)
      acc += w[n++];
    ids.resize(std::max<std::size_t>(n, 1));
    w.resize(ids.size());
    total = std::accumulate(w.begin(), w.end(), 0.0);
  }
  // A uniform double from 53 random bits: identical on every platform for a given seed.
  double u = static_cast<double>(random_bits(p.seed, position) >> 11) * 0x1.0p-53 * total;
  std::size_t pick = 0;
  for (double acc = w[0]; acc <= u && pick + 1 < ids.size(); acc += w[++pick]) {
  }
  out.id = ids[pick];
  out.logprob = logprob(out.id);
  return out;
}

} // namespace deepinfer::engine
