#include "engine/cost_profile.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include "engine/log.hpp"
#include "engine/model/model_config.hpp"
#include "engine/rank_engine.hpp"

namespace deepinfer::engine {

namespace {

using clock = std::chrono::steady_clock;

double ns_since(clock::time_point t0) {
  return std::chrono::duration<double, std::nano>(clock::now() - t0).count();
}

std::vector<int32_t> random_prompt(int64_t n, int64_t vocab, std::mt19937_64& rng) {
  std::vector<int32_t> out(static_cast<std::size_t>(n));
  for (auto& t : out)
    t = static_cast<int32_t>(rng() % static_cast<uint64_t>(vocab));
  return out;
}

/// Holds an exclusive flock on `path` while it lives (none when the file cannot be opened).
class file_lock {
public:
  explicit file_lock(const std::string& path) : fd_(::open(path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644)) {
    if (fd_ >= 0)
      ::flock(fd_, LOCK_EX);
  }
  ~file_lock() {
    if (fd_ >= 0)
      ::close(fd_); // releases the lock
  }
  file_lock(const file_lock&) = delete;
  file_lock& operator=(const file_lock&) = delete;

private:
  int fd_;
};

/// An engine of the profiled setup, drafting as it serves (the head runs after each step), with a
/// pool for a prompt of `max_context` tokens or for the verify curve's sequences (`measure_verify`:
/// up to one per row, a block each and two while a step crosses one), whichever needs more.
rank_engine::load_result load_for_profile(const std::string& model_dir, const cost_profile::config& cfg,
                                          kernels::cpu_isa isa, int64_t max_context) {
  const int64_t verify_seqs =
    std::max<int64_t>((cfg.max_verify_rows + 1) / 2, cost_profile::max_plain_verify_rows) + 1;
  rank_engine::config ec{std::max(max_context / 128, 2 * verify_seqs) + 8, cfg.threads, isa};
  ec.backend = cfg.backend;
  ec.speculative = speculative_mode::variable;
  return rank_engine::load(model_dir, ec);
}

} // namespace

std::vector<verify_cost_point> cost_profile::measure_verify(rank_engine& e, int64_t max_rows, int64_t max_plain_rows) {
  const int32_t positions = e.model().draft_positions;
  if (!e.drafting() || positions <= 0 || max_rows < 1)
    return {};
  // The steps to measure: (sequences, rows, head proposing), fewest sequences first, then one row
  // each with the head and without it.
  struct shape {
    int64_t seqs, rows;
    bool proposing;
  };
  std::vector<shape> shapes;
  for (int64_t r = 1; r <= max_rows; r = std::max(r + 1, static_cast<int64_t>(std::llround(1.25 * r))))
    shapes.push_back({(r + positions) / (positions + 1), r, true});
  for (int64_t r = 2; r <= std::min(max_plain_rows, max_rows);
       r = std::max(r + 1, static_cast<int64_t>(std::llround(1.25 * r)))) {
    if (r > positions + 1) // fewer rows need only one sequence: measured above
      shapes.push_back({r, r, true});
    shapes.push_back({r, r, false});
  }
  std::mt19937_64 rng(2);
  std::vector<sequence_id> seqs;
  uint64_t next = 1ull << 40; // apart from the ids a caller's own sequences use
  // A live sequence for every request of the step: one a step finished (a stop id sampled) or
  // could not extend is replaced by a new one.
  auto ensure_live = [&](std::size_t n) {
    while (seqs.size() < n) {
      prefill_request req;
      req.seq = sequence_id{next++};
      req.tokens = random_prompt(16, e.model().vocab_size, rng);
      req.sampling.max_tokens = 1 << 30;
      if (auto pr = e.prefill(req); pr.status != engine_status::ok || !pr.done)
        return false;
      seqs.push_back(req.seq);
    }
    return true;
  };
  std::vector<double> best(shapes.size(), 0.0);
  auto step = [&](std::size_t g, bool timed) {
    const auto [n_seqs, rows, proposing] = shapes[g];
    const auto n = static_cast<std::size_t>(n_seqs);
    if (!ensure_live(n))
      return false;
    std::vector<verify_request> reqs(n);
    int64_t drafts = rows - n_seqs;
    for (std::size_t i = 0; i < n; ++i) {
      draft_proposal p;
      p.count = positions;
      for (int32_t j = 0; j < positions; ++j) {
        p.tokens[j] = static_cast<int32_t>(rng() % static_cast<uint64_t>(e.model().vocab_size));
        p.confidence[j] = 0.5f;
      }
      e.set_proposal(seqs[i], p);
      const auto k = static_cast<int32_t>(std::min<int64_t>(drafts, positions));
      reqs[i] = {seqs[i], k};
      drafts -= k;
    }
    e.pause_proposing(!proposing);
    const auto t0 = clock::now();
    auto outs = e.verify_step(reqs);
    const double ns = ns_since(t0);
    e.pause_proposing(false);
    bool whole = true;
    for (const auto& o : outs)
      if (o.status != engine_status::ok || o.finished) {
        e.free(o.seq);
        std::erase(seqs, o.seq);
        whole = false;
      }
    // A step some sequence left early ran fewer rows than asked: not a measurement.
    if (timed && whole)
      best[g] = best[g] > 0.0 ? std::min(best[g], ns) : ns;
    return true;
  };
  bool ok = step(shapes.size() - 1, false); // warm-up: first touch of the pool and the scratch
  for (int pass = 0; pass < 2 && ok; ++pass)
    for (std::size_t i = 0; i < shapes.size() && ok; ++i)
      ok = step(pass == 0 ? i : shapes.size() - 1 - i, true);
  for (const auto& s : seqs)
    e.free(s);
  std::vector<verify_cost_point> out;
  if (!ok)
    return out;
  for (std::size_t g = 0; g < shapes.size(); ++g)
    if (best[g] > 0.0)
      out.push_back({shapes[g].seqs, shapes[g].rows, best[g] * 1e-9, shapes[g].proposing});
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    if (a.rows != b.rows)
      return a.rows < b.rows;
    return a.seqs != b.seqs ? a.seqs < b.seqs : a.proposing < b.proposing;
  });
  return out;
}

