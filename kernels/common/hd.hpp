// HPCML_HD marks per-element math shared by the CPU and CUDA backends: __host__ __device__
// under nvcc, nothing under a host compiler. Such functions are written once, so the CPU
// tests (run on every commit, without a GPU) also test the GPU's arithmetic.
#pragma once

#if defined(__CUDACC__)
#define HPCML_HD __host__ __device__
#else
#define HPCML_HD
#endif
