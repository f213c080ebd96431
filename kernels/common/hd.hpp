// HPCML_HD marks per-element math shared by the CPU and CUDA backends: __host__ __device__
// under nvcc, nothing under a host compiler. Such functions are written once, so the CPU
// tests (run on every commit, without a GPU) also test the GPU's arithmetic.
#pragma once

#if defined(__CUDACC__)
#define HPCML_HD __host__ __device__
#else
#define HPCML_HD
#endif

// A fixed-count loop fully unrolled, for the CPU's vectoriser, which vectorises no loop around
// two inner loops; nothing under nvcc, whose front end does not know the pragma.
#define HPCML_PRAGMA(text) _Pragma(#text)
#if defined(__GNUC__) && !defined(__CUDACC__)
#define HPCML_UNROLL(n) HPCML_PRAGMA(GCC unroll n)
#else
#define HPCML_UNROLL(n)
#endif

// A CPU function compiled twice, for x86-64-v3 (AVX2 with FMA) and for any x86-64, or three
// times, with x86-64-v4 (AVX-512) first, the loader picking one by the CPU's features (GCC's
// target_clones). Elsewhere (clang, which does not clone templates; other CPUs; ThreadSanitizer,
// whose instrumented ifunc resolvers run before its runtime starts) one baseline build.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && !defined(__SANITIZE_THREAD__)
#define HPCML_AVX2_CLONES [[gnu::target_clones("arch=x86-64-v3", "default")]]
#define HPCML_AVX512_CLONES [[gnu::target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")]]
#else
#define HPCML_AVX2_CLONES
#define HPCML_AVX512_CLONES
#endif
