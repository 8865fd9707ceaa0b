#pragma once

// The CUDA backend's device kernels behind a plain C++ interface (no CUDA types), so the host code
// that calls them compiles with the project's C++20 compiler and only these sources go to nvcc.

#include <cstdint>

namespace deepinfer::engine::cuda {

/// y [m x n] = x [m x k] . wt, or y += it when `accumulate`, on the device: `wt` is the weight
/// transposed, [k x n] (column j of the product is row j of the weight [n x k]). Every output is
/// one FMA chain over k in index order from +0, added to y afterwards when `accumulate`: the order
/// of the CPU kernels' `gemm_packed` (engine/kernels/canonical.hpp), so the GPU gives the CPU's
/// bits, and a row's result depends on no other row. No split-k: the chain is the contract.
/// Device pointers, rows contiguous (leading dimensions k, n, n); enqueued on `stream` (a
/// cudaStream_t). Returns the launch's cudaError_t (0 when launched).
int canonical_gemm(const float* x, int64_t m, int64_t k, const float* wt, int64_t n, float* y,
                   bool accumulate, void* stream);

/// wt [k x n] = w [n x k] transposed, on the device. Returns the launch's cudaError_t.
int transpose(const float* w, int64_t n, int64_t k, float* wt, void* stream);

/// a[i] = a[i] / (1 + exp(-a[i])) * b[i] for i < n on the device, with the canonical exp: the CPU
/// kernels' `silu_mul`, bit for bit. Returns the launch's cudaError_t.
int silu_mul(float* a, const float* b, int64_t n, void* stream);

/// A kernel launch that does nothing, to learn whether this build's kernels run on the current
/// device (an architecture they were not compiled for fails here). Returns the cudaError_t after
/// synchronising.
int probe_launch();

} // namespace deepinfer::engine::cuda
