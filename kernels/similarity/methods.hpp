// The similarity methods as one table: what each runs on the CPU and on a CUDA device, what it
// refuses before any launch, whether it uses y = x, and where `auto` picks it. api.cpp,
// cuda_driver.cpp and cuda_pairs.cpp ask the table and name no method; a new method is one entry
// here plus its own files, its name in the public enum (include/hpcml/core.hpp,
// common/core.cpp), the Python Literal and the docs. No CUDA types: api.cpp includes it.
#pragma once

#include <hpcml/core.hpp>

#include <array>
#include <cstddef>
#include <memory>
#include <vector>

#include "backends.hpp"
#include "sorted_layout.hpp"  // the sorted block's shared memory

namespace hpcml::detail::similarity {

// A method's output blocks on a CUDA device (rows x cols of the output each block computes) and
// how many of them the current device runs at once, for sizing launches.
struct LaunchBlocks {
    std::size_t rows = 0, cols = 0, resident = 0;
};

// A cudaStream_t, opaque here so that the table needs no CUDA header.
using StreamHandle = void*;

// Device state a method makes once for a call's launches (the sorted method's sorted operands):
// the method's cuda_prepare makes it on one stream before them, from the regions they will
// compute, each of its launches reads it, and the call frees it once every stream is done.
struct CudaCall {
    virtual ~CudaCall() = default;
};

// The methods' CUDA launches (fused.cu, sorted.cu, naive.cu; no_cuda.cpp raises NoDevice in a
// build without CUDA): `region` of `problem` (device pointers) into `out` (device memory), on
// `stream`, with the call's state from the method's cuda_prepare (null: none); scratch from
// `tracker`, freed stream-ordered.
void launch_fused(const Problem& problem, const Region& region, const RegionOutput& out, const CudaCall* call,
                  MemoryTracker& tracker, StreamHandle stream);
// The fused kernel with the 128 x 128 blocks below a diagonal region's diagonal (row0 == col0)
// left unwritten, for launch_mirror_lower (cuda_launchers.hpp).
void launch_fused_upper(const Problem& problem, const Region& region, const RegionOutput& out, const CudaCall* call,
                        MemoryTracker& tracker, StreamHandle stream);
void launch_sorted(const Problem& problem, const Region& region, const RegionOutput& out, const CudaCall* call,
                   MemoryTracker& tracker, StreamHandle stream);
// The sorted kernel with the 256 x 256 blocks below a diagonal region's diagonal left unwritten
// (each covers only 128 x 128 blocks below it), for launch_mirror_lower.
void launch_sorted_upper(const Problem& problem, const Region& region, const RegionOutput& out, const CudaCall* call,
                         MemoryTracker& tracker, StreamHandle stream);
void launch_naive(const Problem& problem, const Region& region, const RegionOutput& out, const CudaCall* call,
                  MemoryTracker& tracker, StreamHandle stream);
LaunchBlocks fused_blocks(const Problem& problem);
LaunchBlocks sorted_blocks(const Problem& problem);
// The sorted method's operands sorted once for a call whose launches compute `launches`
// (sorted_runs.hpp), or null where they would take more than a quarter of the device's free
// memory, or the stream is being captured into a graph: then each launch sorts its own region's.
std::unique_ptr<CudaCall> prepare_sorted(const Problem& problem, const std::vector<Region>& launches,
                                         MemoryTracker& tracker, StreamHandle stream);
// Tests: every launch sorts its own region's operands, as where memory is short (not for
// concurrent calls).
void set_sort_per_launch_for_tests(bool per_launch);
// The fused GPU kernel's tuning (fused.cu; as CUB's tuning policies): it changes speed, never
// results. Its values are the machine-code report's prediction (docs/machine-code.md), timed only
// as a whole: 256 x 16384^2, y a copy, at 0.738 of the compare-count floor (H200, 819e221).
struct FusedGpuPolicy {
    std::size_t block_rows, block_cols;  // the output each block computes (the mirrored paths' bands: whole blocks)
    int stage_samples;                   // samples per shared-memory stage (and mode All's vote interval)
    int thread_rows, thread_cols;        // each thread's outputs (thread_cols 8: one bitmask byte per row)
    int blocks_per_sm;                   // __launch_bounds__'s minimum: at most 128 registers a thread
};
inline constexpr FusedGpuPolicy kFusedGpu{
    .block_rows = 128,   // with 8 x 8 a thread: 256 threads; no other block timed
    .block_cols = 128,   // square: x's and y's tiles share one load mapping
    .stage_samples = 16, // two float4 loads of x and of y per thread and stage; not timed against others
    .thread_rows = 8,    // 3.235 instructions per pair and sample predicted, 92.7% of the floor (sass report)
    .thread_cols = 8,    // as thread_rows; fixed by the bitmask store
    .blocks_per_sm = 2,  // 128 registers, 56-64 bytes spilled (sass report); one block a SM not timed
};

// What the sorted method refuses on a CUDA device: count mode counts at most 1023 samples (7 bit
// planes of eights, sorted_layout.hpp), and a tile's rows fill at most 65535 rows of blocks.
void check_sorted_on_cuda(const Problem& problem, const TilePlan& plan);
// Where `auto` runs the sorted method on the CPU: its measured cost model (docs/similarity.md).
bool sorted_pays_on_cpu(const Problem& problem);

struct MethodEntry {
    Method method;
    // The CPU on a region; with `mirror` (only where `symmetry`) its transpose written there too.
    void (*cpu)(const Problem&, const Region&, const RegionOutput&, MemoryTracker&, Progress*,
                const RegionOutput* mirror);
    // The CPU computes the caller's whole output as one region whatever the tile (a tile is a unit
    // of output, not of work); else tile by tile, its intermediates a tile's (as the seed's were).
    bool whole_output_on_cpu;
    bool symmetry;  // computes only what is on and above the diagonal where y is x (uses_symmetry)
    // CUDA: the call's state, made once before its launches (null: the method needs none); a
    // region's launch; the same with only the blocks on and above a diagonal region's diagonal,
    // for the mirrored paths (null: the method has none); the launch shape (null: one tile a
    // launch, for an intermediate that grows with the launch); a block's dynamic shared memory;
    // and the refusals checked when the backend is chosen (null: none).
    std::unique_ptr<CudaCall> (*cuda_prepare)(const Problem&, const std::vector<Region>&, MemoryTracker&, StreamHandle);
    void (*cuda_launch)(const Problem&, const Region&, const RegionOutput&, const CudaCall*, MemoryTracker&,
                        StreamHandle);
    void (*cuda_launch_upper)(const Problem&, const Region&, const RegionOutput&, const CudaCall*, MemoryTracker&,
                              StreamHandle);
    LaunchBlocks (*cuda_blocks)(const Problem&);
    std::size_t cuda_shared_bytes;
    void (*cuda_check)(const Problem&, const TilePlan&);
    // `auto`: the first entry (in table order) whose rule holds on the backend (null: never).
    bool (*auto_on_cpu)(const Problem&);
    bool (*auto_on_cuda)(const Problem&);
};

constexpr bool always(const Problem&) { return true; }

// On a CUDA device auto is the fused kernel: the sorted one has not been measured faster there.
inline constexpr std::array<MethodEntry, 3> kMethods{{
    {.method = Method::Sorted,
     .cpu = cpu_sorted,
     .whole_output_on_cpu = true,
     .symmetry = true,
     .cuda_prepare = prepare_sorted,
     .cuda_launch = launch_sorted,
     .cuda_launch_upper = launch_sorted_upper,
     .cuda_blocks = sorted_blocks,
     .cuda_shared_bytes = sizeof(sorted_gpu::Shared),
     .cuda_check = check_sorted_on_cuda,
     .auto_on_cpu = sorted_pays_on_cpu,
     .auto_on_cuda = nullptr},
    {.method = Method::Fused,
     .cpu = cpu_fused,
     .whole_output_on_cpu = true,
     .symmetry = true,
     .cuda_prepare = nullptr,
     .cuda_launch = launch_fused,
     .cuda_launch_upper = launch_fused_upper,
     .cuda_blocks = fused_blocks,
     .cuda_shared_bytes = 0,  // static shared memory only, under 48 KiB
     .cuda_check = nullptr,
     .auto_on_cpu = always,
     .auto_on_cuda = always},
    {.method = Method::Naive,
     .cpu = cpu_naive,
     .whole_output_on_cpu = false,
     .symmetry = false,
     .cuda_prepare = nullptr,
     .cuda_launch = launch_naive,
     .cuda_launch_upper = nullptr,
     .cuda_blocks = nullptr,
     .cuda_shared_bytes = 0,
     .cuda_check = nullptr,
     .auto_on_cpu = nullptr,
     .auto_on_cuda = nullptr},
}};

// The methods beside Auto, for the common dispatch.
inline constexpr std::array<Method, kMethods.size()> kMethodList = [] {
    std::array<Method, kMethods.size()> list{};
    for (std::size_t k = 0; k < kMethods.size(); ++k) list[k] = kMethods[k].method;
    return list;
}();

// A method's entry (Auto resolved first: method_on_cpu, cuda_method).
const MethodEntry& method_entry(Method method);

// Whether `method` computes only what is on and above the diagonal (symmetry_pays, backends.hpp).
inline bool uses_symmetry(const Problem& problem, Method method) {
    return method_entry(method).symmetry && symmetry_pays(problem);
}

// What the CPU runs for `requested`: Auto is the first entry whose auto_on_cpu holds.
Method method_on_cpu(const Problem& problem, Method requested);
// What a CUDA device whose blocks may have `max_shared_per_block` bytes runs for `requested`:
// Auto is the first entry whose auto_on_cuda holds, and a method whose block does not fit (the
// sorted one on Turing's 64 KiB) falls back to auto's choice, which RunStats::method reports.
Method cuda_method(const Problem& problem, Method requested, std::size_t max_shared_per_block);
// The device's opt-in shared memory per block (cuda_driver.cpp; the CUDA runtime's attribute).
std::size_t cuda_max_shared_per_block(int device);
// cuda_method on `device`, with the method's refusals for this problem and plan checked: what
// similarity's CUDA calls run, and report.
Method cuda_method_checked(const Problem& problem, const TilePlan& plan, Method requested, int device);

}  // namespace hpcml::detail::similarity
