#include "engine/cost_profile.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include "engine/log.hpp"
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

} // namespace

cost_profile::result cost_profile::measure(const std::string& model_dir, const config& cfg) {
  result out;
  const auto isa = cfg.isa.value_or(kernels::best_cpu_isa());
  const int64_t max_context = std::max<int64_t>(cfg.max_context, 1024);
  rank_engine::config ec{max_context / 128 + 8, cfg.threads, isa};
  ec.backend = cfg.backend;
  auto loaded = rank_engine::load(model_dir, ec);
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
  log().info("fitted the prefill cost model in {:.1f} s ({} chunks, mean error {:.1f} %){}", ns_since(t0) / 1e9,
             out.fit->samples, 100 * out.fit->mean_rel_err, out.warning.empty() ? "" : ": " + out.warning);
  return out;
}

} // namespace deepinfer::engine
