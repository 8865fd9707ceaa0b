// CHECK latency: longest_prefix over a 600-block chain with a warm index of realistic size, and
// the cost of a miss revalidated against a real store root (one stat).
//
//   bench_kv_check_latency [--background N] [--iterations N] [--dir DIR]
#include "kv/block_store.hpp"
#include "kv/check_index.hpp"
#include "kv/hash_chain.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <numeric>
#include <string>
#include <vector>

using namespace deepinfer::kv;

namespace {

struct percentiles {
  double p50, p99, p999, max;
};

template <class Fn>
percentiles measure(std::size_t iterations, Fn&& fn) {
  std::vector<double> us(iterations);
  for (std::size_t i = 0; i < iterations; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    us[i] = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  }
  std::sort(us.begin(), us.end());
  auto at = [&](double q) { return us[std::min(iterations - 1, static_cast<std::size_t>(q * iterations))]; };
  return {at(0.50), at(0.99), at(0.999), us.back()};
}

void print(const char* what, const percentiles& p) {
  std::printf("%-58s p50 %7.2f us  p99 %7.2f us  p99.9 %7.2f us  max %8.2f us\n", what, p.p50, p.p99,
              p.p999, p.max);
}

} // namespace

int main(int argc, char** argv) {
  std::size_t background = 1'000'000, iterations = 20'000;
  std::string dir = (std::filesystem::temp_directory_path() / "kv_check_latency").string();
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--background")
      background = std::stoull(argv[i + 1]);
    else if (flag == "--iterations")
      iterations = std::stoull(argv[i + 1]);
    else if (flag == "--dir")
      dir = argv[i + 1];
  }
  const hash_chain hasher{model_fingerprint::of("bench/check")};
  std::vector<token_id> tokens(600 * block_tokens);
  std::iota(tokens.begin(), tokens.end(), 3);
  const auto chain = hasher.keys(tokens);

  // 1. Warm index: the chain plus `background` unrelated blocks.
  check_index index;
  for (std::size_t i = 0; i < background; ++i)
    index.insert(block_key{i * 0x9E3779B97F4A7C15ULL + 17, i});
  for (const auto& key : chain)
    index.insert(key);
  std::size_t sink = 0;
  print("longest_prefix, 600-block chain, all hit (warm)",
        measure(iterations, [&] { sink += index.longest_prefix(chain).blocks; }));
  // The same chain every time stays in the CPU caches; querying one of many stored chains at
  // random measures the cache-missing case (each lookup a DRAM access).
  constexpr std::size_t chains = 1500;
  std::vector<std::vector<block_key>> many(chains);
  for (std::size_t c = 0; c < chains; ++c) {
    many[c].resize(600);
    for (std::size_t b = 0; b < 600; ++b) {
      many[c][b] = block_key{(c * 600 + b) * 0xD6E8FEB86659FD93ULL + 5, c};
      index.insert(many[c][b]);
    }
  }
  std::size_t pick = 0;
  print("longest_prefix, random one of 1500 stored 600-block chains",
        measure(iterations, [&] {
          pick = (pick * 2862933555777941757ULL + 3037000493ULL) % chains;
          sink += index.longest_prefix(many[pick]).blocks;
        }));
  std::vector<token_id> unseen(600 * block_tokens);
  std::iota(unseen.begin(), unseen.end(), 1'000'000);
  const auto cold_chain = hasher.keys(unseen);
  print("longest_prefix, 600-block chain, miss at block 0",
        measure(iterations, [&] { sink += index.longest_prefix(cold_chain).blocks; }));

  // 2. The same with a probe against a real store root: a full hit never probes; a miss at the
  // last block costs one stat.
  std::filesystem::remove_all(dir);
  block_store::config cfg;
  cfg.root = dir;
  cfg.fingerprint = hasher.fingerprint();
  cfg.fsync = fsync_policy::none;
  auto store = block_store::open(cfg);
  check_index probed{store->probe()};
  for (std::size_t i = 0; i < background; ++i)
    probed.insert(block_key{i * 0x9E3779B97F4A7C15ULL + 17, i});
  for (std::size_t i = 0; i + 1 < chain.size(); ++i)
    probed.insert(chain[i]);
  print("longest_prefix + stat probe, 599 of 600 stored (miss at end)",
        measure(iterations, [&] { sink += probed.longest_prefix(chain).blocks; }));
  std::printf("index size %zu, checksum %zu\n", index.size(), sink);
  store.reset();
  std::filesystem::remove_all(dir);
  return 0;
}
