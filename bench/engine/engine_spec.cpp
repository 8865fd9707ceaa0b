// bench_engine_spec MODEL_DIR [--batches 1,8,64,256] [--tokens 64] [--prompt-len 32] [--threads 1]
//   [--warmup-rounds 1] [--repeats 1] [--verify-curve on|off] [--cpu-time]
// Speculative decoding side by side in one run (issue 18): for each batch size, greedy decode
// tokens/s and mean tokens per request-step with --speculative off, fixed (all 5 drafts) and
// variable (engine::spec_planner), from the same prompts. Every mode must produce the same tokens
// (checked: the bench fails otherwise). Variable prices its drafts on the verify cost curve kept
// with the model (MODEL_DIR/cost_model.json, measured first when absent), as a serving rank
// does; `--verify-curve off`: on the steps it ran only. `--repeats N` runs the three modes N times,
// in an order that rotates, and reports each one's median tokens/s (the machine's noise moves
// single runs 5 %).
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "engine/cost_profile.hpp"
#include "engine/decode_loop.hpp"
#include "engine/rank_engine.hpp"
#include "engine/spec_planner.hpp"

#include "bench_clock.hpp"
#include "bench_inputs.hpp"

using namespace deepinfer::engine;
using namespace deepinfer::bench;

namespace {

struct run_result {
  double tokens_per_s = 0;
  double tokens_per_request_step = 0;
  std::vector<std::vector<int32_t>> outputs;
};

run_result run(const std::string& dir, speculative_mode mode, int64_t batch, int64_t tokens, int64_t prompt_len,
               int threads, int warmup_rounds, const std::vector<verify_cost_point>& verify_curve) {
  rank_engine::config cfg;
  cfg.threads = threads;
  cfg.kv_blocks = batch * ((prompt_len + tokens + 16) / 128 + 2) + 8;
  cfg.speculative = mode;
  auto loaded = rank_engine::load(dir, cfg);
  if (!loaded.engine) {
    std::fprintf(stderr, "bench_engine_spec: %s\n", loaded.error.c_str());
    std::exit(1);
  }
  auto& e = *loaded.engine;
  if (mode != speculative_mode::off && !e.drafting()) {
    std::fprintf(stderr, "bench_engine_spec: %s has no draft head\n", dir.c_str());
    std::exit(1);
  }
  // A serving rank's planner lives across requests: rounds of other prompts first (not timed)
  // leave it with the costs and acceptances it would have in steady state.
  spec_planner planner{mode};
  planner.set_verify_costs(verify_curve);
  run_result r;
  for (int round = warmup_rounds; round >= 0; --round) {
    const bool timed = round == 0;
    const uint64_t seed = timed ? 1000 : 1000 + 100000 * static_cast<uint64_t>(round);
    std::vector<sequence_id> ids;
    std::vector<std::vector<int32_t>> outputs(static_cast<std::size_t>(batch));
    for (int64_t i = 0; i < batch; ++i) {
      prefill_request req;
      req.seq = sequence_id{static_cast<uint64_t>(i + 1)};
      req.tokens = random_prompt(prompt_len, seed + static_cast<uint64_t>(i), e.model().vocab_size);
      req.sampling.max_tokens = static_cast<int32_t>(tokens + 1);
      outputs[static_cast<std::size_t>(i)].push_back(e.prefill(req).first.id);
      ids.push_back(req.seq);
    }
    int64_t emitted = 0, request_steps = 0;
    const double t0 = clock_now();
    std::vector<sequence_id> live = ids;
    while (!live.empty()) {
      std::vector<sequence_id> next;
      if (mode == speculative_mode::off) {
        auto outs = e.decode_step(live);
        for (auto& o : outs) {
          outputs[o.seq.value - 1].push_back(o.token.id);
          ++emitted;
          ++request_steps;
          if (!o.finished)
            next.push_back(o.seq);
        }
      } else {
        // The serving rank's step: plan, verify, and feed the planner its cost and acceptances.
        auto outs = run_decode_step(e, &planner, live);
        for (auto& o : outs) {
          for (auto& t : o.tokens)
            outputs[o.seq.value - 1].push_back(t.id);
          emitted += static_cast<int64_t>(o.tokens.size());
          ++request_steps;
          if (!o.finished)
            next.push_back(o.seq);
        }
      }
      live = std::move(next);
    }
    const double secs = seconds_since(t0);
    for (auto id : ids)
      e.free(id);
    if (timed) {
      r.tokens_per_s = static_cast<double>(emitted) / secs;
      r.tokens_per_request_step = static_cast<double>(emitted) / static_cast<double>(request_steps);
      r.outputs = std::move(outputs);
    }
  }
  return r;
}

} // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: bench_engine_spec MODEL_DIR [--batches 1,8,64,256] [--tokens 64] "
                         "[--prompt-len 32] [--threads 1] [--warmup-rounds 1] [--repeats 1] "
                         "[--verify-curve on|off] [--cpu-time]\n");
    return 2;
  }
  std::string dir = argv[1];
  std::vector<int64_t> batches{1, 8, 64, 256};
  int64_t tokens = 64, prompt_len = 32;
  int threads = 1, warmup_rounds = 1, repeats = 1;
  bool verify_curve_on = true;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&] { return i + 1 < argc ? std::string{argv[++i]} : std::string{}; };
    if (a == "--batches")
      batches = parse_list(value());
    else if (a == "--tokens")
      tokens = std::stoll(value());
    else if (a == "--prompt-len")
      prompt_len = std::stoll(value());
    else if (a == "--threads")
      threads = std::stoi(value());
    else if (a == "--warmup-rounds")
      warmup_rounds = std::stoi(value());
    else if (a == "--repeats")
      repeats = std::max(1, std::stoi(value()));
    else if (a == "--verify-curve")
      verify_curve_on = value() != "off";
    else if (a == "--cpu-time")
      use_cpu_time = true;
  }
  std::printf("| batch | off tok/s | fixed-5 tok/s | variable tok/s | tokens/step off / fixed / variable | "
              "variable vs fixed | fixed vs off | variable vs off |\n|---|---|---|---|---|---|---|---|\n");
  std::vector<verify_cost_point> verify_curve;
  if (verify_curve_on) {
    cost_profile::config setup;
    setup.threads = threads;
    auto fit = cost_profile::ensure(dir, setup);
    if (fit.fit)
      verify_curve = fit.fit->verify_steps;
    std::fprintf(stderr, "bench_engine_spec: verify cost curve of %zu steps%s\n", verify_curve.size(),
                 verify_curve.empty() ? " (none: the planner prices on its own steps)" : "");
  }
  for (auto b : batches) {
    std::vector<run_result> offs, fixeds, vars;
    for (int k = 0; k < repeats; ++k) {
      // The modes in turn, each repeat starting one further (a mode that always ran last or first
      // would carry whatever the order does to the machine).
      for (int i = 0; i < 3; ++i) {
        switch ((k + i) % 3) {
        case 0:
          offs.push_back(run(dir, speculative_mode::off, b, tokens, prompt_len, threads, warmup_rounds, verify_curve));
          break;
        case 1:
          fixeds.push_back(run(dir, speculative_mode::fixed, b, tokens, prompt_len, threads, warmup_rounds, verify_curve));
          break;
        default:
          vars.push_back(run(dir, speculative_mode::variable, b, tokens, prompt_len, threads, warmup_rounds, verify_curve));
        }
      }
      if (fixeds.back().outputs != offs.back().outputs || vars.back().outputs != offs.back().outputs) {
        std::fprintf(stderr, "bench_engine_spec: batch %lld: speculative output differs from plain decode\n",
                     static_cast<long long>(b));
        return 1;
      }
    }
    auto median = [](std::vector<run_result>& rs) {
      std::sort(rs.begin(), rs.end(), [](const auto& x, const auto& y) { return x.tokens_per_s < y.tokens_per_s; });
      return rs[rs.size() / 2];
    };
    const auto off = median(offs), fixed = median(fixeds), var = median(vars);
    std::printf("| %lld | %.0f | %.0f | %.0f | %.2f / %.2f / %.2f | %+.1f %% | %+.1f %% | %+.1f %% |\n",
                static_cast<long long>(b), off.tokens_per_s, fixed.tokens_per_s, var.tokens_per_s,
                off.tokens_per_request_step, fixed.tokens_per_request_step, var.tokens_per_request_step,
                100.0 * (var.tokens_per_s / fixed.tokens_per_s - 1.0), 100.0 * (fixed.tokens_per_s / off.tokens_per_s - 1.0),
                100.0 * (var.tokens_per_s / off.tokens_per_s - 1.0));
    std::fflush(stdout);
  }
  return 0;
}
