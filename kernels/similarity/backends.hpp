// The similarity family as its backends see it: the problem, the output region one backend
// call fills, and the backends' entry points (cpu.cpp; cuda_driver.cpp for the CUDA backend).
// No CUDA types: api.cpp includes it alone. The output layout and encodings are math.hpp's.
#pragma once

#include <hpcml/similarity.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string_view>
#include <utility>

#include "common/memory.hpp"
#include "common/progress.hpp"
#include "math.hpp"

namespace hpcml::detail::similarity {

struct Problem {
    const float* x = nullptr;  // x[s * ldx + i]
    const float* y = nullptr;  // y[s * ldy + j]
    std::size_t ldx = 0, ldy = 0;
    std::size_t samples = 0, n = 0, m = 0;
    float threshold = 1.0f;
    SimilarityMode mode = SimilarityMode::Count;
    SimilarityOutput output = SimilarityOutput::Int32;  // resolved, never Default
    // y is x (the same memory and view): S is symmetric, exactly (|a - b| = |b - a| in floats).
    // Whether a method uses it is uses_symmetry's question (methods.hpp).
    bool symmetric = false;

    // The same problem over copies of its operands (the GPU's, packed: ld = columns).
    Problem with_operands(const float* x_copy, std::size_t ldx_copy, const float* y_copy, std::size_t ldy_copy) const {
        Problem p = *this;
        p.x = x_copy;
        p.ldx = ldx_copy;
        p.y = y_copy;
        p.ldy = ldy_copy;
        return p;
    }
};

// Rows [row0, row0 + rows) of x's features against columns [col0, col0 + cols) of y's.
struct Region {
    std::size_t row0 = 0, col0 = 0, rows = 0, cols = 0;
};

// Where a region's results go: element (r, c) of the region is in row r, which starts at
// data + r * row_stride_bytes. For Bitmask, the region's col0 is a multiple of 8.
struct RegionOutput {
    void* data = nullptr;
    std::size_t row_stride_bytes = 0;
};

// CPU backend (cpu.cpp). Fused: register-blocked SIMD over 4 x 16 output blocks, threads over
// blocks, no intermediate; with `mirror` (y is x, a region off the diagonal) each stored block
// is also written transposed there, mirror(b, a) = S(a, b) for the rows x cols region. Naive:
// NumPy's broadcast, materialising samples x rows x cols differences and a boolean mask per
// region (checked against available memory first).
//
// Progress, one convention for every method: a CPU method adds to `progress` (where it is given)
// exactly the elements of its `region`, as it finishes them, and nothing for `mirror`: a mirror's
// elements are added by whoever planned that mirror (the tile loops in api.cpp, the sorted
// method's strips), whether it was written or is covered by symmetry (a pair list adds the
// mirrored pairs itself). A diagonal region's mirrored half is part of the region.
void cpu_fused(const Problem& problem, const Region& region, const RegionOutput& out, detail::MemoryTracker& tracker,
               detail::Progress* progress, const RegionOutput* mirror = nullptr);
// Sorted (cpu_sorted.cpp): per sample, y sorted within tiles and x within bands, rank intervals
// found by merging them, counted as bit masks; the same arguments and results as cpu_fused.
void cpu_sorted(const Problem& problem, const Region& region, const RegionOutput& out, detail::MemoryTracker& tracker,
                detail::Progress* progress, const RegionOutput* mirror = nullptr);
// Naive (cpu_naive.cpp): the broadcast baseline, tile by tile; `mirror` must be null (it never
// uses y = x).
void cpu_naive(const Problem& problem, const Region& region, const RegionOutput& out, detail::MemoryTracker& tracker,
               detail::Progress* progress, const RegionOutput* mirror = nullptr);

// A region's progress units: its output elements.
inline std::uint64_t units(const Region& region) { return std::uint64_t{region.rows} * region.cols; }

// Where y is x, a method that can (methods.hpp: uses_symmetry) computes S on and above the
// diagonal only and mirrors the rest, where that pays: with few samples a pair costs less than
// its mirrored copy.
inline bool symmetry_pays(const Problem& problem) { return problem.symmetric && problem.samples >= 16; }

// Symmetry on the CPU (symmetry_pays): with problem.symmetric, cpu_fused computes a region
// on the diagonal (row0 == col0, rows == cols) from its items on and above the diagonal and
// writes the rest as their mirror while it stores them; an off-diagonal region's mirror goes
// to cpu_fused's `mirror`. cpu_transpose is the mirror of a finished tile (the public
// similarity_transpose): dst(a, b) = src(b, a) for the rows x cols block `src`.
void cpu_transpose(const Problem& problem, const RegionOutput& src, std::size_t rows, std::size_t cols,
                   const RegionOutput& dst);

// A call's tiles: the public plan (similarity_tile_plan; symmetric where the CPU uses symmetry,
// so that tile (I, J) mirrors tile (J, I)) and the edges launches and buffers are sized by, its
// first tile's (at least 1).
struct TilePlan {
    explicit TilePlan(SimilarityTilePlan public_plan)
        : tiles(std::move(public_plan)),
          tile_rows(std::max<std::size_t>(tiles.row_blocks.front(), 1)),
          tile_cols(std::max<std::size_t>(tiles.col_blocks.front(), 1)) {}
    SimilarityTilePlan tiles;
    std::size_t tile_rows, tile_cols;
};

// A planned tile or band as a backend's region.
inline Region region_of(const SimilarityPlannedTile& t) { return {t.row0, t.col0, t.rows, t.cols}; }

// A pair list's element of a region: its index in the region (row-major, row * cols + col)
// and its count (mode All: 1).
struct PassingElement {
    std::uint32_t index;
    std::int32_t count;
};
static_assert(sizeof(PassingElement) == 8, "the same 8 bytes on the host and the device");
using PassingSink = std::function<void(const Region& region, const PassingElement* passing, std::size_t count)>;

// CUDA backend (cuda_driver.cpp; in a build without CUDA, common/no_cuda.cpp raises NoDevice). Host inputs: x and y are
// copied to the device once, tiles are computed several per launch and streamed back through pinned buffers on two
// streams, each finished tile handed to `sink` (no symmetry: every byte of S crosses PCIe anyway, and that copy, not
// the kernel, bounds the time unless samples are in the thousands). Device inputs: everything stays on the device and
// `out` (device memory, n x m packed) is filled in place, using the symmetry (uses_symmetry: blocks on and above the
// diagonal, then a mirror kernel).
void cuda_run_host(const Problem& problem, const TilePlan& plan, Method method, const SimilarityTileSink& sink,
                   const Context& context, detail::MemoryTracker& tracker);
// The same into the caller's n x m output `out` (host memory, packed): where it is page-locked
// (cudaHostAlloc, cudaHostRegister, a pinned torch tensor: the runtime is asked) each group is
// copied from the device straight into it; otherwise through the pinned buffers, copied out by
// several threads (host_copy_rows) while the next groups compute. `delivered` is told each
// group's elements once they are in `out`, on the calling thread.
void cuda_run_host_into(const Problem& problem, const TilePlan& plan, Method method, unsigned char* out,
                        const std::function<void(std::uint64_t)>& delivered, const Context& context,
                        detail::MemoryTracker& tracker);
void cuda_run_device(const Problem& problem, const TilePlan& plan, Method method, void* out, const Context& context,
                     detail::MemoryTracker& tracker);
// A pair list from host inputs (copied to the device once) or device inputs (on_device; the
// work then runs on context.stream): each launch's output (problem.output Int32 or Bool) is
// reduced on the device to its elements reaching min_count (select_passing), and only those
// are copied back and handed to `sink`, region by region.
void cuda_run_pairs(const Problem& problem, bool on_device, const TilePlan& plan, Method method, std::int32_t min_count,
                    const PassingSink& sink, const Context& context, detail::MemoryTracker& tracker);
// The same from device inputs with the pairs left on the device (similarity_pairs_on_device):
// each region's selection appended there as keys (row * m + column) and counts, sorted by key
// where a row's columns came in more than one region, then written as rows, columns and counts
// into the memory `allocate` gives, on context.stream.
void cuda_run_pairs_on_device(const Problem& problem, const TilePlan& plan, Method method, std::int32_t min_count,
                              const SimilarityDevicePairsAllocator& allocate, const Context& context,
                              detail::MemoryTracker& tracker);

}  // namespace hpcml::detail::similarity
