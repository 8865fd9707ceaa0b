// target_avx512.hpp plus AVX-512 VNNI, for the functions that call `vpdpbusd` (callers check
// the CPU has it). No include guard.
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx,avx2,fma,avx512f,avx512bw,avx512vl,avx512dq,avx512vnni"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx,avx2,fma,avx512f,avx512bw,avx512vl,avx512dq,avx512vnni")
#endif
