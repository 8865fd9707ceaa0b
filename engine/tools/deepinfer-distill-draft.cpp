// deepinfer-distill-draft --model DIR [--prompts N] [--tokens N] [--threads N] [--cpu-isa NAME]
// Fits the model's draft head (DESIGN.md §5.1) on the target's own greedy and sampled rollouts
// (engine::distill_draft), writes it back to DIR/draft.safetensors and prints the acceptance per
// draft position before and after, measured on held-out prompts.
#include <cstdio>
#include <string>

#include "engine/draft_distill.hpp"
#include "recipe/base/cli.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

using namespace deepinfer::engine;

namespace {

void print(const char* what, const draft_acceptance& a) {
  std::printf("%-6s steps %6lld  tokens/step %.3f  accepted |", what, static_cast<long long>(a.steps),
              a.mean_tokens_per_step);
  for (double x : a.conditional)
    std::printf(" %.3f", x);
  std::printf("  | cumulative");
  for (double x : a.cumulative)
    std::printf(" %.3f", x);
  std::printf("\n");
}

} // namespace

int main(int argc, char** argv) {
  // stdout carries the result; logs go to stderr.
  spdlog::set_default_logger(spdlog::stderr_color_mt("stderr"));
  spdlog::set_level(spdlog::level::warn);
  CLI::App app{"deepinfer-distill-draft: fits a model's draft head on the target's own rollouts and writes it "
               "back to MODEL_DIR/draft.safetensors",
               "deepinfer-distill-draft"};
  distill_config cfg;
  std::string isa_name = "auto";
  app.add_option("--model", cfg.model_dir, "model directory with a draft head (deepinfer-mkmodel writes one)")
    ->required();
  app.add_option("--prompts", cfg.prompts, "rollout prompts (half greedy, half sampled)")->capture_default_str()
    ->check(CLI::Range(2, 4096));
  app.add_option("--prompt-len", cfg.prompt_len, "tokens per random prompt")->capture_default_str()
    ->check(CLI::Range(1, 4096));
  app.add_option("--tokens", cfg.tokens, "decode steps per rollout")->capture_default_str()
    ->check(CLI::Range(8, 4096));
  app.add_option("--eval-prompts", cfg.eval_prompts, "held-out prompts for the acceptance")->capture_default_str()
    ->check(CLI::Range(1, 4096));
  app.add_option("--seed", cfg.seed, "seed of the prompts and samples")->capture_default_str();
  app.add_option("--threads", cfg.threads, "CPU backend threads")->capture_default_str()->check(CLI::Range(1, 256));
  app.add_option("--cpu-isa", isa_name, "kernels: auto, portable, avx2 or avx512")->capture_default_str();
  if (auto rc = deepinfer::parse_command_line(app, argc, argv))
    return *rc;
  const auto isa = kernels::choose_cpu_isa(isa_name);
  if (!isa.isa) {
    std::fprintf(stderr, "deepinfer-distill-draft: --cpu-isa: %s\n", isa.error.c_str());
    return 2;
  }
  cfg.isa = *isa.isa;
  auto r = distill_draft(cfg);
  if (!r.error.empty()) {
    std::fprintf(stderr, "deepinfer-distill-draft: %s\n", r.error.c_str());
    return 1;
  }
  std::printf("distilled %s from %lld rollout positions; acceptance per draft position (greedy, held-out):\n",
              cfg.model_dir.c_str(), static_cast<long long>(r.samples));
  print("before", r.before);
  print("after", r.after);
  return 0;
}
