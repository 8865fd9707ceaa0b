#include "engine/backends/cpu/cpu_backend.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include <boost/test/unit_test.hpp>

#include "engine/backends/cpu/packed_gemm.hpp"
#include "engine/testing/random_floats.hpp"

using namespace deepinfer::engine;
using kernels::cpu_isa;

namespace {

std::vector<float> normal(std::size_t n, std::mt19937& rng) {
  std::normal_distribution<float> d;
  std::vector<float> v(n);
  for (auto& x : v)
    x = d(rng);
  return v;
}

} // namespace

BOOST_AUTO_TEST_SUITE(cpu_backend_suite)

// The determinism contract: a row's product does not depend on the other rows of the call, on
// the thread count, nor on the ISA.
BOOST_AUTO_TEST_CASE(matmul_rows_are_independent_of_the_batch_threads_and_isa) {
  std::mt19937 rng(1);
  for (auto [k, n] : std::vector<std::pair<int64_t, int64_t>>{
           {128, 128}, {128, 64}, {128, 16}, {128, 32}, {256, 128}, {128, 1000}, {96, 40}, {20, 37}}) {
    const int64_t big = 1024;
    const auto w = normal(static_cast<std::size_t>(n * k), rng), x = normal(static_cast<std::size_t>(big * k), rng);
    std::vector<float> all(static_cast<std::size_t>(big * n));
    cpu_backend(cpu_backend::config{2, cpu_isa::portable}).matmul(x.data(), big, k, w.data(), n, all.data(), false);
    for (auto isa : kernels::supported_cpu_isas())
      for (int threads : {1, 3}) {
        cpu_backend b(cpu_backend::config{threads, isa});
        int bad = 0;
        for (int64_t m : {1, 3, 8, 13, 64, 129, 500})
          for (int64_t row = 0; row + m <= big; row += 197) {
            std::vector<float> y(static_cast<std::size_t>(m * n));
            b.matmul(x.data() + row * k, m, k, w.data(), n, y.data(), false);
            bad += std::memcmp(y.data(), all.data() + row * n, y.size() * sizeof(float)) != 0;
          }
        BOOST_TEST(bad == 0, kernels::to_string(isa) << " threads=" << threads << " k=" << k << " n=" << n);
      }
  }
}

// Against a product in double, for row counts that leave partial row blocks and widths that
// leave partial panels, with and without accumulation.
BOOST_AUTO_TEST_CASE(matmul_equals_a_reference_product) {
  std::mt19937 rng(2);
  for (auto isa : kernels::supported_cpu_isas())
    for (auto [m, k, n] : std::vector<std::array<int64_t, 3>>{
             {1, 128, 128}, {7, 128, 64}, {13, 32, 16}, {300, 128, 256}, {5, 96, 40}, {70, 20, 48}, {9, 5, 3}}) {
      cpu_backend b(cpu_backend::config{2, isa});
      const auto w = normal(static_cast<std::size_t>(n * k), rng), x = normal(static_cast<std::size_t>(m * k), rng),
                 y0 = normal(static_cast<std::size_t>(m * n), rng);
      for (bool acc : {false, true}) {
        auto y = y0;
        b.matmul(x.data(), m, k, w.data(), n, y.data(), acc);
        double worst = 0;
        for (int64_t r = 0; r < m; ++r)
          for (int64_t j = 0; j < n; ++j) {
            double ref = acc ? y0[r * n + j] : 0.0;
            for (int64_t c = 0; c < k; ++c)
              ref += double{x[r * k + c]} * w[j * k + c];
            worst = std::max(worst, std::fabs(ref - y[r * n + j]));
          }
        BOOST_TEST(worst < 1e-3, kernels::to_string(isa) << " m=" << m << " k=" << k << " n=" << n
                                                          << " acc=" << acc << " worst=" << worst);
      }
    }
}

