// bench_engine_ep MODEL_DIR [--eps 1,2,4] [--cores 2] [--batch 32] [--prompt 64] [--steps 48] [--repeat 3]
//   [--lb-ep 4] [--lb-batch 64] [--lb-steps 200] [--lb-window 20] [--lb-interval 20] [--cpu-isa NAME]
// Expert parallelism (engine/ep/) on the same cores, side by side in one run:
//  1. decode: `--batch` sequences of `--prompt` random tokens spread evenly over EP ranks (each
//     rank a thread; the ranks share `--cores` backend threads: EP1 one rank with all of them,
//     EP >= 2 one thread per rank), `--steps` lockstep decode steps: tokens/s of the group, the
//     exchange time per step (mean over ranks and the least of any rank, which waited least),
//     and whether every EP sampled the same tokens; the fastest of `--repeat` rounds (each round
//     runs every EP once, so they meet a shared machine's load of the same moment);
//  2. resident weight memory per rank: the rank's routed-expert slot buffers and their packed
//     copies, and the rest of its prepared (packed) weights, against one engine running every
//     expert;
//  3. moe_lb of a decode instance (EP `--lb-ep`, 1 redundant slot per rank) under the tiny
//     model's real router on `--lb-batch` sequences of random prompts, re-placement off vs on
//     (every `--lb-interval` steps from the last `--lb-window`): moe_lb over the window, mean
//     over the windows after the first re-placement.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "engine/ep/ep_group.hpp"
#include "engine/kernels/isa.hpp"
#include "engine/rank_engine.hpp"
#include "engine/testing/ep_lockstep.hpp"

#include "bench_inputs.hpp"

using namespace deepinfer::engine;
using deepinfer::bench::parse_list;
using deepinfer::bench::random_prompt;
using deepinfer::engine::testing::run_lockstep;

