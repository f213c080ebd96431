// The sorted method on the GPU: a sort pass per operand, then sorted_block.hpp's block per
// 256 x 256 output block. docs/similarity.md explains the method and its costs.
//
// Sort pass: one 256-thread block per (segment, sample) sorts a sample's 256 values of x's band
// (or y's tile) by their order keys with CUB's BlockRadixSort, non-finite values (and positions
// past the operand's edge) last as +inf, and counts the finite ones. 6 bytes per value and sample.
//
// Cost model of the block (instructions per 32 pair-samples, a row's mask word of one sample):
// the mask is 4 shared loads of 16 bytes per 8 words (P[hi] and P[lo]) and an XOR per word;
// the carry-save cycle 7 full adders (14 LOP3) per 8 masks; the eights' ripple 14 LOP3 per 8; so
// about 5 instructions, against 3 x 32 = 96 for the fused kernel's compare-counts. Per sample
// the table adds about 4 instructions per word for 257 x 8 words, the ends a binary search and
// a walk per row, and the sort pass a few hundred per column; the machine-code report
// (bench/sass_report.py) reads the accumulation loop's count.
#include <cub/block/block_radix_sort.cuh>

#include "common/cuda_check.hpp"
#include "common/cuda_memory.hpp"
#include "cuda_launchers.hpp"
#include "sorted_block.hpp"

namespace hpcml::detail::similarity {

namespace {

using namespace sorted_gpu;

struct SortArgs {
    const float* data;  // the operand's first feature of the region
    std::size_t ld, samples;
    int extent;  // features in the region
    float* values;
    std::uint8_t* index;
    std::uint16_t* finite;
    std::size_t segments;
};

constexpr std::uint32_t kNonFinite = 0xffffffffu;  // above every finite value's order key

__global__ void __launch_bounds__(kThreads) sort_segments_kernel(const SortArgs a) {
    using Sort = cub::BlockRadixSort<std::uint32_t, kThreads, 1, std::uint8_t>;
    __shared__ typename Sort::TempStorage temp;
    const int t = static_cast<int>(threadIdx.x);
    const int i = static_cast<int>(blockIdx.x) * kSegment + t;
    for (std::size_t s = blockIdx.y; s < a.samples; s += gridDim.y) {
        const float v = i < a.extent ? a.data[s * a.ld + i] : __int_as_float(0x7fffffff);
        std::uint32_t key[1] = {isfinite(v) ? sorted::order_key(v) : kNonFinite};
        std::uint8_t position[1] = {static_cast<std::uint8_t>(t)};
        const int finite = __syncthreads_count(key[0] != kNonFinite);  // also: temp is free again
        Sort(temp).Sort(key, position);
        const std::size_t at = (s * a.segments + blockIdx.x) * kSegment + t;
        a.values[at] = key[0] == kNonFinite ? INFINITY : sorted::from_order_key(key[0]);
        a.index[at] = position[0];
        if (t == 0) a.finite[s * a.segments + blockIdx.x] = static_cast<std::uint16_t>(finite);
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

// The blocks of this kernel one SM holds, by the machine code's architecture: two where an SM has
// 228 KiB of shared memory (Hopper, Blackwell B200/B300: the compute_90 PTX too), one where it
// has 164 KiB (A100, Orin) or 100 KiB (GA10x, Ada, Blackwell GeForce). The launch bounds ask for
// that many, so that where one block fits the compiler may use 255 registers a thread instead of
// 128 (at 128 the count kernel keeps its 7 planes of eights in local memory). The layout (8
// samples a pass, 7 planes) is the same on every architecture, and so is count mode's limit of
// 1023 samples (kMostCountSamples, checked before any launch).
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ == 900 || __CUDA_ARCH__ == 1000 || __CUDA_ARCH__ == 1030)
constexpr int kSortedBlocksPerSm = 2;
#else
constexpr int kSortedBlocksPerSm = 1;
#endif

template <class Out>
__global__ void __launch_bounds__(kThreads, kSortedBlocksPerSm) similarity_sorted_kernel(const SortedArgs a) {
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
    const auto kernel = similarity_sorted_kernel<Out>;
    HPCML_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, sizeof(Shared)));
    return kernel;
}

// One operand's sorted segments on the device.
struct SortedOperand {
    detail::DeviceBuffer<float> values;
    detail::DeviceBuffer<std::uint8_t> index;
    detail::DeviceBuffer<std::uint16_t> finite;
    Segments view;
};

SortedOperand sort_operand(const float* data, std::size_t ld, std::size_t samples, std::size_t extent,
                           detail::MemoryTracker& tracker, cudaStream_t stream, const char* what) {
    SortedOperand op;
    const std::size_t segments = detail::ceil_div(extent, kSegment);
    const std::size_t values = detail::checked_mul(samples * segments, kSegment, what);
    op.values = detail::DeviceBuffer<float>(tracker, values, stream, what);
    op.index = detail::DeviceBuffer<std::uint8_t>(tracker, values, stream, what);
    op.finite = detail::DeviceBuffer<std::uint16_t>(tracker, samples * segments, stream, what);
    op.view = {op.values.data(), op.index.data(), op.finite.data(), segments};
    if (values == 0) return op;
    const SortArgs args{data,          ld, samples, static_cast<int>(extent), op.values.data(), op.index.data(),
                        op.finite.data(), segments};
    const dim3 grid(static_cast<unsigned>(segments), static_cast<unsigned>(std::min<std::size_t>(samples, 65535)));
    sort_segments_kernel<<<grid, kThreads, 0, stream>>>(args);
    HPCML_LAUNCH_CHECK("sort_segments_kernel");
    return op;
}

}  // namespace

