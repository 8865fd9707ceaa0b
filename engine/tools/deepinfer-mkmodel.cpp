// deepinfer-mkmodel --config tiny|small|FILE.json --seed N --out DIR [--dtype f32|bf16] [--draft-positions N]
// Writes a seeded random ced_moe model directory (config.json + model.safetensors, and
// draft.safetensors: a random draft head for deepinfer-distill-draft to fit), then fits its
// prefill cost model on this machine (cost_model.json, engine::cost_profile).
#include <cstdio>
#include <string>

#include <unistd.h>

#include "engine/cost_profile.hpp"
#include "engine/model/random_model.hpp"
#include "recipe/base/cli.hpp"

using namespace deepinfer::engine;

int main(int argc, char** argv) {
  std::string config = "tiny", out, dtype;
  uint64_t seed = 0;
  int32_t draft_positions = 5;
  CLI::App app{"deepinfer-mkmodel: writes a seeded random ced_moe model directory (config.json + "
               "model.safetensors).",
               "deepinfer-mkmodel"};
  app.add_option("--config", config, "tiny, small, bench_v4 or a config.json file")->capture_default_str();
  app.add_option("--seed", seed, "seed of the weights: the same seed writes the same bytes")->capture_default_str();
  app.add_option("--out", out, "the model directory to write")->required();
  app.add_option("--dtype", dtype, "weight dtype (default: the config's)")->check(CLI::IsMember({"f32", "bf16"}));
  auto* draft_opt = app.add_option("--draft-positions", draft_positions,
                                   "tokens the draft head drafts per step (0: no draft head; default: the "
                                   "config file's, 5 for the presets)")
                        ->check(CLI::Range(0, 5));
  if (auto rc = deepinfer::parse_command_line(app, argc, argv))
    return *rc;
  model_config c;
  if (auto p = model_config::preset(config)) {
    c = *p;
  } else {
    auto r = load_config_file(config);
    if (!r.config) {
      std::fprintf(stderr, "deepinfer-mkmodel: %s\n", r.error.c_str());
      return 1;
    }
    c = *r.config;
  }
  if (draft_opt->count() > 0 || model_config::preset(config))
    c.draft_positions = draft_positions;
  if (dtype == "bf16")
    c.dtype = weight_dtype::bf16;
  else if (dtype == "f32")
    c.dtype = weight_dtype::f32;
  const bool tty = isatty(fileno(stderr));
  int last = -1;
  auto err = random_model::write(c, seed, out, [&](uint64_t done, uint64_t total) {
    int pct = static_cast<int>(100 * done / (total ? total : 1));
    if (pct == last || (!tty && pct % 10 != 0))
      return;
    last = pct;
    int bars = pct / 2;
    std::fprintf(stderr, "%s[%.*s%*s] %3d%% %.1f/%.1f MiB%s", tty ? "\r" : "", bars,
                 "##################################################", 50 - bars, "", pct,
                 done / 1048576.0, total / 1048576.0, tty ? "" : "\n");
  });
  if (tty)
    std::fprintf(stderr, "\n");
  if (!err.empty()) {
    std::fprintf(stderr, "deepinfer-mkmodel: %s\n", err.c_str());
    return 1;
  }
  std::printf("wrote %s (config %s, seed %llu, %s)\n", out.c_str(), c.name.c_str(),
              static_cast<unsigned long long>(seed), to_string(c.dtype));
  // The prefill cost model, fitted here for the default serving setup (best ISA, one thread per
  // rank); caf-launch fits other setups when it first serves them.
  auto fit = cost_profile::ensure(out, cost_profile::config{});
  if (!fit.fit) {
    std::fprintf(stderr, "deepinfer-mkmodel: no cost model fitted: %s\n", fit.error.c_str());
    return 1;
  }
  if (!fit.warning.empty())
    std::fprintf(stderr, "deepinfer-mkmodel: %s\n", fit.warning.c_str());
  std::printf("fitted %s/%s (isa %s, %d thread, %d chunks, mean error %.1f %%)\n", out.c_str(),
              cost_model_file::file_name, kernels::to_string(fit.fit->isa), fit.fit->threads, fit.fit->samples,
              100 * fit.fit->mean_rel_err);
  return 0;
}