namespace {

struct options {
  std::string model;
  std::vector<int64_t> eps{1, 2, 4};
  int cores = 2, batch = 32, prompt = 64, steps = 48, repeat = 3;
  int lb_ep = 4, lb_batch = 64, lb_steps = 200, lb_window = 20, lb_interval = 20;
  std::optional<kernels::cpu_isa> isa;
};

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::unique_ptr<rank_engine> load(const options& o, int threads) {
  auto r = rank_engine::load(o.model, rank_engine::config{64, threads, o.isa});
  if (!r.engine) {
    std::fprintf(stderr, "%s\n", r.error.c_str());
    std::exit(1);
  }
  return std::move(r.engine);
}

/// Sequences of each rank of a group: `batch` prompts round robin over `ranks`.
struct rank_batches {
  std::vector<std::vector<sequence_id>> seqs;
  std::vector<std::vector<int>> requests;
};

/// Prefills `batch` prompts spread over the group's ranks (one lockstep step each), then runs
/// `steps` decode steps; returns the stats and (per request) the sampled tokens.
struct decode_result {
  double seconds = 0;
  std::vector<std::vector<ep_step_stats>> stats;
  std::vector<std::vector<int32_t>> tokens;
};

decode_result run_decode(ep_group& g, std::vector<rank_engine*> engines, int batch, int prompt, int steps,
                         uint64_t seed) {
  const int ep = g.ranks();
  rank_batches b;
  b.seqs.resize(static_cast<std::size_t>(ep));
  b.requests.resize(static_cast<std::size_t>(ep));
  for (int i = 0; i < batch; ++i)
    b.requests[static_cast<std::size_t>(i % ep)].push_back(i);
  decode_result out;
  out.tokens.resize(static_cast<std::size_t>(batch));
  std::size_t most = 0;
  for (auto& r : b.requests)
    most = std::max(most, r.size());
  static uint64_t next = 1;
  run_lockstep(g, static_cast<int>(most), [&](int r, int s) {
    const auto& mine = b.requests[static_cast<std::size_t>(r)];
    if (static_cast<std::size_t>(s) >= mine.size())
      return;
    prefill_request pr;
    pr.seq = sequence_id{__atomic_fetch_add(&next, 1, __ATOMIC_RELAXED)};
    pr.tokens = random_prompt(prompt, seed + static_cast<uint64_t>(mine[static_cast<std::size_t>(s)]));
    pr.sampling.max_tokens = 1 << 20;
    auto p = engines[static_cast<std::size_t>(r)]->prefill(pr);
    b.seqs[static_cast<std::size_t>(r)].push_back(pr.seq);
    out.tokens[static_cast<std::size_t>(mine[static_cast<std::size_t>(s)])].push_back(p.first.id);
  });
  const double t0 = now();
  out.stats = run_lockstep(g, steps, [&](int r, int) {
    auto outs = engines[static_cast<std::size_t>(r)]->decode_step(b.seqs[static_cast<std::size_t>(r)]);
    for (std::size_t i = 0; i < outs.size(); ++i)
      out.tokens[static_cast<std::size_t>(b.requests[static_cast<std::size_t>(r)][i])].push_back(outs[i].token.id);
  });
  out.seconds = now() - t0;
  for (int r = 0; r < ep; ++r)
    for (auto s : b.seqs[static_cast<std::size_t>(r)])
      engines[static_cast<std::size_t>(r)]->free(s);
  return out;
}

/// The same decode on one engine without a group (every expert local), for reference.
decode_result run_plain(rank_engine& e, int batch, int prompt, int steps, uint64_t seed) {
  decode_result out;
  out.tokens.resize(static_cast<std::size_t>(batch));
  std::vector<sequence_id> seqs;
  for (int i = 0; i < batch; ++i) {
    prefill_request pr;
    pr.seq = sequence_id{static_cast<uint64_t>(900000 + i)};
    pr.tokens = random_prompt(prompt, seed + static_cast<uint64_t>(i));
    pr.sampling.max_tokens = 1 << 20;
    out.tokens[static_cast<std::size_t>(i)].push_back(e.prefill(pr).first.id);
    seqs.push_back(pr.seq);
  }
  const double t0 = now();
  for (int s = 0; s < steps; ++s) {
    auto outs = e.decode_step(seqs);
    for (std::size_t i = 0; i < outs.size(); ++i)
      out.tokens[i].push_back(outs[i].token.id);
  }
  out.seconds = now() - t0;
  for (auto s : seqs)
    e.free(s);
  return out;
}

/// The exchange alone: `ranks` threads run a decode step's rounds (one per MoE layer, dispatch
/// and combine, each rank sending `rows` rows x top routes spread evenly) with no compute;
/// seconds per step, best of 3 runs of `steps` steps.
double exchange_only(int ranks, int layers, int rows, int top, int hidden, int steps) {
  in_process_ep_domain d(ranks);
  double best = 1e30;
  for (int rep = 0; rep < 3; ++rep) {
    std::vector<std::thread> threads;
    std::vector<double> took(static_cast<std::size_t>(ranks));
    for (int r = 0; r < ranks; ++r)
      threads.emplace_back([&, r] {
        std::vector<ep_buffer> send(static_cast<std::size_t>(ranks)), recv;
        const auto per = static_cast<std::size_t>(rows * top / ranks + 1);
        for (auto& b : send) {
          b.header.assign(3 + per, 0);
          b.rows.assign(per * static_cast<std::size_t>(hidden), 1.0f);
        }
        auto& t = d.transport(r);
        (void)t.barrier();
        const double t0 = now();
        for (int s = 0; s < steps; ++s)
          for (int l = 0; l < 2 * layers + 2; ++l) // + the round that ends the step, the counts
            (void)t.all_to_all(send, recv);
        took[static_cast<std::size_t>(r)] = now() - t0;
      });
    for (auto& t : threads)
      t.join();
    best = std::min(best, *std::max_element(took.begin(), took.end()) / steps);
  }
  return best;
}

double mb(std::size_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0); }

} // namespace

