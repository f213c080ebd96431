// The inverse-Gaussian family's CUDA side (fused.cu: elementwise, sampling and fused distances;
// naive.cu: the broadcast distances).
#pragma once

#include <cuda_runtime.h>

#include "invgauss_impl.hpp"

namespace hpcml::detail::invgauss {

// Host arrays: copied in, computed, copied out.
template <class T>
void cuda_evaluate_host(Function f, const Elementwise<T>& e, std::size_t mu_count, std::size_t lam_count,
                        const Context& context, MemoryTracker& tracker);
template <class T>
void cuda_sample_host(const Elementwise<T>& e, std::size_t mu_count, std::size_t lam_count, std::uint64_t seed,
                      const Context& context, MemoryTracker& tracker);
// Device arrays, on context.stream.
template <class T>
void cuda_evaluate_device(Function f, const Elementwise<T>& e, const Context& context);
// Host parameters and results.
void cuda_distances(const DistanceProblem& p, Method method, const Context& context, MemoryTracker& tracker);
// The naive broadcast (naive.cu) on device parameters and results.
void launch_distances_naive(const DistanceProblem& p, MemoryTracker& tracker, cudaStream_t stream);

}  // namespace hpcml::detail::invgauss