// A wide output (the lm_head: n >= 32768) is split by columns over the pool for few rows and by
// rows for many: the same bits either way, on every ISA, and the right product. Columns 0..14 are
// repeated at the end of a second weight, where they fall into a partial last panel.
BOOST_AUTO_TEST_CASE(wide_outputs_agree_bit_for_bit_between_splits_and_isas) {
  std::mt19937 rng(3);
  const int64_t k = 64, n = 32768, m = 5, many = 70;
  auto w = normal(static_cast<std::size_t>((n + 15) * k), rng);
  const auto x = normal(static_cast<std::size_t>(many * k), rng);
  std::copy(w.begin(), w.begin() + 15 * k, w.begin() + n * k);
  std::vector<float> first;
  for (auto isa : kernels::supported_cpu_isas()) {
    cpu_backend b(cpu_backend::config{3, isa});
    std::vector<float> y(static_cast<std::size_t>(m * n)), y2(static_cast<std::size_t>(m * (n + 15)));
    b.matmul(x.data(), m, k, w.data(), n, y.data(), false);
    b.matmul(x.data(), m, k, w.data(), n + 15, y2.data(), false);
    int bad = 0;
    double worst = 0;
    for (int64_t r = 0; r < m; ++r) {
      for (int64_t j = 0; j < 15; ++j)
        bad += std::memcmp(&y[r * n + j], &y2[r * (n + 15) + n + j], sizeof(float)) != 0;
      std::vector<float> one(static_cast<std::size_t>(n));
      b.matmul(x.data() + r * k, 1, k, w.data(), n, one.data(), false); // one row
      bad += std::memcmp(one.data(), &y[r * n], one.size() * sizeof(float)) != 0;
      for (int64_t j = 0; j < n; j += 997) {
        double ref = 0;
        for (int64_t c = 0; c < k; ++c)
          ref += double{x[r * k + c]} * w[j * k + c];
        worst = std::max(worst, std::fabs(ref - y[r * n + j]));
      }
    }
    // Many rows split by rows: their first m rows have the bits of the column split.
    std::vector<float> y70(static_cast<std::size_t>(many * n));
    b.matmul(x.data(), many, k, w.data(), n, y70.data(), false);
    bad += std::memcmp(y70.data(), y.data(), y.size() * sizeof(float)) != 0;
    if (first.empty())
      first = y;
    BOOST_TEST(bad == 0, kernels::to_string(isa));
    BOOST_TEST(worst < 1e-3, kernels::to_string(isa));
    BOOST_TEST(std::memcmp(first.data(), y.data(), y.size() * sizeof(float)) == 0, kernels::to_string(isa) << " vs portable");
  }
}

// A weight streamed from memory whose values are all bf16 (a bf16 checkpoint's lm_head) is kept
// in half the bytes and gives the bits of the f32 panels of the same values; a small one, or one
// with a single value that is not bf16, keeps its f32 panels.
BOOST_AUTO_TEST_CASE(a_large_bf16_weight_is_packed_in_half_the_bytes_with_the_same_bits) {
  std::mt19937 rng(4);
  const int64_t k = 64, n = 32768 + 5, m = 13; // 13 rows: more than one row block
  auto w = normal(static_cast<std::size_t>(n * k), rng);
  deepinfer::engine::testing::cut_to_bf16_values(w);
  const auto x = normal(static_cast<std::size_t>(m * k), rng);
  const int64_t panel_floats = (n + 15) / 16 * 16 * k;
  std::vector<float> panels(static_cast<std::size_t>(panel_floats)), want(static_cast<std::size_t>(m * n));
  kernels::pack_panels(w.data(), n, k, panels.data());
  kernels::kernels_for(cpu_isa::portable).gemm_packed(x.data(), m, k, panels.data(), n, want.data(), n, false);
  for (auto isa : kernels::supported_cpu_isas())
    for (int64_t rows : {int64_t{1}, int64_t{3}, m}) {
      cpu_backend b(cpu_backend::config{2, isa});
      std::vector<float> y(static_cast<std::size_t>(rows * n));
      b.matmul(x.data(), rows, k, w.data(), n, y.data(), false);
      BOOST_TEST(b.prepared_weight_bytes() == static_cast<std::size_t>(panel_floats) * 2);
      BOOST_TEST(std::memcmp(y.data(), want.data(), y.size() * sizeof(float)) == 0, kernels::to_string(isa) << " rows=" << rows);
    }
  cpu_backend b(cpu_backend::config{1, {}});
  std::vector<float> y(static_cast<std::size_t>(128));
  b.matmul(x.data(), 1, 64, w.data(), 128, y.data(), false); // 32 KB: stays in the caches
  BOOST_TEST(b.prepared_weight_bytes() == std::size_t{128 * 64 * 4});
  w[static_cast<std::size_t>(n * k / 2)] = 0.1f; // not a bf16 value
  cpu_backend c(cpu_backend::config{1, {}});
  std::vector<float> yc(static_cast<std::size_t>(n));
  c.matmul(x.data(), 1, k, w.data(), n, yc.data(), false);
  BOOST_TEST(c.prepared_weight_bytes() == static_cast<std::size_t>(panel_floats) * 4);
}

