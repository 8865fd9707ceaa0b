// deepinfer-vision-sim: the vision-encoder balancer of DESIGN §6.3 (the real vision_balancer:
// random machine, then the card with the fewest patches in flight) against round robin on the
// same mixed image load in virtual time (issue 21); prints p50 / p99 encoder queue time of each.
//
//   deepinfer-vision-sim [--machines 2] [--cards 4] [--rate 450] [--large-share 0.1]
//                        [--large 1024] [--small 256] [--images 200000] [--seed 1]
//                        [--fixed-s 0.002] [--per-patch-s 20e-6] [--per-patch2-s 0]
#include <cstdio>

#include "balancers/sim/vision_sim.hpp"
#include "recipe/base/cli.hpp"

namespace sim = deepinfer::balancers::sim;

int main(int argc, char** argv) {
  sim::vision_sim_config cfg;
  CLI::App app{"deepinfer-vision-sim: vision-encoder balancing (patch rule vs round robin) in virtual time.",
               "deepinfer-vision-sim"};
  app.add_option("--machines", cfg.machines, "vision machines")->capture_default_str();
  app.add_option("--cards", cfg.cards_per_machine, "cards per machine")->capture_default_str();
  app.add_option("--rate", cfg.rate, "images per second (all machines)")->capture_default_str();
  app.add_option("--large-share", cfg.large_share, "share of large images")->capture_default_str();
  app.add_option("--large", cfg.large_side, "side of a large image (pixels)")->capture_default_str();
  app.add_option("--small", cfg.small_side, "side of a small image (pixels)")->capture_default_str();
  app.add_option("--fixed-s", cfg.fixed_s, "encode time per image, fixed part (s)")->capture_default_str();
  app.add_option("--per-patch-s", cfg.per_patch_s, "encode time per patch (s)")->capture_default_str();
  app.add_option("--per-patch2-s", cfg.per_patch2_s, "encode time per patch squared (s)")->capture_default_str();
  app.add_option("--images", cfg.images, "images to simulate")->capture_default_str();
  app.add_option("--seed", cfg.seed, "seed of arrivals, sizes and the machine choice")->capture_default_str();
  if (auto rc = deepinfer::parse_command_line(app, argc, argv))
    return *rc;
  std::printf("machines=%d cards=%d rate=%.0f/s large=%.0f%% (%dpx) small=%dpx images=%lld seed=%llu "
              "encode=%g + %g p + %g p^2 s\n",
              cfg.machines, cfg.cards_per_machine, cfg.rate, 100 * cfg.large_share, cfg.large_side,
              cfg.small_side, static_cast<long long>(cfg.images), static_cast<unsigned long long>(cfg.seed),
              cfg.fixed_s, cfg.per_patch_s, cfg.per_patch2_s);
  std::printf("| policy | encoder queue p50 (ms) | p99 (ms) | mean (ms) | card utilization |\n|---|---|---|---|---|\n");
  double p99[2] = {0, 0};
  int i = 0;
  for (auto policy : {sim::vision_policy::patches, sim::vision_policy::round_robin}) {
    auto r = sim::run_vision_sim(cfg, policy);
    std::printf("| %s | %.2f | %.2f | %.2f | %.1f %% |\n", deepinfer::balancers::to_string(policy), 1e3 * r.queue_p50_s,
                1e3 * r.queue_p99_s, 1e3 * r.queue_mean_s, 100 * r.utilization);
    p99[i++] = r.queue_p99_s;
  }
  std::printf("p99 patches / round robin = %.2f\n", p99[1] > 0 ? p99[0] / p99[1] : 0.0);
  return 0;
}
