// The canonical-order matrix products of the CUDA backend (see canonical_gemm.hpp). Built with
// --fmad=false: the only fused multiply-adds are the written __fmaf_rn, as on the CPU (whose
// builds use -ffp-contract=off), and the accumulate is a separate __fadd_rn.
#include "engine/backends/cuda/canonical_gemm.hpp"

#include <cuda_runtime.h>

#define DI_KERNEL(threads) __global__ __launch_bounds__(threads)
#define DI_SHARED __shared__
#define DI_SYNC() __syncthreads()
#define DI_TX threadIdx.x
#define DI_TY threadIdx.y
#define DI_BX blockIdx.x
#define DI_BY blockIdx.y
#define DI_BDY blockDim.y
#define DI_FMA(a, b, c) __fmaf_rn(a, b, c)
#define DI_ADD(a, b) __fadd_rn(a, b)
#define DI_UNROLL _Pragma("unroll")
#define DI_MUL(a, b) __fmul_rn(a, b)
#define DI_DIV(a, b) __fdiv_rn(a, b)
#define DI_RINT(x) rintf(x)
#define DI_BITS_TO_FLOAT(i) __int_as_float(i)
#define DI_DEVICE __device__ __forceinline__
#define DI_NAMESPACE deepinfer::engine::cuda::kernels
#include "engine/backends/cuda/canonical_gemm_kernels.cuh"

namespace deepinfer::engine::cuda {

namespace {

__global__ void nothing() {}

} // namespace

int canonical_gemm(const float* x, int64_t m, int64_t k, const float* wt, int64_t n, float* y, bool accumulate,
                   void* stream) {
  if (m <= 0 || n <= 0)
    return cudaSuccess;
  auto s = static_cast<cudaStream_t>(stream);
  const auto l = kernels::choose_gemm(m, n);
  const dim3 grid(static_cast<unsigned>(l.grid_x), static_cast<unsigned>(l.grid_y));
  const auto threads = static_cast<unsigned>(l.threads);
  using kk = kernels::gemm_launch::kernel;
  switch (l.which) {
  case kk::skinny1:
    kernels::gemm_skinny<1><<<grid, threads, 0, s>>>(x, m, k, wt, n, y, accumulate);
    break;
  case kk::skinny4:
    kernels::gemm_skinny<4><<<grid, threads, 0, s>>>(x, m, k, wt, n, y, accumulate);
    break;
  case kk::skinny16:
    kernels::gemm_skinny<16><<<grid, threads, 0, s>>>(x, m, k, wt, n, y, accumulate);
    break;
  case kk::tiled:
    kernels::gemm_tiled<<<grid, threads, 0, s>>>(x, m, k, wt, n, y, accumulate);
    break;
  }
  return cudaGetLastError();
}

int transpose(const float* w, int64_t n, int64_t k, float* wt, void* stream) {
  const dim3 grid(static_cast<unsigned>((k + kernels::transpose_tile - 1) / kernels::transpose_tile),
                  static_cast<unsigned>((n + kernels::transpose_tile - 1) / kernels::transpose_tile));
  kernels::transpose<<<grid, dim3(kernels::transpose_tile, kernels::transpose_rows), 0,
                       static_cast<cudaStream_t>(stream)>>>(w, n, k, wt);
  return cudaGetLastError();
}

int silu_mul(float* a, const float* b, int64_t n, void* stream) {
  if (n <= 0)
    return cudaSuccess;
  const auto blocks = static_cast<unsigned>((n + kernels::elementwise_threads - 1) / kernels::elementwise_threads);
  kernels::silu_mul<<<blocks, kernels::elementwise_threads, 0, static_cast<cudaStream_t>(stream)>>>(a, b, n);
  return cudaGetLastError();
}

int probe_launch() {
  nothing<<<1, 1>>>();
  if (auto rc = cudaGetLastError(); rc != cudaSuccess)
    return rc;
  return cudaDeviceSynchronize();
}

} // namespace deepinfer::engine::cuda
