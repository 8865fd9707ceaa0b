#pragma once

#include <cstdint>
#include <string>

#include "balancers/vision_balancer.hpp"

namespace deepinfer::balancers::sim {

/// The two policies compared (the live router takes the same enum, `[vision] balancer`).
using deepinfer::balancers::vision_policy;

/// A mixed image load on vision-encoder cards, in virtual time (issue 21): Poisson arrivals, a
/// share of large images among many small ones, each card encoding FIFO with a cost linear in
/// patches; the same seed gives the same arrivals and sizes for every policy.
struct vision_sim_config {
  int machines = 2;
  int cards_per_machine = 4;
  int patch = 16;
  /// Images per second (all machines).
  double rate = 450.0;
  /// Share of large images; their side and the small ones' (square, pixels).
  double large_share = 0.1;
  int large_side = 1024;
  int small_side = 256;
  /// Encode time of one image on a card: fixed + per patch + per patch squared (seconds; the
  /// encoder's attention over all patches is quadratic).
  double fixed_s = 0.002;
  double per_patch_s = 20e-6;
  double per_patch2_s = 0;
  int64_t images = 200'000;
  uint64_t seed = 1;
};

/// What one run measured: encoder queue time (arrival to encode start) over every image, and the
/// cards' busy share.
struct vision_sim_result {
  vision_policy policy = vision_policy::patches;
  int64_t images = 0;
  double queue_p50_s = 0, queue_p99_s = 0, queue_mean_s = 0;
  double utilization = 0;
};

/// Runs the load of `cfg` under `policy`.
vision_sim_result run_vision_sim(const vision_sim_config& cfg, vision_policy policy);

} // namespace deepinfer::balancers::sim