cost_profile::result cost_profile::measure(const std::string& model_dir, const config& cfg) {
  result out;
  const auto isa = cfg.isa.value_or(kernels::best_cpu_isa());
  const int64_t max_context = std::max<int64_t>(cfg.max_context, 1024);
  auto loaded = load_for_profile(model_dir, cfg, isa, max_context);
  if (!loaded.engine) {
    out.error = loaded.error;
    return out;
  }
  auto& e = *loaded.engine;
  std::mt19937_64 rng(1);
  uint64_t next = 1;
  auto begin = [&](int64_t length) -> std::optional<sequence_id> {
    prefill_request req;
    req.seq = sequence_id{next++};
    req.tokens = random_prompt(length, e.model().vocab_size, rng);
    if (e.begin_prefill(req).status != engine_status::ok)
      return std::nullopt;
    return req.seq;
  };
  // 1. Warm up (first touch of the weights and the pool): not measured.
  if (auto seq = begin(257)) {
    e.prefill_step(*seq, 257);
    e.free(*seq);
  }
  // 2. Three prompts in chunks of every size; the last token alone runs the finishing pass.
  const std::vector<int64_t> sizes{32, 128, 512, 1024};
  std::size_t turn = 0;
  for (int64_t length : {max_context / 4, max_context / 2, max_context}) {
    auto seq = begin(length + 1);
    if (!seq) {
      out.error = "the profile's prefill was refused";
      return out;
    }
    int64_t c = 0;
    while (c < length) {
      // 32 128 512 1024 1024 512 128 32 ...: each size meets short and long contexts.
      const std::size_t k = turn % (2 * sizes.size());
      const int64_t q = std::min(sizes[k < sizes.size() ? k : 2 * sizes.size() - 1 - k], length - c);
      ++turn;
      const auto t0 = clock::now();
      e.prefill_step(*seq, q);
      out.chunks.push_back({q, c, ns_since(t0)});
      c += q;
    }
    const auto t0 = clock::now();
    e.prefill_step(*seq, 1);
    out.finishes.push_back({c, ns_since(t0)});
    e.free(*seq);
  }
  auto model = deepinfer::balancers::cost_model::fit(out.chunks, out.finishes);
  if (!model) {
    out.error = "the measured steps do not determine the cost model";
    return out;
  }
  cost_model_file::entry fit;
  fit.isa = isa;
  fit.threads = cfg.threads;
  fit.backend = cfg.backend;
  fit.model = *model;
  fit.samples = static_cast<int>(out.chunks.size());
  double err = 0;
  for (const auto& s : out.chunks)
    err += std::fabs(model->predict(s.q, s.c) - s.ns) / s.ns;
  fit.mean_rel_err = err / static_cast<double>(out.chunks.size());
  fit.verify_steps = measure_verify(e, cfg.max_verify_rows);
  out.fit = fit;
  return out;
}

cost_profile::result cost_profile::ensure(const std::string& model_dir, const config& cfg) {
  const auto isa = cfg.isa.value_or(kernels::best_cpu_isa());
  const auto path = model_dir + "/" + cost_model_file::file_name;
  file_lock lock(model_dir + "/.cost_model.lock");
  auto file = cost_model_file::load(path);
  if (auto fit = file.find(isa, cfg.threads, cfg.backend)) {
    result out;
    out.fit = fit;
    if (!fit->verify_steps.empty() || cfg.max_verify_rows < 1)
      return out;
    const auto model = load_config_file(model_dir + "/config.json");
    if (!model.config || model.config->draft_positions <= 0)
      return out;
    // A fit from before the verify curve was kept: only the curve is measured.
    log().info("profiling the verify cost of {} (isa={} threads={} backend={}); once per model and engine setup",
               model_dir, kernels::to_string(isa), cfg.threads, to_string(cfg.backend));
    const auto t0 = clock::now();
    auto loaded = load_for_profile(model_dir, cfg, isa, 0);
    if (!loaded.engine)
      return out; // served without a curve: the planner measures its own steps
    out.fit->verify_steps = measure_verify(*loaded.engine, cfg.max_verify_rows);
    file.put(*out.fit);
    out.warning = file.save(path);
    log().info("measured the verify cost curve in {:.1f} s ({} steps)", ns_since(t0) / 1e9,
               out.fit->verify_steps.size());
    return out;
  }
  log().info("profiling the prefill cost of {} (isa={} threads={} backend={}); once per model and engine setup",
             model_dir, kernels::to_string(isa), cfg.threads, to_string(cfg.backend));
  const auto t0 = clock::now();
  auto out = measure(model_dir, cfg);
  if (!out.fit)
    return out;
  file.put(*out.fit);
  out.warning = file.save(path);
  log().info("fitted the prefill cost model in {:.1f} s ({} chunks, mean error {:.1f} %; {} verify steps){}",
             ns_since(t0) / 1e9, out.fit->samples, 100 * out.fit->mean_rel_err, out.fit->verify_steps.size(),
             out.warning.empty() ? "" : ": " + out.warning);
  return out;
}

} // namespace deepinfer::engine
