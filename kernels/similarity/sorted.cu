// The sorted method on the GPU: a sort pass per operand, then sorted_block.hpp's block per
// 256 x 256 output block. docs/similarity.md explains the method and its costs.
//
// Sort pass: a warp per (segment, sample) sorts a sample's 256 values of x's band (or y's tile)
// by their order keys with CUB's WarpMergeSort, non-finite values (and positions past the
// operand's edge) last as +inf, and counts the finite ones: 5 bytes out per value and sample, about
// 220 instructions per value (bench/sass_report.py; CUB's BlockRadixSort, a 256-thread block per
// segment and 4-bit digits, took about 1,050 and 8 block barriers a digit). Once per call
// (prepare_sorted): each operand's ranges that the call's launches read, as runs
// (sorted_runs.hpp), sorted before the first launch and read by every launch; where they would
// not fit, and into a graph being captured, each launch sorts its own region's x band and y tiles.
//
// Cost model of the block (instructions per 32 pair-samples, a row's mask word of one sample):
// the mask is 4 shared loads of 16 bytes per 8 words (P[hi] and P[lo]) and an XOR per word;
// the carry-save cycle 7 full adders (14 LOP3) per 8 masks; the eights' ripple 14 LOP3 per 8; so
// about 5 instructions, against 3 x 32 = 96 for the fused kernel's compare-counts. Per sample
// the table adds about 4 instructions per word for 257 x 8 words, the ends a binary search and
// a walk per row; the machine-code report (bench/sass_report.py) reads the accumulation loop's
// count, and the sort pass's beside it.
#include <cub/warp/warp_merge_sort.cuh>

#include <atomic>

#include "common/cuda_check.hpp"
#include "common/cuda_memory.hpp"
#include "cuda_launchers.hpp"
#include "sorted_block.hpp"
#include "sorted_runs.hpp"

