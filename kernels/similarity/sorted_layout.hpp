// The sorted method's GPU block (sorted_block.hpp) laid out: its constants, the sort pass's
// segments it reads, its arguments, its shared memory and its tuning policy per architecture.
// Host code reads it too (methods.hpp: the shared memory a launch asks for, the limits checked
// before any launch).
//
// Shared memory: 96,672 bytes, so 2 blocks per SM on Hopper (1 on Ampere and Ada: SortedGpuPolicy). Table rows are 32
// bytes; their two 16-byte halves swap places where bit 2 of the rank is set, so that 8 threads reading the same half
// of random rows spread over all 8 of a bank's 16-byte groups (the table build's stores are conflict-free either way).
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/architectures.hpp"
#include "common/hd.hpp"

namespace hpcml::detail::similarity::sorted_gpu {

constexpr int kThreads = 256;
constexpr int kSegment = 256;  // values of a sorted segment: a band's rows, a tile's columns
constexpr int kRows = kSegment, kCols = kSegment;
static_assert(kRows == kThreads, "one row per thread");
constexpr int kWords = kCols / 32;   // a row's mask words
constexpr int kChunks = kCols / 32;  // 32-rank chunks of the table's build
constexpr int kGroup = 8;            // samples per pass: one carry-save cycle
constexpr int kHiPlanes = 7;         // counts of eights, to 127
constexpr std::size_t kMostCountSamples = kGroup * ((1 << kHiPlanes) - 1) + kGroup - 1;  // count mode's: 1023

// A sort pass's output for one operand: per sample and segment, its values in ascending order
// (the finite ones, then +inf for the rest and for positions past the operand's edge: a value
// no end's walk passes), each one's position in the segment, and how many are finite.
struct Segments {
    const float* values = nullptr;          // [sample][segment][kSegment]
    const std::uint8_t* index = nullptr;    // [sample][segment][kSegment]
    const std::uint16_t* finite = nullptr;  // [sample][segment]
    std::size_t count = 0;                  // segments per sample
    HPCML_HD std::size_t at(std::size_t sample, std::size_t segment) const { return sample * count + segment; }
    // The segments from `first` on: a launch's range in a call's sorted runs (sorted_runs.hpp).
    HPCML_HD Segments from(std::size_t first) const {
        return {values + first * kSegment, index + first * kSegment, finite + first, count};
    }
};

struct SortedArgs {
    Segments x, y;  // x in bands of rows, y in tiles of columns, both from the region's start
    std::size_t samples = 0;
    int rows = 0, cols = 0;  // the region's extent
    float threshold = 1.0f;
    unsigned char* out = nullptr;    // the region's first element
    std::size_t out_stride = 0;      // bytes
    bool upper_blocks_only = false;  // a region on the diagonal of S = S^T: blocks below it are mirrored later
};

// Four words of a table row, read as one 16-byte shared load.
struct alignas(16) Quad {
    std::uint32_t word[4];
};
static_assert(kWords == 8, "a table row is two quads");

struct Shared {
    Quad table[kGroup][kCols + 1][2];              // first: 16-byte aligned
    float y[kGroup][kCols + 4], x[kGroup][kRows];  // y[g][kCols] = +inf ends every walk
    std::uint32_t carry[kGroup][kChunks][kWords];
    std::uint32_t ends[kGroup][kRows];  // by row: lo | hi << 16
    std::uint8_t ycol[kGroup][kCols], xrow[kGroup][kRows];
    std::uint32_t nx[kGroup];  // x's finite values: the rows past them keep the empty interval
};

// The sorted kernel's tuning on compute capability sm / 10 . sm % 10 (as CUB's tuning policies;
// kFusedGpu in methods.hpp is the fused kernel's): it changes speed, never results. The layout
// (kGroup samples a pass, kHiPlanes planes of eights) is the same on every architecture, and so
// is count mode's limit, which check_sorted_on_cuda (methods.cpp) checks before any launch; the
// blocks an SM holds follow from its shared memory (2 on Hopper and Blackwell B200/B300, 1 on
// Ampere, Ada and Blackwell GeForce, 0 on Turing: there the fused kernel runs), and the kernel's
// __launch_bounds__ asks for that many, so that where one fits the compiler may give a thread
// 255 registers instead of 128 (at 128 the count kernel keeps its planes of eights in local memory).
struct SortedGpuPolicy {
    int pass_samples, eights_planes, blocks_per_sm;
    std::size_t most_count_samples;
};
constexpr SortedGpuPolicy sorted_gpu_policy(int sm) {
    return {kGroup, kHiPlanes, blocks_per_sm_by_shared_memory(sm, sizeof(Shared)), kMostCountSamples};
}

// HPCML_SORTED_GPU_BLOCKS_PER_SM=1 runs the kernel built for one block per SM, whatever the
// policy says (on Hopper: 8 warps an SM instead of 16, and no spilled planes), so that a GPU
// measures the policy's choice against it (the GPU suite does); unset or empty, the policy's;
// anything else is refused, naming it (methods.cpp).
bool sorted_gpu_one_block_per_sm();

}  // namespace hpcml::detail::similarity::sorted_gpu
