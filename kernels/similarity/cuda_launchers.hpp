// The similarity family's kernel launchers (fused.cu, sorted.cu, naive.cu, mirror.cu, select.cu), which cuda_driver.cpp calls;
// problem pointers are device pointers here, and `out` is device memory.
#pragma once

#include <cuda_runtime.h>

#include "backends.hpp"

namespace hpcml::detail::similarity {

// With upper_blocks_only (a region whose row0 == col0, where S is symmetric), the 128 x 128
// blocks below the region's diagonal are left unwritten, for launch_mirror_lower.
void launch_fused(const Problem& problem, const Region& region, const RegionOutput& out, cudaStream_t stream,
                  bool upper_blocks_only = false);

// out(a, b) = out(b, a) for every element of rows a in [row_begin, row_end) whose 128-block row
// a / 128 is below its block column b / 128, in the n x n output `out` (device memory,
// problem.output, rows of out_row_bytes): the symmetric paths' mirror of the blocks they
// computed. row_begin is a multiple of 128; rows [0, row_end) on and above the diagonal blocks
// must be written.
void launch_mirror_lower(const Problem& problem, void* out, std::size_t out_row_bytes, std::size_t row_begin,
                         std::size_t row_end, cudaStream_t stream);

// The sorted method (sorted.cu): a sort pass per operand into scratch from `tracker`, then one
// block per 256 x 256 output block. Count mode takes at most 1023 samples.
void launch_sorted(const Problem& problem, const Region& region, const RegionOutput& out,
                   detail::MemoryTracker& tracker, cudaStream_t stream);

void launch_naive(const Problem& problem, const Region& region, const RegionOutput& out, detail::MemoryTracker& tracker,
                  cudaStream_t stream);

// The elements of a region's output (rows x cols packed, Int32 or Bool) whose count reaches
// min_count (Bool: 1), in row-major order, into `selected`, and their number into
// *selected_count (device memory both); with temp == nullptr, only the temporary bytes the
// selection needs are returned (CUB's convention), else temp_bytes.
std::size_t select_passing(const unsigned char* out, SimilarityOutput output, std::size_t elements,
                           std::int32_t min_count, PassingElement* selected, unsigned long long* selected_count,
                           void* temp, std::size_t temp_bytes, cudaStream_t stream);

// A method's output blocks (rows x cols of the output each block computes) and how many of them
// the current device runs at once (for the kernel `problem` launches), for sizing launches.
struct LaunchBlocks {
    std::size_t rows = 0, cols = 0, resident = 0;
};
constexpr std::size_t kFusedBlockRows = 128, kFusedBlockCols = 128;
LaunchBlocks fused_blocks(const Problem& problem);
LaunchBlocks sorted_blocks(const Problem& problem);

}  // namespace hpcml::detail::similarity
