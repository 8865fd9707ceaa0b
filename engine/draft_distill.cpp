#include "engine/draft_distill.hpp"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <numeric>
#include <random>

#include "engine/backends/cpu/cpu_backend.hpp"
#include "engine/rank_engine.hpp"

namespace deepinfer::engine {

namespace {

std::vector<int32_t> random_prompt(int64_t n, std::mt19937_64& rng, int32_t vocab) {
  std::vector<int32_t> t(static_cast<std::size_t>(n));
  for (auto& x : t)
    x = static_cast<int32_t>(rng() % static_cast<uint64_t>(vocab));
  return t;
}

/// The rollouts: per request, row i's final hidden state and the token the target chose there.
struct rollout {
  std::vector<float> x;      // [rows x hidden]
  std::vector<int32_t> out;  // [rows]
};

std::vector<rollout> collect(rank_engine& e, const distill_config& cfg, uint64_t seed, int prompts, bool sampled_half) {
  const auto& c = e.model();
  std::mt19937_64 rng(seed);
  std::vector<rollout> rs(static_cast<std::size_t>(prompts));
  std::vector<sequence_id> ids;
  for (int i = 0; i < prompts; ++i) {
    prefill_request req;
    req.seq = sequence_id{static_cast<uint64_t>(i + 1)};
    req.tokens = random_prompt(cfg.prompt_len, rng, c.vocab_size);
    req.sampling.max_tokens = cfg.tokens + 2;
    if (sampled_half && i % 2 == 1) {
      req.sampling.temperature = 0.8f;
      req.sampling.top_k = 40;
      req.sampling.seed = seed * 1000 + static_cast<uint64_t>(i);
    }
    if (e.prefill(req).status == engine_status::ok)
      ids.push_back(req.seq);
  }
  std::vector<float> hidden;
  for (int t = 0; t < cfg.tokens; ++t) {
    auto outs = e.decode_step(ids, nullptr, &hidden);
    std::size_t row = 0;
    for (std::size_t i = 0; i < outs.size(); ++i) {
      if (outs[i].status != engine_status::ok)
        continue;
      auto& r = rs[static_cast<std::size_t>(ids[i].value - 1)];
      r.x.insert(r.x.end(), hidden.begin() + static_cast<long>(row * c.hidden),
                 hidden.begin() + static_cast<long>((row + 1) * c.hidden));
      r.out.push_back(outs[i].token.id);
      ++row;
    }
  }
  for (auto id : ids)
    e.free(id);
  return rs;
}

void rms_norm(const float* x, int64_t h, const float* w, float eps, float* out) {
  double ss = 0.0;
  for (int64_t i = 0; i < h; ++i)
    ss += double{x[i]} * x[i];
  const auto inv = static_cast<float>(1.0 / std::sqrt(ss / static_cast<double>(h) + eps));
  for (int64_t i = 0; i < h; ++i)
    out[i] = x[i] * inv * (w ? w[i] : 1.0f);
}

/// Solves (A + ridge I) X = B for symmetric positive definite A [n x n], B [n x m], by Cholesky;
/// B is overwritten with X.
void solve_spd(std::vector<double> a, int64_t n, std::vector<double>& b, int64_t m, double ridge) {
  double diag = 0.0;
  for (int64_t i = 0; i < n; ++i)
    diag += a[i * n + i];
  const double add = ridge * (diag / static_cast<double>(n) + 1e-12);
  for (int64_t i = 0; i < n; ++i)
    a[i * n + i] += add;
  for (int64_t j = 0; j < n; ++j) {
    double d = a[j * n + j];
    for (int64_t k = 0; k < j; ++k)
      d -= a[j * n + k] * a[j * n + k];
    d = std::sqrt(std::max(d, 1e-30));
    a[j * n + j] = d;
    for (int64_t i = j + 1; i < n; ++i) {
      double s = a[i * n + j];
      for (int64_t k = 0; k < j; ++k)
        s -= a[i * n + k] * a[j * n + k];
      a[i * n + j] = s / d;
    }
  }
  for (int64_t col = 0; col < m; ++col) {
    for (int64_t i = 0; i < n; ++i) { // L y = b
      double s = b[i * m + col];
      for (int64_t k = 0; k < i; ++k)
        s -= a[i * n + k] * b[k * m + col];
      b[i * m + col] = s / a[i * n + i];
    }
    for (int64_t i = n - 1; i >= 0; --i) { // L^T x = y
      double s = b[i * m + col];
      for (int64_t k = i + 1; k < n; ++k)
        s -= a[k * n + i] * b[k * m + col];
      b[i * m + col] = s / a[i * n + i];
    }
  }
}

} // namespace

std::optional<draft_acceptance> measure_draft_acceptance(const std::string& dir, int prompts, int prompt_len,
                                                         int tokens, uint64_t seed, int threads,
                                                         std::optional<kernels::cpu_isa> isa, std::string* error) {
  rank_engine::config ec{int64_t{prompts} * ((prompt_len + tokens + 8) / 128 + 2) + 8, threads, isa};
  ec.speculative = speculative_mode::fixed;
  auto loaded = rank_engine::load(dir, ec);
  if (!loaded.engine || !loaded.engine->drafting()) {
    if (error)
      *error = loaded.engine ? dir + ": the model has no draft head (make it with deepinfer-mkmodel)" : loaded.error;
    return std::nullopt;
  }
  auto& e = *loaded.engine;
  std::mt19937_64 rng(seed);
  std::vector<verify_request> reqs;
  for (int i = 0; i < prompts; ++i) {
    prefill_request req;
    req.seq = sequence_id{static_cast<uint64_t>(i + 1)};
    req.tokens = random_prompt(prompt_len, rng, e.model().vocab_size);
    req.sampling.max_tokens = tokens + 1;
    if (e.prefill(req).status == engine_status::ok)
      reqs.push_back({req.seq, max_draft_positions});
  }
  draft_acceptance a;
  std::array<int64_t, max_draft_positions> reached{}, took{};
  int64_t emitted = 0;
  while (!reqs.empty()) {
    auto outs = e.verify_step(reqs);
    std::vector<verify_request> next;
    for (std::size_t i = 0; i < outs.size(); ++i) {
      const auto& o = outs[i];
      if (o.status != engine_status::ok)
        continue;
      // Only full 5-draft steps count, so every position is measured on the same footing.
      if (o.drafted == max_draft_positions) {
        ++a.steps;
        emitted += static_cast<int64_t>(o.tokens.size());
        for (int j = 0; j < max_draft_positions && j <= o.accepted; ++j) {
          ++reached[static_cast<std::size_t>(j)];
          if (j < o.accepted)
            ++took[static_cast<std::size_t>(j)];
        }
      }
      if (!o.finished)
        next.push_back(reqs[i]);
      else
        e.free(o.seq);
    }
    reqs = std::move(next);
  }
  for (int j = 0; j < max_draft_positions; ++j) {
    const auto js = static_cast<std::size_t>(j);
    a.conditional[js] = reached[js] ? static_cast<double>(took[js]) / static_cast<double>(reached[js]) : 0.0;
    a.cumulative[js] = a.steps ? static_cast<double>(took[js]) / static_cast<double>(a.steps) : 0.0;
  }
  a.mean_tokens_per_step = a.steps ? static_cast<double>(emitted) / static_cast<double>(a.steps) : 0.0;
  return a;
}

distill_result distill_draft(const distill_config& cfg) {
  distill_result res;
  auto before = measure_draft_acceptance(cfg.model_dir, cfg.eval_prompts, cfg.prompt_len, cfg.eval_tokens,
                                         cfg.seed + 7919, cfg.threads, cfg.isa, &res.error);
  if (!before)
    return res;
  res.before = *before;
  // Two sets of rollouts: the projections, vocabulary and bias directions are fitted on the
  // first; the bias strength, the repeat offsets and the confidence are chosen on the second,
  // which the first fits have not seen. Chosen on the first, the bias strength rewarded the
  // transitions it had memorised (first draft 93 % accepted there, 52 % on new prompts) and the
  // confidence predicted 1.7x the acceptance the planner then got. The second set is greedy, so
  // the confidence predicts greedy acceptance: a sampled request accepts less than it says, and
  // the planner verifies more of its drafts than pay.
  std::vector<rollout> rs, held;
  model_config c;
  std::vector<float> lm_head, final_norm;
  {
    rank_engine::config ec{int64_t{cfg.prompts} * ((cfg.prompt_len + cfg.tokens + 8) / 128 + 2) + 8, cfg.threads,
                           cfg.isa};
    auto loaded = rank_engine::load(cfg.model_dir, ec);
    if (!loaded.engine) {
      res.error = loaded.error;
      return res;
    }
    rs = collect(*loaded.engine, cfg, cfg.seed, cfg.prompts, true);
    held = collect(*loaded.engine, cfg, cfg.seed + 104729, cfg.prompts, false);
    c = loaded.engine->model();
  }
  auto loaded_w = model_weights::load(cfg.model_dir);
  if (!loaded_w.weights) {
    res.error = loaded_w.error;
    return res;
  }
  const auto& w = *loaded_w.weights;
  const int64_t h = c.hidden, p = c.draft_positions, vd = c.draft_vocab, r = c.draft_rank;
  // 1. The draft vocabulary: the rollouts' most frequent ids (ties to the lower id), ascending.
  std::vector<int64_t> freq(static_cast<std::size_t>(c.vocab_size), 0);
  for (auto& ro : rs)
    for (auto t : ro.out)
      ++freq[static_cast<std::size_t>(t)];
  std::vector<int32_t> ids(static_cast<std::size_t>(c.vocab_size));
  std::iota(ids.begin(), ids.end(), 0);
  std::stable_sort(ids.begin(), ids.end(), [&](int32_t a, int32_t b) { return freq[static_cast<std::size_t>(a)] > freq[static_cast<std::size_t>(b)]; });
  ids.resize(static_cast<std::size_t>(vd));
  std::sort(ids.begin(), ids.end());
  std::vector<int32_t> slot_of(static_cast<std::size_t>(c.vocab_size), -1);
  for (int64_t v = 0; v < vd; ++v)
    slot_of[static_cast<std::size_t>(ids[static_cast<std::size_t>(v)])] = static_cast<int32_t>(v);
  draft_tensors t;
  t.values.resize(8);
  auto& proj = t.values[0];
  auto& norm = t.values[1];
  auto& vocab = t.values[2];
  auto& out = t.values[3];
  auto& bias_in = t.values[4];
  auto& bias_out = t.values[5];
  auto& repeat = t.values[6];
  auto& conf = t.values[7];
  norm.assign(w.final_norm, w.final_norm + h);
  for (auto id : ids)
    vocab.push_back(static_cast<float>(id));
  // The output rows are the target's own lm_head rows: z_j is meant to be final_norm(x) of the
  // drafted position, so out * z_j approximates the target's logits there.
  out.resize(static_cast<std::size_t>(vd * h));
  for (int64_t v = 0; v < vd; ++v)
    std::copy(w.lm_head + int64_t{ids[static_cast<std::size_t>(v)]} * h,
              w.lm_head + (int64_t{ids[static_cast<std::size_t>(v)]} + 1) * h, out.begin() + v * h);
  // 2. Projections: least squares of the (unit-rms) state j + 1 rows later on the normed state.
  std::vector<float> xn_all;
  auto xn = [&](const rollout& ro, std::size_t i, float* dst) { rms_norm(ro.x.data() + i * h, h, w.final_norm, c.norm_eps, dst); };
  proj.assign(static_cast<std::size_t>(p * h * h), 0.0f);
  std::vector<float> a_row(static_cast<std::size_t>(h)), b_row(static_cast<std::size_t>(h));
  for (int64_t j = 0; j < p; ++j) {
    std::vector<double> ata(static_cast<std::size_t>(h * h), 0.0), atb(static_cast<std::size_t>(h * h), 0.0);
    for (auto& ro : rs)
      for (std::size_t i = 0; i + 1 + static_cast<std::size_t>(j) < ro.out.size(); ++i) {
        xn(ro, i, a_row.data());
        rms_norm(ro.x.data() + (i + 1 + static_cast<std::size_t>(j)) * h, h, nullptr, c.norm_eps, b_row.data());
        for (int64_t u = 0; u < h; ++u)
          for (int64_t v = 0; v < h; ++v) {
            ata[static_cast<std::size_t>(u * h + v)] += double{a_row[u]} * a_row[v];
            atb[static_cast<std::size_t>(u * h + v)] += double{a_row[u]} * b_row[v];
          }
        if (j == 0)
          ++res.samples;
      }
    solve_spd(ata, h, atb, h, cfg.ridge);
    // proj_j [out x in]: row o, column i = X[i][o].
    for (int64_t o = 0; o < h; ++o)
      for (int64_t i = 0; i < h; ++i)
        proj[static_cast<std::size_t>(j * h * h + o * h + i)] = static_cast<float>(atb[static_cast<std::size_t>(i * h + o)]);
  }
  // 3. The previous-token bias. A least-squares fit of the residual logits spends its rank on
  // the logits' variance, not on which id wins; what a rank-r bias can do instead is pick, for
  // each previous id u, the id v*(u) that most often followed it: bias_out rows are r-dim unit
  // vectors b_v (random: their cross dot products stay well below 1 for thousands of ids at
  // r = 32), bias_in[u] = beta * share(u) * b_v*(u), so the bias peaks at v*(u) with a margin of
  // beta * share * (1 - max cross dot). beta is chosen on the rollouts (first draft accuracy).
  std::vector<std::vector<std::pair<int32_t, int32_t>>> follow(static_cast<std::size_t>(vd)); // (next slot, count)
  for (auto& ro : rs)
    for (std::size_t i = 0; i + 1 < ro.out.size(); ++i) {
      const int32_t u = slot_of[static_cast<std::size_t>(ro.out[i])], v = slot_of[static_cast<std::size_t>(ro.out[i + 1])];
      if (u < 0 || v < 0)
        continue;
      auto& f = follow[static_cast<std::size_t>(u)];
      auto it = std::find_if(f.begin(), f.end(), [&](const auto& e) { return e.first == v; });
      if (it == f.end())
        f.emplace_back(v, 1);
      else
        ++it->second;
    }
  std::vector<int32_t> best_next(static_cast<std::size_t>(vd), -1);
  std::vector<float> share(static_cast<std::size_t>(vd), 0.0f);
  for (int64_t u = 0; u < vd; ++u) {
    const auto& f = follow[static_cast<std::size_t>(u)];
    int64_t total = 0;
    std::pair<int32_t, int32_t> top{-1, 0};
    for (const auto& e : f) {
      total += e.second;
      if (e.second > top.second || (e.second == top.second && e.first < top.first))
        top = e;
    }
    if (total > 0) {
      best_next[static_cast<std::size_t>(u)] = top.first;
      share[static_cast<std::size_t>(u)] = static_cast<float>(top.second) / static_cast<float>(total);
    }
  }
  bias_out.resize(static_cast<std::size_t>(vd * r));
  {
    std::mt19937_64 rng(cfg.seed ^ 0xB1A5);
    std::normal_distribution<float> n01;
    for (int64_t v = 0; v < vd; ++v) {
      double nn = 0.0;
      for (int64_t k = 0; k < r; ++k)
        nn += std::pow(bias_out[static_cast<std::size_t>(v * r + k)] = n01(rng), 2.0);
      for (int64_t k = 0; k < r; ++k)
        bias_out[static_cast<std::size_t>(v * r + k)] /= static_cast<float>(std::sqrt(nn));
    }
  }
  // beta, then each position's repeat offset: the best of a few on (up to) 600 held-out rollout
  // positions per drafted position, scored by how often the draft there is the target's token
  // (the tokens before it forced to the target's).
  float beta = 0.0f;
  repeat.assign(static_cast<std::size_t>(p), 0.0f);
  {
    struct probe {
      std::vector<float> base, biased, z; // base logits, the bias's direction, z_j
      int32_t before, want;
    };
    std::vector<std::vector<probe>> probes(static_cast<std::size_t>(p));
    std::vector<float> pr(static_cast<std::size_t>(h)), z(static_cast<std::size_t>(h));
    for (int64_t j = 0; j < p; ++j) {
      auto& pj = probes[static_cast<std::size_t>(j)];
      for (auto& ro : held)
        for (std::size_t i = static_cast<std::size_t>(j) % 3; i + 1 + static_cast<std::size_t>(j) < ro.out.size() && pj.size() < 600;
             i += 3) {
          xn(ro, i, a_row.data());
          const float* pm = proj.data() + j * h * h;
          for (int64_t o = 0; o < h; ++o) {
            float sacc = 0.0f;
            for (int64_t k = 0; k < h; ++k)
              sacc += pm[o * h + k] * a_row[k];
            pr[o] = sacc;
          }
          rms_norm(pr.data(), h, norm.data(), c.norm_eps, z.data());
          const int32_t before = ro.out[i + static_cast<std::size_t>(j)];
          probe pb{std::vector<float>(static_cast<std::size_t>(vd)), std::vector<float>(static_cast<std::size_t>(vd), 0.0f),
                   z, before, ro.out[i + 1 + static_cast<std::size_t>(j)]};
          for (int64_t v = 0; v < vd; ++v) {
            float sacc = 0.0f;
            for (int64_t k = 0; k < h; ++k)
              sacc += out[static_cast<std::size_t>(v * h + k)] * z[k];
            pb.base[static_cast<std::size_t>(v)] = sacc;
          }
          // The bias of `before` is beta * share(u) * (b_v . b_next(u)): its direction here.
          const int32_t u = slot_of[static_cast<std::size_t>(before)];
          if (u >= 0 && best_next[static_cast<std::size_t>(u)] >= 0) {
            const float* bu = bias_out.data() + int64_t{best_next[static_cast<std::size_t>(u)]} * r;
            for (int64_t v = 0; v < vd; ++v) {
              float d = 0.0f;
              for (int64_t k = 0; k < r; ++k)
                d += bias_out[static_cast<std::size_t>(v * r + k)] * bu[k];
              pb.biased[static_cast<std::size_t>(v)] = share[static_cast<std::size_t>(u)] * d;
            }
          }
          pj.push_back(std::move(pb));
        }
    }
    std::vector<float> lg(static_cast<std::size_t>(vd));
    auto hits = [&](int64_t j, float b, float rp) {
      int64_t n = 0;
      for (const auto& pb : probes[static_cast<std::size_t>(j)]) {
        for (int64_t v = 0; v < vd; ++v)
          lg[static_cast<std::size_t>(v)] = pb.base[static_cast<std::size_t>(v)] + b * pb.biased[static_cast<std::size_t>(v)];
        n += choose_draft(lg.data(), vocab.data(), vd, w.lm_head, c.vocab_size, pb.z.data(), h, pb.before, rp, false)
               .token == pb.want;
      }
      return n;
    };
    auto best_of = [](std::initializer_list<float> grid, auto&& score) {
      float arg = 0.0f;
      int64_t top = -1;
      for (float x : grid)
        if (const auto n = score(x); n > top) {
          top = n;
          arg = x;
        }
      return arg;
    };
    beta = best_of({0.0f, 10.0f, 25.0f, 50.0f, 100.0f, 200.0f, 400.0f}, [&](float b) { return hits(0, b, 0.0f); });
    for (int64_t j = 0; j < p; ++j)
      repeat[static_cast<std::size_t>(j)] = best_of({0.0f, -4.0f, -1.0f, 0.5f, 1.0f, 2.0f, 4.0f, 8.0f, 16.0f, 64.0f},
                                                    [&](float rp) { return hits(j, beta, rp); });
  }
  bias_in.assign(static_cast<std::size_t>(int64_t{c.vocab_size} * r), 0.0f);
  for (int64_t u = 0; u < vd; ++u) {
    const int32_t v = best_next[static_cast<std::size_t>(u)];
    if (v < 0)
      continue;
    float* dst = bias_in.data() + int64_t{ids[static_cast<std::size_t>(u)]} * r;
    for (int64_t k = 0; k < r; ++k)
      dst[k] = beta * share[static_cast<std::size_t>(u)] * bias_out[static_cast<std::size_t>(int64_t{v} * r + k)];
  }
  conf.assign(static_cast<std::size_t>(p * (h + 3)), 0.0f);
  if (auto err = write_draft_file(c, t, cfg.model_dir); !err.empty()) {
    res.error = err;
    return res;
  }
  // 4. The confidence: logistic regression, per position, of "draft j equals the target's
  // token" over the features [z_j, top probability, repeated, 1], on the samples whose earlier
  // drafts all matched (the acceptance it predicts is conditional on them), at the positions a
  // speculating rank drafts from: each step starts after the last one's accepted drafts and its
  // own token. Every position of a rollout would overweight the middle of a run of repeats;
  // steps start more often just after a rejection, where the acceptance is lower (0.68 against
  // 0.92 on the tiny model), and a fit on every position predicted 1.4x the acceptance the
  // planner then got.
  {
    auto reread = model_weights::load(cfg.model_dir);
    if (!reread.weights) {
      res.error = reread.error;
      return res;
    }
    cpu_backend be(cpu_backend::config{cfg.threads, cfg.isa});
    draft_head head(*reread.weights, be);
    const int64_t f = h + 3;
    std::vector<std::vector<float>> feats(static_cast<std::size_t>(p));
    std::vector<std::vector<float>> labels(static_cast<std::size_t>(p));
    std::vector<float> z(static_cast<std::size_t>(p * h)), lg(static_cast<std::size_t>(p * vd));
    int32_t prev_of[max_draft_positions];
    draft_choice picks[max_draft_positions];
    for (auto& ro : held)
      for (std::size_t i = 0; i + static_cast<std::size_t>(p) < ro.out.size();) {
        for (int64_t j = 0; j < p; ++j)
          prev_of[j] = ro.out[i + static_cast<std::size_t>(j)];
        head.features(ro.x.data() + i * h, prev_of, z.data(), lg.data(), picks);
        for (int64_t j = 0; j < p; ++j) {
          auto& fj = feats[static_cast<std::size_t>(j)];
          fj.insert(fj.end(), z.begin() + j * h, z.begin() + (j + 1) * h);
          fj.push_back(picks[j].top);
          fj.push_back(picks[j].repeated ? 1.0f : 0.0f);
          fj.push_back(1.0f);
          const bool hit = picks[j].token == ro.out[i + 1 + static_cast<std::size_t>(j)];
          labels[static_cast<std::size_t>(j)].push_back(hit ? 1.0f : 0.0f);
          if (!hit)
            break;
          ++i;
        }
        ++i; // the target's own token
      }
    for (int64_t j = 0; j < p; ++j) {
      const auto& fj = feats[static_cast<std::size_t>(j)];
      const auto& yj = labels[static_cast<std::size_t>(j)];
      const auto n = static_cast<int64_t>(yj.size());
      float* wj = conf.data() + j * f;
      if (n == 0) {
        wj[h + 2] = -4.0f; // never reached: predicted rejected
        continue;
      }
      // Full-batch gradient descent with a small L2 (a few hundred epochs: n x 130 each).
      std::vector<double> wd(static_cast<std::size_t>(f), 0.0), g(static_cast<std::size_t>(f));
      const double rate = 0.5, l2 = 1e-4;
      for (int epoch = 0; epoch < 300; ++epoch) {
        std::fill(g.begin(), g.end(), 0.0);
        for (int64_t s = 0; s < n; ++s) {
          const float* xs = fj.data() + s * f;
          double a = 0.0;
          for (int64_t k = 0; k < f; ++k)
            a += wd[static_cast<std::size_t>(k)] * xs[k];
          const double err = 1.0 / (1.0 + std::exp(-a)) - yj[static_cast<std::size_t>(s)];
          for (int64_t k = 0; k < f; ++k)
            g[static_cast<std::size_t>(k)] += err * xs[k];
        }
        for (int64_t k = 0; k < f; ++k)
          wd[static_cast<std::size_t>(k)] -= rate * (g[static_cast<std::size_t>(k)] / static_cast<double>(n) + l2 * wd[static_cast<std::size_t>(k)]);
      }
      for (int64_t k = 0; k < f; ++k)
        wj[k] = static_cast<float>(wd[static_cast<std::size_t>(k)]);
    }
  }
  if (auto err = write_draft_file(c, t, cfg.model_dir); !err.empty()) {
    res.error = err;
    return res;
  }
  auto after = measure_draft_acceptance(cfg.model_dir, cfg.eval_prompts, cfg.prompt_len, cfg.eval_tokens,
                                        cfg.seed + 7919, cfg.threads, cfg.isa, &res.error);
  if (!after)
    return res;
  res.after = *after;
  return res;
}

} // namespace deepinfer::engine
