// The similarity family's kernel launchers (fused.cu, naive.cu), which cuda_driver.cpp calls;
// problem pointers are device pointers here, and `out` is device memory.
#pragma once

#include <cuda_runtime.h>

#include "backends.hpp"

namespace hpcml::detail::similarity {

void launch_fused(const Problem& problem, const Region& region, const RegionOutput& out, cudaStream_t stream);

void launch_naive(const Problem& problem, const Region& region, const RegionOutput& out,
                  detail::MemoryTracker& tracker, cudaStream_t stream);

// Output blocks of the fused kernel, and how many of them the current device runs at once
// (for the kernel `problem` launches), for sizing launches.
constexpr std::size_t kFusedBlockRows = 128, kFusedBlockCols = 128;
std::size_t fused_resident_blocks(const Problem& problem);

}  // namespace hpcml::detail::similarity
