// similarity_fused_kernel: S[i,j] = #{s : |x[s,i] - y[s,j]| < t} for one output region,
// an SGEMM whose multiply-add is a compare-count.
//
// Operands: x[s * ldx + i] and y[s * ldy + j], both laid out like SGEMM's B operand (the
// reduction index s outer, the output index contiguous), so both tiles load coalesced with
// 16-byte vectors and need no transpose. Output: row i of the region at out + i * stride.
//
// Tiling: a 256-thread block owns a 128 x 128 output tile and walks the samples 16 at a time
// through shared memory (16 x 128 floats of x and of y, 16 KiB); each thread keeps an 8 x 8
// block of counts in registers, so every shared-memory float it reads feeds 8 compare-counts.
// The next 16 samples are fetched into registers while the current ones are counted.
// Samples past the end and features past the region edge are loaded as NaN, which never
// compares true, so partial tiles need no special inner loop.
//
// Cost model: 3 instructions per pair and sample (FADD d = x - y, FSET.BF |d| < t giving 1.0
// or 0.0, FADD into the count), so the issue-rate floor on sm_90 is 128 / 3 = 42.7
// pair-samples per clock per SM: about 1.1e13 /s on a 132-SM H100 SXM at 1.98 GHz. Counts
// are floats, exact below 2^24 samples; above that the kernel counts in integers, which nvcc
// compiles to 4 instructions (FSETP, then an add and a predicated move back). Memory is negligible: each loaded float
// is reused 128 times, and the output is 4 bytes per pair against n_samples compare-counts. All mode stops a block once
// none of its pairs passed every sample so far (a block vote every 16 samples); on random data that is after the
// first 16. Registers (ptxas, sm_90): 128, the launch bounds' cap, with 52-180 bytes spilled; in the float-count
// variants the spills are loop-invariant addresses reloaded once per 16-sample stage (a few local loads per 3072
// compare instructions), none inside the compare loop. The machine-code report (bench/sass_report.py) reads 3.235
// instructions per pair-sample (int32 counts) at 2 blocks per SM: 92.7% of the floor, predicted
// (docs/machine-code.md). Outputs: each thread stores a row's 8 counts as one or two vectors where the row is aligned.
#include <cstdint>

#include "common/cuda_check.hpp"
#include "cuda_launchers.hpp"
#include "math.hpp"

namespace hpcml::detail::similarity {

namespace {

// kFusedGpu's values under the names the kernel's index arithmetic uses.
constexpr int kBM = static_cast<int>(kFusedGpu.block_rows);
constexpr int kBN = static_cast<int>(kFusedGpu.block_cols);
constexpr int kBK = kFusedGpu.stage_samples;
constexpr int kTM = kFusedGpu.thread_rows, kTN = kFusedGpu.thread_cols;
constexpr int kThreads = (kBM / kTM) * (kBN / kTN);        // 256
constexpr int kLoadsPerThread = kBK * kBM / 4 / kThreads;  // float4 loads of x (and y): 2
static_assert(kBM == kBN, "x and y tiles share one load mapping");

struct FusedArgs {
    const float* x;  // offset to the region's first row feature
    const float* y;  // offset to the region's first column feature
    std::size_t ldx, ldy, samples;
    int rows, cols;  // region extent (<= a launch's grid coverage)
    float threshold;
    unsigned char* out;
    std::size_t out_stride;  // bytes
    bool upper_blocks_only;  // a region on the diagonal of S = S^T: blocks below it are mirrored later
};

// Four consecutive features of sample s, NaN past the sample count or the feature limit.
template <bool Vec4>
__device__ __forceinline__ float4 load4(const float* base, std::size_t ld, std::size_t s, std::size_t samples, int col,
                                        int limit) {
    const float nan = __int_as_float(0x7fffffff);
    if (s >= samples) return make_float4(nan, nan, nan, nan);
    const float* p = base + s * ld + col;
    if (Vec4 && col + 3 < limit) return *reinterpret_cast<const float4*>(p);
    return make_float4(col + 0 < limit ? p[0] : nan, col + 1 < limit ? p[1] : nan, col + 2 < limit ? p[2] : nan,
                       col + 3 < limit ? p[3] : nan);
}

// Writes a thread's 8 x 8 counts, as the kernel kept them (float or unsigned; whole numbers
// either way), in the encoding of Out, an entry of the output table (Outputs, math.hpp).
static_assert(kTN == 8, "one bitmask byte per thread row");
template <class T>
constexpr std::size_t kVectorBytes = sizeof(T) * kTN < 16 ? sizeof(T) * kTN : 16;  // one store's alignment
template <class Out>
struct Store {
    template <class Count>
    __device__ static void store(const Count (&counts)[kTM][kTN], const FusedArgs& a, int r, int c) {
        const auto samples = static_cast<std::uint32_t>(a.samples);
        if constexpr (Out::bits) {
            // A thread's 8 columns start at a multiple of 8, so each row's 8 results are one byte.
            if (c >= a.cols) return;
            const auto valid = static_cast<unsigned>(a.cols - c);
            for (int i = 0; i < kTM && r + i < a.rows; ++i) {
                a.out[static_cast<std::size_t>(r + i) * a.out_stride + c / 8] = encode_bitmask_byte(
                    [&](unsigned j) { return all_within(static_cast<unsigned>(counts[i][j]), samples); }, valid);
            }
        } else {
            using T = typename Out::Element;
            for (int i = 0; i < kTM && r + i < a.rows; ++i) {
                T* row = reinterpret_cast<T*>(a.out + static_cast<std::size_t>(r + i) * a.out_stride) + c;
                alignas(16) T encoded[kTN];  // stored through 8- or 16-byte vectors below
#pragma unroll
                for (int j = 0; j < kTN; ++j) encoded[j] = Out::encode(static_cast<unsigned>(counts[i][j]), samples);
                // The thread's 8 elements start at a multiple of 8 elements, so they are one or two
                // vectors wherever the row itself starts on a vector boundary and all 8 are inside.
                if (c + kTN <= a.cols && reinterpret_cast<std::uintptr_t>(row) % kVectorBytes<T> == 0) {
                    store_vectors(row, encoded);
                } else {
#pragma unroll
                    for (int j = 0; j < kTN; ++j)
                        if (c + j < a.cols) row[j] = encoded[j];
                }
            }
        }
    }