namespace hpcml::detail::similarity {

namespace {

using namespace sorted_gpu;

struct SortArgs {
    const float* data;  // the operand's first feature of the range
    std::size_t ld, samples;
    std::size_t extent;  // features in the range
    float* values;
    std::uint8_t* index;
    std::uint16_t* finite;
    std::size_t segments;       // per sample in the layout
    std::size_t first_segment;  // the range's first in it
};

constexpr std::uint32_t kNonFinite = 0xffffffffu;  // above every finite value's order key

struct KeyLess {
    __device__ bool operator()(std::uint32_t a, std::uint32_t b) const { return a < b; }
};

// A warp per (segment, sample): the lanes load the segment's values 32 apart (coalesced), CUB's
// WarpMergeSort sorts them, 8 a lane, and each lane stores its 8 consecutive ranks as two 16-byte
// values and 8 bytes of positions. No block barrier: a block's 8 warps sort 8 samples at a time.
constexpr int kSortItems = kSegment / 32;
constexpr int kSortWarps = kThreads / 32;

__global__ void __launch_bounds__(kThreads) sort_segments_kernel(const SortArgs a) {
    using Sort = cub::WarpMergeSort<std::uint32_t, kSortItems, 32, std::uint8_t>;
    __shared__ typename Sort::TempStorage temp[kSortWarps];
    const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
    const std::size_t first = std::size_t{blockIdx.x} * kSegment;
    for (std::size_t s = std::size_t{blockIdx.y} * kSortWarps + warp; s < a.samples;
         s += std::size_t{gridDim.y} * kSortWarps) {
        std::uint32_t key[kSortItems];
        std::uint8_t position[kSortItems];
        HPCML_DEVICE_UNROLL
        for (int k = 0; k < kSortItems; ++k) {
            const int p = lane + 32 * k;
            const float v = first + p < a.extent ? a.data[s * a.ld + first + p] : __int_as_float(0x7fffffff);
            key[k] = isfinite(v) ? sorted::order_key(v) : kNonFinite;
            position[k] = static_cast<std::uint8_t>(p);
        }
        Sort(temp[warp]).Sort(key, position, KeyLess{});
        const std::size_t segment = s * a.segments + a.first_segment + blockIdx.x;
        const std::size_t at = segment * kSegment + kSortItems * lane;  // 32-byte aligned
        float value[kSortItems];
        int finite = 0;
        HPCML_DEVICE_UNROLL
        for (int k = 0; k < kSortItems; ++k) {
            value[k] = key[k] == kNonFinite ? INFINITY : sorted::from_order_key(key[k]);
            finite += key[k] != kNonFinite;
        }
        reinterpret_cast<float4*>(a.values + at)[0] = make_float4(value[0], value[1], value[2], value[3]);
        reinterpret_cast<float4*>(a.values + at)[1] = make_float4(value[4], value[5], value[6], value[7]);
        uint2 packed{0, 0};
        HPCML_DEVICE_UNROLL
        for (int k = 0; k < kSortItems; ++k)
            (k < 4 ? packed.x : packed.y) |= std::uint32_t{position[k]} << (8 * (k % 4));
        *reinterpret_cast<uint2*>(a.index + at) = packed;
        HPCML_DEVICE_UNROLL
        for (int offset = 16; offset > 0; offset /= 2) finite += __shfl_xor_sync(0xffffffffu, finite, offset);
        if (lane == 0) a.finite[segment] = static_cast<std::uint16_t>(finite);
    }
}

// The kernel's threads: a step on this thread, then the block's barrier.
template <class St>
struct BlockThreads {
    St& state;
    template <class Step>
    __device__ void phase(const Step& step) {
        step(static_cast<int>(threadIdx.x), state);
        __syncthreads();
    }
    template <class Step>
    __device__ bool any(const Step& step) {
        return __syncthreads_or(step(static_cast<int>(threadIdx.x), state));
    }
};

// bench/sass_report.py reads the kernel's occupancy with this size.
static_assert(sizeof(Shared) == 96672, "bench/sass_report.py's SORTED_SHARED");

// The blocks of this kernel one SM holds on the machine code's architecture (SortedGpuPolicy; the
// compute_90 PTX as sm_90), at least one where the policy knows none.
#if defined(__CUDA_ARCH__)
constexpr int kSortedBlocksPerSm = std::max(1, sorted_gpu_policy(__CUDA_ARCH__ / 10).blocks_per_sm);
#else
constexpr int kSortedBlocksPerSm = 1;
#endif

// OneBlockPerSm: built for one block per SM whatever the policy (sorted_gpu_one_block_per_sm).
template <class Out, bool OneBlockPerSm>
__global__ void __launch_bounds__(kThreads, OneBlockPerSm ? 1 : kSortedBlocksPerSm)
    similarity_sorted_kernel(const SortedArgs a) {
    if (a.upper_blocks_only && blockIdx.y > blockIdx.x) return;  // the whole block: no barrier is left waiting
    extern __shared__ __align__(16) unsigned char shared_bytes[];
    Shared& sh = *reinterpret_cast<Shared*>(shared_bytes);
    State<Out> state;
    BlockThreads<State<Out>> threads{state};
    run_block<Out>(a, blockIdx.x, blockIdx.y, sh, threads);
}

// The kernel for output type Out, allowed its dynamic shared memory (past the default 48 KiB).
template <class Out>
auto sorted_kernel() {
    const auto kernel =
        sorted_gpu_one_block_per_sm() ? similarity_sorted_kernel<Out, true> : similarity_sorted_kernel<Out, false>;
    HPCML_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, sizeof(Shared)));
    return kernel;
}

// An operand's sorted segments on the device, `segments` per sample.
struct SortedOperand {
    detail::DeviceBuffer<float> values;
    detail::DeviceBuffer<std::uint8_t> index;
    detail::DeviceBuffer<std::uint16_t> finite;
    Segments view;

