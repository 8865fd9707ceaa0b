// target_avx512.hpp plus AVX-512 VNNI, for the functions that call `vpdpbusd` (callers check
// the CPU has it). No include guard.
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx,avx2,fma,avx512f,avx512bw,avx512vl,avx512dq,avx512vnni"))), apply_to = function)
#else
// GCC 12's AVX-512 headers start many intrinsics from an "undefined" vector and then warn that it
// is uninitialized (GCC bug 105593); the warning says nothing about the code of the region.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC push_options
#pragma GCC target("avx,avx2,fma,avx512f,avx512bw,avx512vl,avx512dq,avx512vnni")
#endif