int main(int argc, char** argv) {
  options o;
  if (argc < 2) {
    std::fprintf(stderr, "usage: bench_engine_ep MODEL_DIR [options] (see the source's header)\n");
    return 2;
  }
  o.model = argv[1];
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--eps") o.eps = parse_list(v);
    else if (k == "--cores") o.cores = std::stoi(v);
    else if (k == "--batch") o.batch = std::stoi(v);
    else if (k == "--prompt") o.prompt = std::stoi(v);
    else if (k == "--steps") o.steps = std::stoi(v);
    else if (k == "--repeat") o.repeat = std::stoi(v);
    else if (k == "--lb-ep") o.lb_ep = std::stoi(v);
    else if (k == "--lb-batch") o.lb_batch = std::stoi(v);
    else if (k == "--lb-steps") o.lb_steps = std::stoi(v);
    else if (k == "--lb-window") o.lb_window = std::stoi(v);
    else if (k == "--lb-interval") o.lb_interval = std::stoi(v);
    else if (k == "--cpu-isa") {
      auto c = kernels::choose_cpu_isa(v);
      if (!c.isa) {
        std::fprintf(stderr, "%s\n", c.error.c_str());
        return 2;
      }
      o.isa = c.isa;
    } else {
      std::fprintf(stderr, "unknown option %s\n", k.c_str());
      return 2;
    }
  }
  int most = 1;
  for (auto e : o.eps)
    most = std::max(most, static_cast<int>(e));
  most = std::max(most, o.lb_ep);
  // One engine with every core for EP1 and one engine per rank with one core each otherwise.
  auto wide = load(o, o.cores);
  std::vector<std::unique_ptr<rank_engine>> narrow;
  for (int r = 0; r < most; ++r)
    narrow.push_back(load(o, 1));
  const auto& mc = wide->model();
  std::printf("model %s: %d routed experts (top %d) x %d MoE layers, hidden %d, expert ffn %d; %s kernels\n",
              mc.name.c_str(), mc.routed_experts, mc.experts_per_token, mc.encoder_layers + mc.decoder_layers,
              mc.hidden, mc.expert_ffn, wide->compute().name().c_str());

  // 1 + 2. decode at each EP on the same cores, and each rank's weight memory
  std::printf("\n## decode, %d sequences of %d tokens, %d steps, %d cores, fastest of %d rounds\n", o.batch,
              o.prompt, o.steps, o.cores, o.repeat);
  std::printf("| EP | backend threads per rank | tokens/s | step ms | exchange ms/step (mean, least) | of which waiting for the other ranks (mean) | same tokens as no group |\n");
  std::printf("|---|---|---|---|---|---|---|\n");
  // `--repeat` rounds, each the reference (`wide` in no group) then every EP, so each EP meets
  // the machine's load of the same moment; the fastest round of each is reported.
  struct memory_row {
    int ep;
    std::size_t slots, packed_total, routed_packed;
  };
  std::vector<memory_row> memory;
  std::optional<decode_result> plain;
  std::size_t plain_prepared = 0;
  std::vector<std::optional<decode_result>> best(o.eps.size());
  for (int rep = 0; rep < o.repeat; ++rep) {
    auto p = run_plain(*wide, o.batch, o.prompt, o.steps, 1600);
    if (rep == 0)
      plain_prepared = wide->compute().prepared_weight_bytes();
    if (!plain || p.seconds < plain->seconds)
      plain = std::move(p);
    for (std::size_t i = 0; i < o.eps.size(); ++i) {
      const int ep = static_cast<int>(o.eps[i]);
      ep_group::config cfg;
      cfg.ranks = ep;
      cfg.settings = ep_settings::decode();
      cfg.settings.interval = 0;
      ep_group g(mc, cfg);
      std::vector<rank_engine*> engines;
      for (int r = 0; r < ep; ++r) {
        engines.push_back(ep == 1 ? wide.get() : narrow[static_cast<std::size_t>(r)].get());
        engines.back()->join_ep_group(g.rank(r));
      }
      auto res = run_decode(g, engines, o.batch, o.prompt, o.steps, 1600);
      if (rep == 0) {
        const auto slots = g.rank(0).routed_expert_bytes();
        memory.push_back({ep, slots, engines[0]->compute().prepared_weight_bytes(), slots});
      }
      if (!best[i] || res.seconds < best[i]->seconds)
        best[i] = std::move(res);
    }
  }
  std::printf("| no group (every expert local) | %d | %.1f | %.2f | - | - | - |\n", o.cores,
              o.batch * o.steps / plain->seconds, 1e3 * plain->seconds / o.steps);
  for (std::size_t i = 0; i < o.eps.size(); ++i) {
    const int ep = static_cast<int>(o.eps[i]);
    const auto& res = *best[i];
    double ex = 0, ex_min = 0, wait = 0;
    for (const auto& st : res.stats[0]) {
      ex += st.exchange_seconds;
      ex_min += st.min_exchange_seconds;
      wait += st.arrival_wait_seconds;
    }
    const bool same = res.tokens == plain->tokens;
    std::printf("| %d | %d | %.1f | %.2f | %.3f, %.3f | %.3f | %s |\n", ep, ep == 1 ? o.cores : 1,
                o.batch * o.steps / res.seconds, 1e3 * res.seconds / o.steps, 1e3 * ex / o.steps,
                1e3 * ex_min / o.steps, 1e3 * wait / o.steps, same ? "yes" : "NO");
  }
  std::printf("\n## the exchange alone (no compute): a decode step's %d all-to-alls (dispatch + combine per MoE layer, the step's end), %d rows in all\n",
              2 * (mc.encoder_layers + mc.decoder_layers) + 2, o.batch);
  std::printf("| EP | ms per step |\n|---|---|\n");
  for (auto ep : o.eps)
    std::printf("| %lld | %.3f |\n", static_cast<long long>(ep),
                1e3 * exchange_only(static_cast<int>(ep), mc.encoder_layers + mc.decoder_layers,
                                    o.batch / static_cast<int>(ep), mc.experts_per_token, mc.hidden, 200));
  std::printf("\n## resident weight memory per rank (MB)\n");
  std::printf("| EP | slots per rank | routed experts: slot buffers + packed copies | other packed weights (attention, router, shared experts, lm_head) |\n");
  std::printf("|---|---|---|---|\n");
  const std::size_t expert_bytes = static_cast<std::size_t>(3) * mc.expert_ffn * mc.hidden * sizeof(float);
  const std::size_t all_routed = expert_bytes * static_cast<std::size_t>(mc.routed_experts) *
                                 static_cast<std::size_t>(mc.encoder_layers + mc.decoder_layers);
  std::printf("| no group, every expert | %d | %.1f (packed copies; the f32 file mapping holds them too) | %.1f |\n",
              mc.routed_experts, mb(all_routed), mb(plain_prepared - all_routed));
  for (const auto& m : memory)
    std::printf("| %d | %d | %.1f + %.1f = %.1f | %.1f |\n", m.ep,
                expert_placement::slots_per_rank(mc.routed_experts, m.ep, 1), mb(m.slots), mb(m.routed_packed),
                mb(m.slots + m.routed_packed), mb(m.packed_total - m.routed_packed));

  // 3. moe_lb, re-placement off vs on
  std::printf("\n## moe_lb, EP%d decode instance (1 redundant slot per rank), %d sequences, %d steps, window %d\n",
              o.lb_ep, o.lb_batch, o.lb_steps, o.lb_window);
  std::printf("| re-placement | moe_lb mean after step %d | moe_lb at the end | re-placements | slots moved |\n", o.lb_interval);
  std::printf("|---|---|---|---|---|\n");
  for (bool on : {false, true}) {
    ep_group::config cfg;
    cfg.ranks = o.lb_ep;
    cfg.settings = {1, o.lb_window, on ? o.lb_interval : 0};
    ep_group g(mc, cfg);
    std::vector<rank_engine*> engines;
    for (int r = 0; r < o.lb_ep; ++r) {
      engines.push_back(narrow[static_cast<std::size_t>(r)].get());
      engines.back()->join_ep_group(g.rank(r));
    }
    auto res = run_decode(g, engines, o.lb_batch, o.prompt, o.lb_steps, 7100);
    double sum = 0;
    int n = 0;
    for (std::size_t s = static_cast<std::size_t>(o.lb_interval); s < res.stats[0].size(); ++s) {
      sum += res.stats[0][s].moe_lb;
      ++n;
    }
    std::printf("| %s | %.4f | %.4f | %lld | %lld |\n", on ? "on" : "off", n ? sum / n : 0.0,
                res.stats[0].back().moe_lb, static_cast<long long>(g.rank(0).replacements()),
                static_cast<long long>(g.rank(0).moved_slots()));
  }
  return 0;
}