    SortedOperand() = default;
    SortedOperand(std::size_t samples, std::size_t segments, detail::MemoryTracker& tracker, cudaStream_t stream,
                  const char* what) {
        const std::size_t count = detail::checked_mul(detail::checked_mul(samples, segments, what), kSegment, what);
        values = detail::DeviceBuffer<float>(tracker, count, stream, what);
        index = detail::DeviceBuffer<std::uint8_t>(tracker, count, stream, what);
        finite = detail::DeviceBuffer<std::uint16_t>(tracker, samples * segments, stream, what);
        view = {values.data(), index.data(), finite.data(), segments};
    }

    // Features [start, start + extent) of `data` sorted into the segments from `first_segment`.
    void sort(const float* data, std::size_t ld, std::size_t samples, std::size_t start, std::size_t extent,
              std::size_t first_segment, cudaStream_t stream) {
        const std::size_t segments = detail::ceil_div(extent, kSegment);
        if (samples == 0 || segments == 0) return;
        const SortArgs args{data + start,  ld,         samples,      extent, values.data(), index.data(),
                            finite.data(), view.count, first_segment};
        const dim3 grid(static_cast<unsigned>(segments),
                        static_cast<unsigned>(std::min<std::size_t>(detail::ceil_div(samples, kSortWarps), 65535)));
        sort_segments_kernel<<<grid, kThreads, 0, stream>>>(args);
        HPCML_LAUNCH_CHECK("sort_segments_kernel");
    }
};

// One region's operand sorted for its launch alone (where the call has no sorted operands).
SortedOperand sort_region(const float* data, std::size_t ld, std::size_t samples, std::size_t start, std::size_t extent,
                          detail::MemoryTracker& tracker, cudaStream_t stream, const char* what) {
    SortedOperand op(samples, detail::ceil_div(extent, kSegment), tracker, stream, what);
    op.sort(data, ld, samples, start, extent, 0, stream);
    return op;
}

// A call's operands sorted once: x's runs and, where y is other memory, y's.
struct SortedCall final : CudaCall {
    CallRuns runs;
    SortedOperand x, y;
    bool y_is_x = false;

    // The sorted segments of a launch's range of x (or y), or none where no run serves it.
    bool view(bool of_y, std::size_t start, std::size_t extent, Segments& out) const {
        const bool in_x = !of_y || y_is_x;
        const long long first = (in_x ? runs.x : runs.y).first_segment(start, extent, kSegment);
        if (first < 0) return false;
        out = (in_x ? x : y).view.from(static_cast<std::size_t>(first));
        return true;
    }
};

std::atomic<bool> sort_per_launch_for_tests{false};

}  // namespace

LaunchBlocks sorted_blocks(const Problem& p) {
    std::size_t resident = 0;
    Outputs::visit(p.output, [&](auto entry) {
        const auto kernel = sorted_kernel<decltype(entry)>();
        resident = detail::resident_blocks(reinterpret_cast<const void*>(kernel), kThreads, sizeof(Shared));
    });
    return {kRows, kCols, resident};
}

std::unique_ptr<CudaCall> prepare_sorted(const Problem& p, const std::vector<Region>& launches,
                                         detail::MemoryTracker& tracker, StreamHandle stream_handle) {
    const auto stream = static_cast<cudaStream_t>(stream_handle);
    // Into a graph being captured, each launch sorts its own region's, as the memory check does
    // not run there: the graph frees each region's sorted operands after its launch, so it never
    // holds more than a region's.
    if (sort_per_launch_for_tests.load() || detail::capturing(stream)) return nullptr;
    auto call = std::make_unique<SortedCall>();
    call->y_is_x = p.y == p.x && p.ldy == p.ldx;
    call->runs = plan_call_runs(launches, call->y_is_x, kSegment);
    const std::size_t bytes_per_segment = kSegment * (sizeof(float) + sizeof(std::uint8_t)) + sizeof(std::uint16_t);
    const std::size_t bytes = detail::checked_mul(
        detail::checked_mul(p.samples, call->runs.x.segments + call->runs.y.segments, "similarity sorted operands"),
        bytes_per_segment, "similarity sorted operands");
    if (!detail::within_free_device_memory(bytes, 4)) return nullptr;  // a quarter: the launches' outputs keep room
    auto sort_runs = [&](const float* data, std::size_t ld, const SortRuns& runs, const char* what) {
        SortedOperand op(p.samples, runs.segments, tracker, stream, what);
        for (const SortRun& r : runs.runs) op.sort(data, ld, p.samples, r.start, r.extent, r.first_segment, stream);
        return op;
    };
    call->x = sort_runs(p.x, p.ldx, call->runs.x, "similarity sorted x on device");
    call->y = sort_runs(p.y, p.ldy, call->runs.y, "similarity sorted y on device");
    return call;
}

