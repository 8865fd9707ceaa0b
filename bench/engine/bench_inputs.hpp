#pragma once

// What the engine benches feed the engine: comma lists and ISAs from the command line, seeded
// prompts.

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "engine/kernels/isa.hpp"
#include "engine/rank_engine.hpp"
#include "engine/testing/random_tokens.hpp"

namespace deepinfer::bench {

/// "1,8,64" -> {1, 8, 64}.
inline std::vector<int64_t> parse_list(const std::string& s) {
  std::vector<int64_t> v;
  std::stringstream ss(s);
  for (std::string x; std::getline(ss, x, ',');)
    v.push_back(std::stoll(x));
  return v;
}

/// The ISA a `--cpu-isa` value names; prints why and exits (status 2) when this CPU cannot run it.
inline engine::kernels::cpu_isa cpu_isa_or_exit(const std::string& name) {
  const auto c = engine::kernels::choose_cpu_isa(name);
  if (!c.isa) {
    std::fprintf(stderr, "--cpu-isa: %s\n", c.error.c_str());
    std::exit(2);
  }
  return *c.isa;
}

/// The engine of `dir` under `cfg`; prints why and exits (status 1) when it cannot load.
inline std::unique_ptr<engine::rank_engine> load_or_exit(const std::string& dir, const engine::rank_engine::config& cfg) {
  auto loaded = engine::rank_engine::load(dir, cfg);
  if (!loaded.engine) {
    std::fprintf(stderr, "%s\n", loaded.error.c_str());
    std::exit(1);
  }
  return std::move(loaded.engine);
}

/// `n` token ids drawn from `seed` (any id of a `vocab`-token vocabulary).
using engine::testing::random_tokens;
inline std::vector<int32_t> random_prompt(int64_t n, uint64_t seed, int32_t vocab = 129280) {
  return random_tokens(n, seed, vocab);
}

} // namespace deepinfer::bench