    // A row's 8 elements: 8, 16 or 32 bytes, written as one 8-byte or one or two 16-byte stores.
    template <class T>
    __device__ static void store_vectors(T* row, const T (&encoded)[kTN]) {
        if constexpr (sizeof(T) * kTN == 8) {
            *reinterpret_cast<uint2*>(row) = *reinterpret_cast<const uint2*>(encoded);
        } else {
#pragma unroll
            for (std::size_t p = 0; p < sizeof(T) * kTN / 16; ++p)
                reinterpret_cast<uint4*>(row)[p] = reinterpret_cast<const uint4*>(encoded)[p];
        }
    }
};

// Float counts are exact integers below 2^24: every sample adds 1.0f or 0.0f.
constexpr std::size_t kFloatCountLimit = std::size_t{1} << 24;

template <class Store, bool Vec4, bool StopWhenDead, class Count>
__global__ void __launch_bounds__(kThreads, kFusedGpu.blocks_per_sm) similarity_fused_kernel(const FusedArgs a) {
    __shared__ __align__(16) float xs[kBK][kBM];
    __shared__ __align__(16) float ys[kBK][kBN];

    if (a.upper_blocks_only && blockIdx.y > blockIdx.x) return;  // the whole block: no barrier is left waiting
    const int tid = static_cast<int>(threadIdx.x);
    const int tx = tid % (kBN / kTN);
    const int ty = tid / (kBN / kTN);
    const int block_row = static_cast<int>(blockIdx.y) * kBM;
    const int block_col = static_cast<int>(blockIdx.x) * kBN;

    float4 x_next[kLoadsPerThread], y_next[kLoadsPerThread];
    auto fetch = [&](std::size_t s0) {
#pragma unroll
        for (int p = 0; p < kLoadsPerThread; ++p) {
            const int f = tid + p * kThreads;
            const int k = f / (kBM / 4), c4 = f % (kBM / 4) * 4;
            x_next[p] = load4<Vec4>(a.x, a.ldx, s0 + k, a.samples, block_row + c4, a.rows);
            y_next[p] = load4<Vec4>(a.y, a.ldy, s0 + k, a.samples, block_col + c4, a.cols);
        }
    };
    auto stash = [&] {
#pragma unroll
        for (int p = 0; p < kLoadsPerThread; ++p) {
            const int f = tid + p * kThreads;
            const int k = f / (kBM / 4), c4 = f % (kBM / 4) * 4;
            *reinterpret_cast<float4*>(&xs[k][c4]) = x_next[p];
            *reinterpret_cast<float4*>(&ys[k][c4]) = y_next[p];
        }
    };

    Count counts[kTM][kTN] = {};
    const float t = a.threshold;
    fetch(0);
    stash();
    __syncthreads();  // stage 0 visible to all threads
    for (std::size_t s0 = 0; s0 < a.samples; s0 += kBK) {
        const bool more = s0 + kBK < a.samples;
        if (more) fetch(s0 + kBK);  // in flight while this stage is counted
#pragma unroll
        for (int k = 0; k < kBK; ++k) {
            alignas(16) float xr[kTM], yr[kTN];  // read through float4 below
            *reinterpret_cast<float4*>(&xr[0]) = *reinterpret_cast<const float4*>(&xs[k][ty * kTM]);
            *reinterpret_cast<float4*>(&xr[4]) = *reinterpret_cast<const float4*>(&xs[k][ty * kTM + 4]);
            *reinterpret_cast<float4*>(&yr[0]) = *reinterpret_cast<const float4*>(&ys[k][tx * kTN]);
            *reinterpret_cast<float4*>(&yr[4]) = *reinterpret_cast<const float4*>(&ys[k][tx * kTN + 4]);
#pragma unroll
            for (int i = 0; i < kTM; ++i)
#pragma unroll
                for (int j = 0; j < kTN; ++j) counts[i][j] += within_threshold(xr[i], yr[j], t) ? Count{1} : Count{0};
        }
        if constexpr (StopWhenDead) {
            const auto seen = static_cast<Count>(more ? s0 + kBK : a.samples);
            bool alive = false;
#pragma unroll
            for (int i = 0; i < kTM; ++i)
#pragma unroll
                for (int j = 0; j < kTN; ++j) alive |= counts[i][j] == seen;
            // Block-wide vote; also the barrier before the stage is overwritten.
            if (!__syncthreads_or(alive)) break;
        } else {
            __syncthreads();  // every thread is done reading this stage before it is overwritten
        }
        if (more) {
            stash();
            __syncthreads();  // the next stage is visible before it is counted
        }
    }
    Store::store(counts, a, block_row + ty * kTM, block_col + tx * kTN);
}

using FusedKernel = void (*)(FusedArgs);

template <class Store, bool StopWhenDead>
FusedKernel with_loads(bool vec4, bool float_counts) {
    if (float_counts)
        return vec4 ? similarity_fused_kernel<Store, true, StopWhenDead, float>
                    : similarity_fused_kernel<Store, false, StopWhenDead, float>;
    return vec4 ? similarity_fused_kernel<Store, true, StopWhenDead, unsigned>
                : similarity_fused_kernel<Store, false, StopWhenDead, unsigned>;
}

// The instantiation that writes `output`, with 16-byte loads when `vec4`, counting in floats
// where they are exact.
FusedKernel fused_kernel(SimilarityOutput output, bool vec4, std::size_t samples) {
    const bool float_counts = samples < kFloatCountLimit;
    FusedKernel kernel = nullptr;
    Outputs::visit(output, [&](auto entry) {
        using Out = decltype(entry);
        // Mode All stops a block once none of its pairs can pass any more.
        kernel = with_loads<Store<Out>, Out::mode == SimilarityMode::All>(vec4, float_counts);
    });
    if (!kernel) detail::raise(ErrorKind::Internal, "similarity: unresolved output type");
    return kernel;
}

bool aligned16(const float* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

// Whole float4 loads need every row of x and y to start on 16 bytes.
bool vec4_loads(const float* x, std::size_t ldx, const float* y, std::size_t ldy) {
    return ldx % 4 == 0 && ldy % 4 == 0 && aligned16(x) && aligned16(y);
}

}  // namespace

LaunchBlocks fused_blocks(const Problem& p) {
    const FusedKernel kernel = fused_kernel(p.output, vec4_loads(p.x, p.ldx, p.y, p.ldy), p.samples);
    return {kFusedGpu.block_rows, kFusedGpu.block_cols,
            detail::resident_blocks(reinterpret_cast<const void*>(kernel), kThreads, 0)};
}

namespace {

void launch(const Problem& p, const Region& region, const RegionOutput& out, cudaStream_t stream,
            bool upper_blocks_only) {
    if (region.rows == 0 || region.cols == 0) return;
    // gridDim.y is at most 65535; columns go on x, which reaches 2^31 - 1.
    detail::require(region.rows <= std::size_t{65535} * kBM && region.cols < (std::size_t{1} << 30),
                    "tile: at most 8388480 rows and 2^30 columns per tile on the GPU");
    FusedArgs args{p.x + region.row0,
                   p.y + region.col0,
                   p.ldx,
                   p.ldy,
                   p.samples,
                   static_cast<int>(region.rows),
                   static_cast<int>(region.cols),
                   p.threshold,
                   static_cast<unsigned char*>(out.data),
                   out.row_stride_bytes,
                   upper_blocks_only};
    const FusedKernel kernel = fused_kernel(p.output, vec4_loads(args.x, p.ldx, args.y, p.ldy), p.samples);
    const dim3 grid(static_cast<unsigned>((args.cols + kBN - 1) / kBN),
                    static_cast<unsigned>((args.rows + kBM - 1) / kBM));
    kernel<<<grid, kThreads, 0, stream>>>(args);
    HPCML_LAUNCH_CHECK("similarity_fused_kernel");
}

}  // namespace

void launch_fused(const Problem& p, const Region& region, const RegionOutput& out, const CudaCall*, MemoryTracker&,
                  StreamHandle stream) {
    launch(p, region, out, static_cast<cudaStream_t>(stream), false);
}

void launch_fused_upper(const Problem& p, const Region& region, const RegionOutput& out, const CudaCall*,
                        MemoryTracker&, StreamHandle stream) {
    launch(p, region, out, static_cast<cudaStream_t>(stream), true);
}

}  // namespace hpcml::detail::similarity