void set_sort_per_launch_for_tests(bool per_launch) { sort_per_launch_for_tests.store(per_launch); }

namespace {

void launch(const Problem& p, const Region& region, const RegionOutput& out, const CudaCall* state,
            detail::MemoryTracker& tracker, StreamHandle stream_handle, bool upper_blocks_only) {
    if (region.rows == 0 || region.cols == 0) return;
    const auto stream = static_cast<cudaStream_t>(stream_handle);
    // check_sorted_on_cuda (methods.cpp) refused more samples than the block counts, naming
    // them; here only a backstop, for a caller that skipped it (counts would wrap silently).
    if (p.mode == SimilarityMode::Count && p.samples > kMostCountSamples)
        detail::raise(ErrorKind::Internal, "similarity: the sorted kernel launched past its sample limit");
    detail::require(region.rows <= std::size_t{65535} * kRows && region.cols < (std::size_t{1} << 30),
                    "tile: at most 16776960 rows and 2^30 columns per tile on the GPU");
    // The call's sorted operands (prepare_sorted: the state is always the sorted method's own),
    // else this region's, sorted here; y's tiles are x's bands where they are the same values.
    const auto* call = static_cast<const SortedCall*>(state);
    Segments xs, ys;
    SortedOperand x_own, y_own;
    if (!call || !call->view(false, region.row0, region.rows, xs)) {
        x_own = sort_region(p.x, p.ldx, p.samples, region.row0, region.rows, tracker, stream,
                            "similarity sorted x on device");
        xs = x_own.view;
    }
    const bool same = p.y == p.x && p.ldy == p.ldx && region.col0 == region.row0 && region.cols == region.rows;
    if (same) {
        ys = xs;
    } else if (!call || !call->view(true, region.col0, region.cols, ys)) {
        y_own = sort_region(p.y, p.ldy, p.samples, region.col0, region.cols, tracker, stream,
                            "similarity sorted y on device");
        ys = y_own.view;
    }
    const SortedArgs args{xs,
                          ys,
                          p.samples,
                          static_cast<int>(region.rows),
                          static_cast<int>(region.cols),
                          p.threshold,
                          static_cast<unsigned char*>(out.data),
                          out.row_stride_bytes,
                          upper_blocks_only};
    const dim3 grid(static_cast<unsigned>(detail::ceil_div(region.cols, kCols)),
                    static_cast<unsigned>(detail::ceil_div(region.rows, kRows)));
    Outputs::visit(p.output, [&](auto entry) {
        sorted_kernel<decltype(entry)>()<<<grid, kThreads, sizeof(Shared), stream>>>(args);
        HPCML_LAUNCH_CHECK("similarity_sorted_kernel");
    });
}

}  // namespace

void launch_sorted(const Problem& p, const Region& region, const RegionOutput& out, const CudaCall* call,
                   detail::MemoryTracker& tracker, StreamHandle stream) {
    launch(p, region, out, call, tracker, stream, false);
}

void launch_sorted_upper(const Problem& p, const Region& region, const RegionOutput& out, const CudaCall* call,
                         detail::MemoryTracker& tracker, StreamHandle stream) {
    launch(p, region, out, call, tracker, stream, true);
}

}  // namespace hpcml::detail::similarity
