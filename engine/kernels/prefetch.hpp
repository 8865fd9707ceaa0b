#pragma once

#include <cstdint>

namespace deepinfer::engine::kernels {

// The cross-attention's picks are scattered over a context far larger than the caches: without
// a prefetch every pick's first load waits for memory (the gathered-attention kernels spent most
// of their time there). The kernels fetch the pick `gather_ahead` places later than the one in use.
inline constexpr int64_t gather_ahead = 8;

/// Fetches the first and last cache line of `floats` floats at `p` (a K or V head: 128 bytes at
/// an address that need not be aligned, so at most one line between them, which the hardware's
/// next-line prefetcher brings).
inline void prefetch_span(const float* p, int64_t floats) {
  __builtin_prefetch(p);
  __builtin_prefetch(p + floats - 1);
}

} // namespace deepinfer::engine::kernels
