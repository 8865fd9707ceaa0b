#pragma once

// The bodies of the CUDA backend's kernels, written once for two includers: canonical_gemm.cu
// compiles them for the device, and engine/backends/cuda_kernels_emulated.test.cpp runs them on
// the CPU (each block's threads as threads, __syncthreads as a barrier), so their index
// arithmetic, tiling, bounds and summation order are tested bit for bit on every machine, GPU or
// not. The includer defines:
//   DI_KERNEL(threads)   the kernel qualifier (`__global__ __launch_bounds__(threads)` / `inline`)
//   DI_SHARED            `__shared__` / `static` (the emulator runs one block at a time)
//   DI_SYNC()            `__syncthreads()` / the emulated block's barrier
//   DI_TX DI_TY DI_BX DI_BY DI_BDY   threadIdx.x/.y, blockIdx.x/.y, blockDim.y
//   DI_FMA(a, b, c)      `__fmaf_rn` / `std::fma`: the only fused operations
//   DI_ADD(a, b)         `__fadd_rn` / `+`
//   DI_MUL(a, b) DI_DIV(a, b)   `__fmul_rn` `__fdiv_rn` / `*` `/`
//   DI_RINT(x)           `rintf` / `std::nearbyint` (to nearest, ties to even)
//   DI_BITS_TO_FLOAT(i)  `__int_as_float` / `std::bit_cast<float>`
//   DI_DEVICE            a device function's qualifier / `static inline`
//   DI_UNROLL            `_Pragma("unroll")` / nothing
//   DI_NAMESPACE         where the kernels go: the host copy must not share the device build's
//                        names (nvcc's launch stubs would stand in for them at link time)

#include <cstdint>

