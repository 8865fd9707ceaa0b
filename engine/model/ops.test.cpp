// The indexer's top-k selection equals sorting by (score desc, position asc), on every path and
// every ISA this CPU runs.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <numeric>
#include <random>
#include <vector>

#include "engine/kernels/kernel_table.hpp"
#include "engine/model/ops.hpp"

using namespace deepinfer::engine;

BOOST_AUTO_TEST_SUITE(ops_top_k)

BOOST_AUTO_TEST_CASE(top_k_positions_equals_a_full_sort_with_ties_to_the_earlier_position) {
  std::mt19937_64 rng(9);
  // Sizes that take the group-maxima path, the sampled path and the radix path; scores with many ties, zeros of both
  // signs, and one skewed distribution where the sample's threshold is too high.
  for (int64_t n : {300, 5000, 16000, 30000}) {
    for (int kind = 0; kind < 3; ++kind) {
      std::vector<float> s(static_cast<std::size_t>(n));
      for (int64_t j = 0; j < n; ++j) {
        if (kind == 0)
          s[j] = static_cast<float>(rng() % 1000) * 0.5f;  // heavy ties
        else if (kind == 1)
          s[j] = (rng() % 3 == 0) ? ((rng() % 2) != 0 ? 0.0f : -0.0f) : std::ldexp(static_cast<float>(rng() % 4096), -20);
        else
          s[j] = (j % 997 == 0) ? 100.0f + static_cast<float>(j % 7) : static_cast<float>(rng() % 5);
      }
      const int64_t k = 256;
      std::vector<int64_t> ref(static_cast<std::size_t>(n));
      std::iota(ref.begin(), ref.end(), int64_t{0});
      std::sort(ref.begin(), ref.end(), [&](int64_t a, int64_t b) {
        return s[a] > s[b] || (s[a] == s[b] && a < b);
      });
      ref.resize(static_cast<std::size_t>(k));
      std::sort(ref.begin(), ref.end());
      for (auto isa : kernels::supported_cpu_isas()) {
        std::vector<int64_t> got(static_cast<std::size_t>(k));
        std::vector<uint32_t> scratch(static_cast<std::size_t>(n));
        ops::top_k_positions(kernels::kernels_for(isa), s.data(), n, k, got.data(), scratch.data());
        BOOST_TEST((got == ref), kernels::to_string(isa) << " n=" << n << " kind=" << kind);
      }
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()
