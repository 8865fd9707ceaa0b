// Compiles the functions that follow, up to target_end.hpp, for AVX-512 (F, BW, VL, DQ) on top of
// AVX2 + FMA; functions that use VNNI add it with their own attribute. Include it after every other
// header (see target_avx2.hpp). No include guard.
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx,avx2,fma,avx512f,avx512bw,avx512vl,avx512dq"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx,avx2,fma,avx512f,avx512bw,avx512vl,avx512dq")
#endif
