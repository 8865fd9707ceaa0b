// The CUDA backend's kernels run on the CPU: each block's threads as real threads, __shared__ as
// memory they share, __syncthreads as a barrier (engine/backends/cuda/canonical_gemm_kernels.cuh
// is written for both). So on every machine, GPU or not, the kernels' tiling, bounds, dispatch and
// summation order are checked bit for bit against the CPU kernels: a GPU run then only adds what
// the hardware itself does (the device suite, cuda_backend.test.cpp, under scripts/device-check.sh).
#include <barrier>
#include <bit>
#include <limits>
#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <thread>
#include <vector>

#include <boost/test/unit_test.hpp>

#include "engine/backends/cpu/cpu_backend.hpp"
#include "engine/testing/random_floats.hpp"

namespace emulated {
thread_local int tx = 0, ty = 0;
int bx = 0, by = 0, bdy = 1;
std::barrier<>* block_barrier = nullptr;
} // namespace emulated

#define DI_KERNEL(threads) static inline
#define DI_SHARED static
#define DI_SYNC() emulated::block_barrier->arrive_and_wait()
#define DI_TX emulated::tx
#define DI_TY emulated::ty
#define DI_BX emulated::bx
#define DI_BY emulated::by
#define DI_BDY emulated::bdy
#define DI_FMA(a, b, c) std::fma(a, b, c)
#define DI_ADD(a, b) ((a) + (b))
#define DI_UNROLL
#define DI_MUL(a, b) ((a) * (b))
#define DI_DIV(a, b) ((a) / (b))
#define DI_RINT(x) std::nearbyint(x)
#define DI_BITS_TO_FLOAT(i) std::bit_cast<float>(i)
#define DI_DEVICE static inline
#define DI_NAMESPACE deepinfer::engine::cuda::host_emulation
#include "engine/backends/cuda/canonical_gemm_kernels.cuh"

using namespace deepinfer::engine;
using deepinfer::engine::testing::random_floats;
namespace kn = deepinfer::engine::cuda::host_emulation;

namespace {

/// Runs `body` as a grid of blocks, one block at a time (their __shared__ arrays are the
/// function's statics), each block's threads at once.
void launch(int64_t grid_x, int64_t grid_y, int threads_x, int threads_y, const std::function<void()>& body) {
  for (int64_t y = 0; y < grid_y; ++y)
    for (int64_t x = 0; x < grid_x; ++x) {
      emulated::bx = static_cast<int>(x);
      emulated::by = static_cast<int>(y);
      emulated::bdy = threads_y;
      std::barrier<> b{threads_x * threads_y};
      emulated::block_barrier = &b;
      std::vector<std::thread> block;
      for (int t = 0; t < threads_x * threads_y; ++t)
        block.emplace_back([&, t] {
          emulated::tx = t % threads_x;
          emulated::ty = t / threads_x;
          body();
        });
      for (auto& t : block)
        t.join();
    }
}

/// What `cuda::canonical_gemm` does on the device: the kernel `choose_gemm` picks, over its grid.
void emulated_gemm(const float* x, int64_t m, int64_t k, const float* wt, int64_t n, float* y, bool accumulate) {
  const auto l = kn::choose_gemm(m, n);
  using kk = kn::gemm_launch::kernel;
  launch(l.grid_x, l.grid_y, static_cast<int>(l.threads), 1, [&] {
    switch (l.which) {
    case kk::skinny1: kn::gemm_skinny<1>(x, m, k, wt, n, y, accumulate); break;
    case kk::skinny4: kn::gemm_skinny<4>(x, m, k, wt, n, y, accumulate); break;
    case kk::skinny16: kn::gemm_skinny<16>(x, m, k, wt, n, y, accumulate); break;
    case kk::tiled: kn::gemm_tiled(x, m, k, wt, n, y, accumulate); break;
    }
  });
}

std::vector<float> emulated_transpose(const std::vector<float>& w, int64_t n, int64_t k) {
  std::vector<float> wt(w.size(), std::nanf(""));
  launch((k + kn::transpose_tile - 1) / kn::transpose_tile, (n + kn::transpose_tile - 1) / kn::transpose_tile,
         kn::transpose_tile, kn::transpose_rows, [&] { kn::transpose(w.data(), n, k, wt.data()); });
  return wt;
}

} // namespace

BOOST_AUTO_TEST_SUITE(cuda_kernels_emulated)

BOOST_AUTO_TEST_CASE(the_transpose_kernel_moves_every_element_once) {
  for (auto [n, k] : {std::pair<int64_t, int64_t>{1, 1}, {33, 65}, {100, 7}, {64, 96}}) {
    auto w = random_floats(n * k, static_cast<uint32_t>(n * 1000 + k));
    auto wt = emulated_transpose(w, n, k);
    for (int64_t r = 0; r < n; ++r)
      for (int64_t c = 0; c < k; ++c)
        BOOST_REQUIRE_MESSAGE(wt[c * n + r] == w[r * k + c], "n=" << n << " k=" << k << " at " << r << "," << c);
  }
}

