// Compiles the functions that follow, up to target_end.hpp, for AVX2 + FMA. Include it after every
// other header: functions declared before it (the standard library's) keep the baseline target, so
// no AVX2 copy of a shared inline function can reach a CPU without AVX2. No include guard: a file
// may open and close several regions.
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx,avx2,fma"))), apply_to = function)
#else
#pragma GCC diagnostic push
#pragma GCC push_options
#pragma GCC target("avx,avx2,fma")
#endif
