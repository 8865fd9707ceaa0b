// Ends a region opened by target_avx2.hpp or target_avx512.hpp. No include guard.
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#pragma GCC diagnostic pop
#endif