// Every kernel the dispatch can pick (m = 1, <= 4, <= 32 or narrow, tiled), partial tiles on every
// side, k below, at and past a tile, and accumulate: the portable CPU kernels' bits exactly.
BOOST_AUTO_TEST_CASE(every_gemm_kernel_gives_the_cpu_kernels_bits_on_partial_tiles) {
  cpu_backend cpu{cpu_backend::config{1, kernels::cpu_isa::portable}};
  uint32_t seed = 11;
  struct shape {
    int64_t m, k, n;
  };
  const shape shapes[] = {{1, 7, 5},     {1, 130, 300}, {3, 64, 129},  {4, 9, 1},     {5, 65, 33},
                          {16, 1, 40},   {31, 70, 600}, {40, 17, 100}, {33, 9, 513},  {130, 20, 520},
                          {129, 8, 640}, {300, 3, 530}};
  for (const auto& s : shapes) {
    const auto l = kn::choose_gemm(s.m, s.n);
    auto x = random_floats(s.m * s.k, seed++);
    auto w = random_floats(s.n * s.k, seed++);
    auto y0 = random_floats(s.m * s.n, seed++);
    const auto wt = emulated_transpose(w, s.n, s.k);
    for (bool acc : {false, true}) {
      auto yc = y0, ye = y0;
      cpu.matmul(x.data(), s.m, s.k, w.data(), s.n, yc.data(), acc);
      emulated_gemm(x.data(), s.m, s.k, wt.data(), s.n, ye.data(), acc);
      BOOST_TEST(std::memcmp(yc.data(), ye.data(), yc.size() * sizeof(float)) == 0,
                 "m=" << s.m << " k=" << s.k << " n=" << s.n << " accumulate=" << acc << " kernel="
                      << static_cast<int>(l.which));
    }
  }
}

// The gate of the device's gated MLP: the CPU kernels' silu_mul bit for bit, over the exp's whole
// range, its clamps, zeros of both signs, NaN and subnormals, with a partial last block.
BOOST_AUTO_TEST_CASE(the_silu_mul_kernel_gives_the_cpu_kernels_bits_everywhere) {
  std::vector<float> a = random_floats(1000, 77), b = random_floats(1000, 78);
  for (auto& v : a)
    v *= 100.0f; // past both clamps of the exp (-87, 88)
  for (float v : {0.0f, -0.0f, 87.0f, -87.0f, 88.0f, -88.0f, 1e-40f, -1e-40f, 3.4e38f, -3.4e38f,
                  std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                  -std::numeric_limits<float>::infinity()}) {
    a.push_back(v);
    b.push_back(0.75f);
  }
  auto want = a;
  kernels::kernels_for(kernels::cpu_isa::portable).silu_mul(want.data(), b.data(), static_cast<int64_t>(want.size()));
  auto got = a;
  const auto n = static_cast<int64_t>(got.size());
  launch((n + kn::elementwise_threads - 1) / kn::elementwise_threads, 1, kn::elementwise_threads, 1,
         [&] { kn::silu_mul(got.data(), b.data(), n); });
  for (std::size_t i = 0; i < got.size(); ++i)
    BOOST_TEST(std::bit_cast<uint32_t>(got[i]) == std::bit_cast<uint32_t>(want[i]), "a=" << a[i]);
}

BOOST_AUTO_TEST_CASE(the_dispatch_covers_every_kernel_and_the_whole_output) {
  using kk = kn::gemm_launch::kernel;
  BOOST_TEST((kn::choose_gemm(1, 4096).which == kk::skinny1));
  BOOST_TEST((kn::choose_gemm(3, 4096).which == kk::skinny4));
  BOOST_TEST((kn::choose_gemm(32, 4096).which == kk::skinny16));
  BOOST_TEST((kn::choose_gemm(8192, 64).which == kk::skinny16)); // narrow: the router's logits
  BOOST_TEST((kn::choose_gemm(33, 4096).which == kk::tiled));
  for (int64_t m : {1, 2, 4, 5, 31, 32, 33, 1000, 70000})
    for (int64_t n : {1, 127, 128, 511, 512, 129280}) {
      const auto l = kn::choose_gemm(m, n);
      const int64_t rows = l.which == kk::tiled ? kn::tile_m : l.which == kk::skinny16 ? 16 : l.which == kk::skinny4 ? 4 : 1;
      const int64_t cols = l.which == kk::tiled ? kn::tile_n : kn::skinny_threads;
      BOOST_TEST(l.grid_y * rows >= m);
      BOOST_TEST((l.grid_y - 1) * rows < m);
      BOOST_TEST(l.grid_x * cols >= n);
      BOOST_TEST(l.grid_y <= 65535); // CUDA's limit on gridDim.y
    }
}

BOOST_AUTO_TEST_SUITE_END()