namespace DI_NAMESPACE {

// Tiled kernel: a block of 256 threads computes a 128 x 128 tile of y, each thread 8 x 8 outputs
// (rows ty + 16 i, columns tx + 16 j: neighbouring threads read neighbouring shared words). The
// k loop walks the tiles and, inside a tile, the columns in order, so each output's chain is
// k = 0, 1, ..., k - 1 exactly.
constexpr int tile_m = 128, tile_n = 128, tile_k = 8, per_thread = 8, threads_per_side = 16, tiled_threads = 256;

DI_KERNEL(256) void gemm_tiled(const float* __restrict__ x, int64_t m, int64_t k, const float* __restrict__ wt,
                               int64_t n, float* __restrict__ y, bool accumulate) {
  DI_SHARED float xs[tile_k][tile_m];
  DI_SHARED float ws[tile_k][tile_n];
  const int tid = static_cast<int>(DI_TX);
  const int tx = tid % threads_per_side, ty = tid / threads_per_side;
  const int64_t row0 = static_cast<int64_t>(DI_BY) * tile_m;
  const int64_t col0 = static_cast<int64_t>(DI_BX) * tile_n;
  float acc[per_thread][per_thread];
DI_UNROLL
  for (int i = 0; i < per_thread; ++i)
DI_UNROLL
    for (int j = 0; j < per_thread; ++j)
      acc[i][j] = 0.0f;
  for (int64_t k0 = 0; k0 < k; k0 += tile_k) {
    for (int e = tid; e < tile_m * tile_k; e += tiled_threads) {
      const int r = e / tile_k, c = e % tile_k;
      const int64_t gr = row0 + r, gc = k0 + c;
      xs[c][r] = gr < m && gc < k ? x[gr * k + gc] : 0.0f;
    }
    for (int e = tid; e < tile_n * tile_k; e += tiled_threads) {
      const int c = e / tile_n, j = e % tile_n;
      const int64_t gc = k0 + c, gj = col0 + j;
      ws[c][j] = gc < k && gj < n ? wt[gc * n + gj] : 0.0f;
    }
    DI_SYNC();
    // Only the real columns of the last tile: the chain has no padding terms.
    const int kend = k - k0 < tile_k ? static_cast<int>(k - k0) : tile_k;
    for (int c = 0; c < kend; ++c) {
      float xr[per_thread], wr[per_thread];
DI_UNROLL
      for (int i = 0; i < per_thread; ++i)
        xr[i] = xs[c][ty + threads_per_side * i];
DI_UNROLL
      for (int j = 0; j < per_thread; ++j)
        wr[j] = ws[c][tx + threads_per_side * j];
DI_UNROLL
      for (int i = 0; i < per_thread; ++i)
DI_UNROLL
        for (int j = 0; j < per_thread; ++j)
          acc[i][j] = DI_FMA(xr[i], wr[j], acc[i][j]);
    }
    DI_SYNC();
  }
DI_UNROLL
  for (int i = 0; i < per_thread; ++i) {
    const int64_t r = row0 + ty + threads_per_side * i;
    if (r >= m)
      continue;
DI_UNROLL
    for (int j = 0; j < per_thread; ++j) {
      const int64_t c = col0 + tx + threads_per_side * j;
      if (c < n) {
        float* out = y + r * n + c;
        *out = accumulate ? DI_ADD(*out, acc[i][j]) : acc[i][j];
      }
    }
  }
}

// Few rows (decode steps, small expert groups) or a narrow output: one thread per output column
// and up to Rows rows, the weight read once, coalesced along n; x's rows staged in shared
// memory. Same chains.
constexpr int skinny_threads = 128, skinny_k = 64;

template <int Rows>
DI_KERNEL(128) void gemm_skinny(const float* __restrict__ x, int64_t m, int64_t k, const float* __restrict__ wt,
                                int64_t n, float* __restrict__ y, bool accumulate) {
  DI_SHARED float xs[Rows][skinny_k];
  const int tid = static_cast<int>(DI_TX);
  const int64_t j = static_cast<int64_t>(DI_BX) * skinny_threads + tid;
  const int64_t r0 = static_cast<int64_t>(DI_BY) * Rows;
  const int rows = m - r0 < Rows ? static_cast<int>(m - r0) : Rows;
  float acc[Rows];
DI_UNROLL
  for (int r = 0; r < Rows; ++r)
    acc[r] = 0.0f;
  for (int64_t k0 = 0; k0 < k; k0 += skinny_k) {
    const int kend = k - k0 < skinny_k ? static_cast<int>(k - k0) : skinny_k;
    for (int e = tid; e < Rows * skinny_k; e += skinny_threads) {
      const int r = e / skinny_k, c = e % skinny_k;
      xs[r][c] = r < rows && c < kend ? x[(r0 + r) * k + k0 + c] : 0.0f;
    }
    DI_SYNC();
    if (j < n)
      for (int c = 0; c < kend; ++c) {
        const float w = wt[(k0 + c) * n + j];
DI_UNROLL
        for (int r = 0; r < Rows; ++r)
          acc[r] = DI_FMA(xs[r][c], w, acc[r]);
      }
    DI_SYNC();
  }
  if (j >= n)
    return;
DI_UNROLL
  for (int r = 0; r < Rows; ++r)
    if (r < rows) {
      float* out = y + (r0 + r) * n + j;
      *out = accumulate ? DI_ADD(*out, acc[r]) : acc[r];
    }
}

// wt [k x n] = w [n x k]^T through a 32 x 33 shared tile (the pad keeps the column reads free of
// bank conflicts); blocks of 32 x 8 threads.
constexpr int transpose_tile = 32, transpose_rows = 8;

DI_KERNEL(256) void transpose(const float* __restrict__ w, int64_t n, int64_t k, float* __restrict__ wt) {
  DI_SHARED float t[transpose_tile][transpose_tile + 1];
  const int64_t c0 = static_cast<int64_t>(DI_BX) * transpose_tile; // along k
  const int64_t r0 = static_cast<int64_t>(DI_BY) * transpose_tile; // along n
  const int tx = static_cast<int>(DI_TX);
  for (int i = static_cast<int>(DI_TY); i < transpose_tile; i += static_cast<int>(DI_BDY)) {
    const int64_t r = r0 + i, c = c0 + tx;
    if (r < n && c < k)
      t[i][tx] = w[r * k + c];
  }
  DI_SYNC();
  for (int i = static_cast<int>(DI_TY); i < transpose_tile; i += static_cast<int>(DI_BDY)) {
    const int64_t c = c0 + i, r = r0 + tx;
    if (r < n && c < k)
      wt[c * n + r] = t[tx][i];
  }
}

// The canonical exp (engine/kernels/canonical.hpp), operation for operation: the same bits.
DI_DEVICE float canonical_exp(float x) {
  if (x < -87.0f)
    return 0.0f;
  x = x < 88.0f ? x : 88.0f; // a NaN becomes 88, as on the CPU
  const float n = DI_RINT(DI_MUL(x, 1.44269504088896341f));
  float r = DI_FMA(n, -0.693359375f, x);
  r = DI_FMA(n, 2.12194440e-4f, r);
  float p = 1.9875691500e-4f;
  p = DI_FMA(p, r, 1.3981999507e-3f);
  p = DI_FMA(p, r, 8.3334519073e-3f);
  p = DI_FMA(p, r, 4.1665795894e-2f);
  p = DI_FMA(p, r, 1.6666665459e-1f);
  p = DI_FMA(p, r, 5.0000001201e-1f);
  const float y = DI_ADD(DI_FMA(p, DI_MUL(r, r), r), 1.0f);
  return DI_MUL(y, DI_BITS_TO_FLOAT((static_cast<int32_t>(n) + 127) << 23));
}

// a[i] = a[i] / (1 + exp(-a[i])) * b[i]: the CPU kernels' silu_mul, one element per thread.
constexpr int elementwise_threads = 256;

DI_KERNEL(256) void silu_mul(float* __restrict__ a, const float* __restrict__ b, int64_t n) {
  const int64_t i = static_cast<int64_t>(DI_BX) * elementwise_threads + static_cast<int64_t>(DI_TX);
  if (i < n)
    a[i] = DI_MUL(DI_DIV(a[i], DI_ADD(1.0f, canonical_exp(-a[i]))), b[i]);
}

/// Which kernel `canonical_gemm` runs for an m x n product, and its grid.
struct gemm_launch {
  enum class kernel { skinny1, skinny4, skinny16, tiled } which;
  int64_t grid_x, grid_y, threads;
};

inline gemm_launch choose_gemm(int64_t m, int64_t n) {
  auto skinny = [&](gemm_launch::kernel kk, int64_t rows) {
    return gemm_launch{kk, (n + skinny_threads - 1) / skinny_threads, (m + rows - 1) / rows, skinny_threads};
  };
  if (m == 1)
    return skinny(gemm_launch::kernel::skinny1, 1);
  if (m <= 4)
    return skinny(gemm_launch::kernel::skinny4, 4);
  if (m <= 32 || n < 4 * tile_n)
    return skinny(gemm_launch::kernel::skinny16, 16);
  return {gemm_launch::kernel::tiled, (n + tile_n - 1) / tile_n, (m + tile_m - 1) / tile_m, tiled_threads};
}

} // namespace DI_NAMESPACE