// The ranks of one process that hold the same values share one packed copy, found by content:
// equal values at another address share it, other values never do, and a copy outlives the
// backend that made it while another still uses it.
BOOST_AUTO_TEST_CASE(equal_weights_share_one_packed_copy_in_a_process) {
  std::mt19937 rng(5);
  const int64_t k = 96, n = 40, m = 5;
  const auto w = normal(static_cast<std::size_t>(n * k), rng), x = normal(static_cast<std::size_t>(m * k), rng);
  auto same = w;
  auto other = w;
  other.back() += 1.0f;
  std::vector<float> want(static_cast<std::size_t>(m * n)), y(want.size());
  auto first = std::make_unique<cpu_backend>(cpu_backend::config{1, {}});
  first->matmul(x.data(), m, k, w.data(), n, want.data(), false);
  cpu_backend second(cpu_backend::config{2, {}});
  packed_gemm a, b, c;
  const auto pa = a.packed(w.data(), n, k), pb = b.packed(same.data(), n, k), pc = c.packed(other.data(), n, k);
  BOOST_TEST(pa.f32 != nullptr);
  BOOST_TEST(pa.f32 == pb.f32); // one copy for two addresses of the same values
  BOOST_TEST(pa.f32 != pc.f32); // one value apart: its own copy
  BOOST_TEST(a.bytes() == b.bytes());
  a.release(w.data(), n, k);
  first.reset(); // the backend that packed `w` first goes; the copy stays for the others
  pb.gemm(kernels::kernels_for(cpu_isa::portable), x.data(), m, k, 0, n, y.data(), n, false);
  BOOST_TEST(std::memcmp(y.data(), want.data(), y.size() * sizeof(float)) == 0);
  packed_gemm d;
  BOOST_TEST(d.packed(w.data(), n, k).f32 == pb.f32); // found again while `b` holds it
  std::fill(y.begin(), y.end(), 0.0f);
  second.matmul(x.data(), m, k, same.data(), n, y.data(), false);
  BOOST_TEST(std::memcmp(y.data(), want.data(), y.size() * sizeof(float)) == 0);
}

BOOST_AUTO_TEST_CASE(matmul_accumulates_when_asked) {
  for (auto isa : kernels::supported_cpu_isas()) {
    cpu_backend b(cpu_backend::config{1, isa});
    std::vector<float> x{1, 2}, w{3, 4, 5, 6}, y{10, 20};
    b.matmul(x.data(), 1, 2, w.data(), 2, y.data(), true);
    BOOST_TEST(y[0] == 10 + 1 * 3 + 2 * 4);
    BOOST_TEST(y[1] == 20 + 1 * 5 + 2 * 6);
  }
}

BOOST_AUTO_TEST_CASE(parallel_for_runs_every_index_once) {
  cpu_backend b(cpu_backend::config{3, {}});
  for (int round = 0; round < 50; ++round) {
    std::vector<std::atomic<int>> hits(1000);
    b.parallel_for(1000, [&](int64_t i) { hits[static_cast<std::size_t>(i)]++; });
    for (auto& h : hits)
      BOOST_TEST(h.load() == 1);
  }
}

BOOST_AUTO_TEST_SUITE_END()
