// The inverse-Gaussian family's kernel launchers (fused.cu: elementwise, sampling and fused
// distances; naive.cu: the broadcast distances), which cuda_driver.cpp calls. Every pointer is
// a device pointer; each launcher only enqueues on `stream`.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

#include "backends.hpp"

namespace hpcml::detail::invgauss {

// The GPU kernels' and the host path's values: they change speed, never results. Neither was
// timed against another value.
struct GpuPolicy {
    int distance_threads;  // a distance block's threads: one block per parameter pair (CUB's BlockReduce)
    std::size_t chunk;     // host arrays' elements per pinned chunk, two in flight (cuda_driver.cpp)
};
inline constexpr GpuPolicy kGpu{
    .distance_threads = 256,        // not timed
    .chunk = std::size_t{1} << 20,  // 8 MiB of doubles a chunk; not timed
};

template <class T>
void launch_evaluate(Function f, const Elementwise<T>& e, cudaStream_t stream);
template <class T>
void launch_sample(const Elementwise<T>& e, std::uint64_t seed, cudaStream_t stream);  // e.x unused
void launch_distances_fused(const DistanceProblem& p, cudaStream_t stream);
void launch_distances_naive(const DistanceProblem& p, MemoryTracker& tracker, cudaStream_t stream);

}  // namespace hpcml::detail::invgauss
