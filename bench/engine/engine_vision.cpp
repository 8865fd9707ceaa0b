// bench_engine_vision MODEL_DIR [--sides 256,512,1024] [--repeat 3] [--threads 1]
// [--cpu-isa NAME] [--cpu-time 1] [--digest 1]
// The vision encoder's time per image (issue 21): square images of each side, encoded `repeat`
// times on one engine; prints the patches, the median and the fastest encode, and (--digest 1)
// an FNV-1a digest of the embeddings' bits, so two builds or ISAs can be compared for equality.
// Run two builds' binaries alternately in one script for a side-by-side figure.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "engine/rank_engine.hpp"
#include "engine/testing/random_pixels.hpp"

#include "bench_clock.hpp"
#include "bench_inputs.hpp"

using namespace deepinfer::engine;
using deepinfer::bench::clock_now;
using deepinfer::bench::seconds_since;

namespace {

uint64_t digest(const std::vector<float>& v) {
  uint64_t h = 1469598103934665603ull;
  for (float f : v) {
    uint32_t b = 0;
    std::memcpy(&b, &f, sizeof b);
    for (int i = 0; i < 4; ++i) {
      h ^= (b >> (8 * i)) & 0xff;
      h *= 1099511628211ull;
    }
  }
  return h;
}

} // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: bench_engine_vision MODEL_DIR [--sides 256,512,1024] [--repeat 3] "
                         "[--threads 1] [--cpu-isa NAME] [--cpu-time 1] [--digest 1]\n");
    return 2;
  }
  const std::string dir = argv[1];
  std::vector<int64_t> sides{256, 512, 1024};
  int repeat = 3, threads = 1;
  bool print_digest = false;
  std::optional<kernels::cpu_isa> isa;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "--sides")
      sides = deepinfer::bench::parse_list(v);
    else if (a == "--repeat")
      repeat = std::max(1, std::stoi(v));
    else if (a == "--threads")
      threads = std::stoi(v);
    else if (a == "--digest")
      print_digest = v != "0";
    else if (a == "--cpu-time")
      deepinfer::bench::use_cpu_time = v != "0";
    else if (a == "--cpu-isa") {
      const auto c = kernels::choose_cpu_isa(v);
      if (!c.isa) {
        std::fprintf(stderr, "--cpu-isa: %s\n", c.error.c_str());
        return 2;
      }
      isa = c.isa;
    } else {
      std::fprintf(stderr, "unknown option %s\n", a.c_str());
      return 2;
    }
  }
  rank_engine::config cfg;
  cfg.kv_blocks = 8;
  cfg.threads = threads;
  cfg.isa = isa;
  auto engine = deepinfer::bench::load_or_exit(dir, cfg);
  auto& e = *engine;
  if (!e.has_vision()) {
    std::fprintf(stderr, "%s: the model has no vision encoder\n", dir.c_str());
    return 1;
  }
  for (int64_t s : sides) {
    const auto side = static_cast<int32_t>(s);
    const auto px = deepinfer::engine::testing::random_pixels(side, side, static_cast<uint32_t>(side));
    std::vector<double> ms;
    std::vector<float> out;
    for (int r = 0; r < repeat; ++r) {
      const double t0 = clock_now();
      out = e.encode_image({side, side, px});
      ms.push_back(seconds_since(t0) * 1e3);
    }
    std::sort(ms.begin(), ms.end());
    std::printf("side=%d patches=%lld encode median %.1f ms, fastest %.1f ms", side,
                static_cast<long long>(e.vision()->patches_for(side, side)), ms[ms.size() / 2], ms.front());
    if (print_digest)
      std::printf(", digest %016llx", static_cast<unsigned long long>(digest(out)));
    std::printf("\n");
  }
  return 0;
}
