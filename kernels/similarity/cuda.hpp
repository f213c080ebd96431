// The similarity family's CUDA launchers (fused.cu, naive.cu); problem pointers are device
// pointers here, and `out` is device memory.
#pragma once

#include <cuda_runtime.h>

#include "similarity_impl.hpp"

namespace hpcml::detail::similarity {

void launch_fused(const Problem& problem, const Region& region, const RegionOutput& out, cudaStream_t stream);

void launch_naive(const Problem& problem, const Region& region, const RegionOutput& out,
                  detail::MemoryTracker& tracker, cudaStream_t stream);

// Output blocks of the fused kernel, for sizing launches.
constexpr std::size_t kFusedBlockRows = 128, kFusedBlockCols = 128;

}  // namespace hpcml::detail::similarity
