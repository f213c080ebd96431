// HPCML_HD marks per-element math shared by the CPU and CUDA backends: __host__ __device__
// under nvcc, nothing under a host compiler. Such functions are written once, so the CPU
// tests (run on every commit, without a GPU) also test the GPU's arithmetic.
#pragma once

#if defined(__CUDACC__)
#define HPCML_HD __host__ __device__
#else
#define HPCML_HD
#endif

// A CPU function compiled twice, for AVX2 and for any x86-64, the loader picking one (GCC's
// target_clones). Elsewhere (clang, which does not clone templates; other CPUs; ThreadSanitizer,
// whose instrumented ifunc resolvers run before its runtime starts) one baseline build.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && !defined(__SANITIZE_THREAD__)
#define HPCML_AVX2_CLONES [[gnu::target_clones("avx2", "default")]]
#else
#define HPCML_AVX2_CLONES
#endif