LaunchBlocks sorted_blocks(const Problem& p) {
    std::size_t resident = 0;
    Outputs::visit(p.output, [&](auto entry) {
        const auto kernel = sorted_kernel<decltype(entry)>();
        resident = detail::resident_blocks(reinterpret_cast<const void*>(kernel), kThreads, sizeof(Shared));
    });
    return {kRows, kCols, resident};
}

namespace {

void launch(const Problem& p, const Region& region, const RegionOutput& out, detail::MemoryTracker& tracker,
            StreamHandle stream_handle, bool upper_blocks_only) {
    if (region.rows == 0 || region.cols == 0) return;
    const auto stream = static_cast<cudaStream_t>(stream_handle);
    // check_sorted_on_cuda (methods.cpp) refused more samples than the block counts, naming
    // them; here only a backstop, for a caller that skipped it (counts would wrap silently).
    if (p.mode == SimilarityMode::Count && p.samples > kMostCountSamples)
        detail::raise(ErrorKind::Internal, "similarity: the sorted kernel launched past its sample limit");
    detail::require(region.rows <= std::size_t{65535} * kRows && region.cols < (std::size_t{1} << 30),
                    "tile: at most 16776960 rows and 2^30 columns per tile on the GPU");
    const SortedOperand x = sort_operand(p.x + region.row0, p.ldx, p.samples, region.rows, tracker, stream,
                                         "similarity sorted x on device");
    // y's tiles are x's bands where they are the same values.
    const bool same = p.y == p.x && p.ldy == p.ldx && region.col0 == region.row0 && region.cols == region.rows;
    SortedOperand y;
    if (!same)
        y = sort_operand(p.y + region.col0, p.ldy, p.samples, region.cols, tracker, stream,
                         "similarity sorted y on device");
    const SortedArgs args{x.view,
                          same ? x.view : y.view,
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

void launch_sorted(const Problem& p, const Region& region, const RegionOutput& out, detail::MemoryTracker& tracker,
                   StreamHandle stream) {
    launch(p, region, out, tracker, stream, false);
}

void launch_sorted_upper(const Problem& p, const Region& region, const RegionOutput& out,
                         detail::MemoryTracker& tracker, StreamHandle stream) {
    launch(p, region, out, tracker, stream, true);
}

}  // namespace hpcml::detail::similarity
