// glibc's vector math (libmvec, <= 4 ulp) for the inverse Gaussian's CPU files, which are
// compiled with -fno-math-errno -fno-trapping-math (kernels/CMakeLists.txt).
#pragma once

#if HPCML_HAVE_LIBMVEC
#include <immintrin.h>
// glibc's vector math (libmvec, <= 4 ulp): its SSE2 ('b') and AVX2 ('d') variants, declared so
// that GCC may call them from vectorised loops (glibc's own headers do so only under fast math).
extern "C" {
double exp(double) noexcept __attribute__((simd("notinbranch")));
double log(double) noexcept __attribute__((simd("notinbranch")));
double log1p(double) noexcept __attribute__((simd("notinbranch")));
double expm1(double) noexcept __attribute__((simd("notinbranch")));
double erfc(double) noexcept __attribute__((simd("notinbranch")));
double cos(double) noexcept __attribute__((simd("notinbranch")));
__m256d _ZGVdN4v_exp(__m256d);
}
#endif
