// HPCML_HD marks per-element math shared by the CPU and CUDA backends: __host__ __device__
// under nvcc, nothing under a host compiler. Such functions are written once, so the CPU
// tests (run on every commit, without a GPU) also test the GPU's arithmetic.
#pragma once

#include <cstddef>

#if defined(__CUDACC__)
#define HPCML_HD __host__ __device__
#else
#define HPCML_HD
#endif

namespace hpcml::detail {
// `value` rounded up to a multiple of `multiple` (> 0), and how many multiples that is.
HPCML_HD constexpr std::size_t ceil_div(std::size_t value, std::size_t multiple) {
    return (value + multiple - 1) / multiple;
}
HPCML_HD constexpr std::size_t round_up(std::size_t value, std::size_t multiple) {
    return ceil_div(value, multiple) * multiple;
}
}  // namespace hpcml::detail

// A fixed-count loop fully unrolled, for the CPU's vectoriser, which vectorises no loop around
// two inner loops; nothing under nvcc, whose front end does not know the pragma.
#define HPCML_PRAGMA(text) _Pragma(#text)
#if defined(__GNUC__) && !defined(__CUDACC__)
#define HPCML_UNROLL(n) HPCML_PRAGMA(GCC unroll n)
#else
#define HPCML_UNROLL(n)
#endif

// A fixed-count loop fully unrolled on the GPU, where an array indexed by its counter must stay
// in registers (a dynamic index puts the array in local memory); nothing under a host compiler.
// HPCML_DEVICE_NO_UNROLL keeps a loop a loop there (one copy of its body).
#if defined(__CUDA_ARCH__)
#define HPCML_DEVICE_UNROLL HPCML_PRAGMA(unroll)
#define HPCML_DEVICE_NO_UNROLL HPCML_PRAGMA(unroll 1)
#else
#define HPCML_DEVICE_UNROLL
#define HPCML_DEVICE_NO_UNROLL
#endif
