// The sorted method's GPU block (sorted.cu), written once for the GPU and for the CPU tests:
// every step is a function of (thread, shared memory, the thread's registers) between two
// barriers, which the kernel runs on its 256 threads and the tests run as a loop over them
// (SerialThreads below), so the CPU tests check the kernel's logic, if not its scheduling.
//
// A block owns 256 rows of x (a thread each) and 256 columns of y (8 words of 32 bits per row).
// Before it runs, a sort pass (sorted.cu) has sorted every sample's values within x's 256-row
// bands and y's 256-column tiles. Per pass of 8 samples the block
//   1. loads the 8 samples' sorted band and tile into shared memory;
//   2. finds each row's rank interval [lo, hi) in the tile: 16 threads per sample and end, each
//      merging 16 consecutive sorted rows (one binary search, then a walk), and ORs each rank's
//      column bit into its 32-rank chunk's word (shared atomics);
//   3. turns the chunk words into carries (the OR of the chunks before);
//   4. builds the prefix table P[k] = {columns of rank < k} (257 rows of 8 words per sample),
//      64 threads per sample, one word and 32 ranks each;
//   5. takes each row's mask P[hi] ^ P[lo] and counts it: a carry-save (Harley-Seal) cycle of 8
//      masks per word into ones, twos and fours, whose carry is added into 7 bit planes of
//      eights (count mode: up to 1023 samples); mode all ANDs it, and the block stops once no
//      row has a pair left (a block vote).
// After the last pass it stores its results through the shared memory, 64 columns of every row a
// round, so that neighbouring threads store a row's contiguous bytes (step 6).
// Its constants, arguments, shared memory and tuning policy are in sorted_layout.hpp.
// docs/similarity.md has the method and its costs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "common/hd.hpp"
#include "math.hpp"
#include "sorted_layout.hpp"
#include "sorted_math.hpp"

namespace hpcml::detail::similarity::sorted_gpu {

// Where quad q of table row k is: the row's two quads swapped where bit 2 of k is set.
HPCML_HD inline int table_quad(int k, int q) { return q ^ ((k >> 2) & 1); }

// 16 bytes from 16-byte aligned src to dst, as one load and one store on the GPU.
HPCML_HD inline void copy16(void* dst, const void* src) {
#if defined(__CUDA_ARCH__)
    *static_cast<Quad*>(dst) = *static_cast<const Quad*>(src);
#else
    std::memcpy(dst, src, 16);
#endif
}

// One end (0: lo, 1: hi) of a row's interval into its word of Shared::ends.
HPCML_HD inline void store_end(std::uint32_t* ends, int end, std::uint32_t rank) {
#if defined(__CUDA_ARCH__)
    reinterpret_cast<std::uint16_t*>(ends)[end] = static_cast<std::uint16_t>(rank);
#else
    *ends = (*ends & (0xffff0000u >> (16 * end))) | rank << (16 * end);
#endif
}

HPCML_HD inline void shared_or(std::uint32_t* word, std::uint32_t bits) {
#if defined(__CUDA_ARCH__)
    atomicOr(word, bits);
#else
    *word |= bits;
#endif
}

// Column c's bit in word w of a row's mask (0 where c is in another word): 1 << (c - 32 w) with
// the shift clamped at 32, as the GPU's shift instruction does, so no compare is needed.
HPCML_HD inline std::uint32_t bit_in_word(unsigned c, int w) {
    const unsigned shift = c - 32u * static_cast<unsigned>(w);
#if defined(__CUDA_ARCH__)
    std::uint32_t bit;
    asm("shl.b32 %0, %1, %2;" : "=r"(bit) : "r"(1u), "r"(shift));
    return bit;
#else
    return shift < 32 ? 1u << shift : 0u;
#endif
}

// A thread's counts of its row's 256 pairs, bit-sliced: count = ones + 2 twos + 4 fours + 8
// eights, where eights is a 7-bit number in planes.
struct CountState {
    std::uint32_t ones[kWords] = {}, twos[kWords] = {}, fours[kWords] = {};
    std::uint32_t eights[kHiPlanes][kWords] = {};
    // The counts of columns 32 w + b .. + 3 (b a multiple of 4): each plane's 4 bits spread to
    // the low bits of 4 bytes (a multiply whose 4 shifted copies do not overlap), summed into
    // lo (ones, twos and fours: to 7 a byte) and hi (the eights: to 127 a byte).
    HPCML_HD void counts4(int w, int b, std::uint32_t (&count)[4]) const {
        auto spread = [b](std::uint32_t plane) { return (((plane >> b) & 0xfu) * 0x204081u) & 0x01010101u; };
        const std::uint32_t lo = spread(ones[w]) | spread(twos[w]) << 1 | spread(fours[w]) << 2;
        std::uint32_t hi = 0;
        HPCML_DEVICE_UNROLL
        for (int p = 0; p < kHiPlanes; ++p) hi |= spread(eights[p][w]) << p;
        HPCML_DEVICE_UNROLL
        for (int k = 0; k < 4; ++k) count[k] = 8 * ((hi >> 8 * k) & 0xffu) + ((lo >> 8 * k) & 0xffu);
    }
};
// Mode all: the pairs of a thread's row that passed every sample so far.
struct AllState {
    std::uint32_t alive[kWords];
    HPCML_HD AllState() {
        for (int w = 0; w < kWords; ++w) alive[w] = ~0u;
    }
};
template <class Out>
using State = std::conditional_t<Out::mode == SimilarityMode::Count, CountState, AllState>;

// Step 1: the 8 samples from s0 (past the last sample: none of their values), their ends zeroed
// (rows with a non-finite value keep the empty interval) and the chunk words cleared. A warp
// loads a sample: 16 threads 16 values each of y's tile, 16 of x's band.
HPCML_HD inline void load(const SortedArgs& a, unsigned bx, unsigned by, std::size_t s0, Shared& sh, int t) {
    const std::size_t left = a.samples - s0;
    const int g = t / 32, part = t % 16 * 16;
    if (static_cast<std::size_t>(g) < left) {
        const bool is_y = t % 32 < 16;
        const Segments& from = is_y ? a.y : a.x;
        const std::size_t at = from.at(s0 + g, is_y ? bx : by) * kSegment + part;
        float* values = is_y ? sh.y[g] : sh.x[g];
        HPCML_DEVICE_UNROLL
        for (int q = 0; q < 4; ++q) copy16(values + part + 4 * q, from.values + at + 4 * q);
        copy16((is_y ? sh.ycol[g] : sh.xrow[g]) + part, from.index + at);
    }
    if (t < kGroup) {
        sh.y[t][kCols] = INFINITY;
        const bool sample = static_cast<std::size_t>(t) < left;
        sh.nx[t] = sample ? a.x.finite[a.x.at(s0 + t, by)] : 0;
    }
    const Quad zero{};
    HPCML_DEVICE_UNROLL
    for (int q = 0; q < 2; ++q) copy16(&sh.ends[0][0] + 8 * t + 4 * q, &zero);
    HPCML_DEVICE_UNROLL
    for (int i = t; i < kGroup * kChunks * kWords; i += kThreads) (&sh.carry[0][0][0])[i] = 0;
}

// Step 2: each rank's column bit into its chunk's word; the ends of 16 sorted rows.
HPCML_HD inline void merge(const SortedArgs& a, Shared& sh, int t) {
    HPCML_DEVICE_UNROLL
    for (int g = 0; g < kGroup; ++g) {
        const unsigned c = sh.ycol[g][t];  // every rank's, as in build_table
        shared_or(&sh.carry[g][t / 32][c / 32], 1u << (c % 32));
    }
    const int g = t / 32, end = t / 16 % 2, k0 = t % 16 * 16;
    const int k1 = k0 + 16 < static_cast<int>(sh.nx[g]) ? k0 + 16 : static_cast<int>(sh.nx[g]);
    if (k0 >= k1) return;
    const float* v = sh.y[g];  // ascending, then +inf from the first non-finite rank to v[kCols]
    const float bound = sorted::end_bound(end, a.threshold);
    // Both ends' predicates hold on a prefix of the sorted values, longer for a larger x value.
    auto before = [&](float x, float y) { return sorted::before_bound(x, y, bound); };
    // The first row's end: how many of the 256 values pass, by halving steps (the +inf values
    // never pass, so no step needs the count of finite ones).
    const float first = sh.x[g][k0];
    std::uint32_t lo = 0;
    HPCML_DEVICE_UNROLL
    for (std::uint32_t step = kCols / 2; step > 0; step /= 2) lo += before(first, v[lo + step - 1]) ? step : 0;
    lo += before(first, v[lo]) ? 1 : 0;
    // The others by walking on: each row moves the end by about one rank. One loop (not
    // unrolled), which the machine-code report counts at 16 trips.
    HPCML_DEVICE_NO_UNROLL
    for (int k = k0; k < k1; ++k) {
        const float x = sh.x[g][k];
        while (before(x, v[lo])) {  // stops at the first +inf
            ++lo;
        }
        store_end(&sh.ends[g][sh.xrow[g][k]], end, lo);
    }
}

// Step 3: a chunk's word becomes the OR of the chunks before it (64 threads).
HPCML_HD inline void carries(Shared& sh, int t) {
    if (t >= kGroup * kWords) return;
    const int g = t / kWords, w = t % kWords;
    std::uint32_t acc = 0;
    HPCML_DEVICE_UNROLL
    for (int ch = 0; ch < kChunks; ++ch) {
        const std::uint32_t chunk = sh.carry[g][ch][w];
        sh.carry[g][ch][w] = acc;
        acc |= chunk;
    }
}

// Step 4: P[k] for word w, 32 ranks from a chunk's carry. A warp's 32 items are 8 words of 4
// samples, whose stores fall in 32 different banks. The ranks past the finite values add their
// bits too, to rows past every row's interval.
HPCML_HD inline void build_table(Shared& sh, int t) {
    HPCML_DEVICE_UNROLL
    for (int item = t; item < kGroup * kWords * kChunks; item += kThreads) {
        const int w = item % kWords, g = item / kWords % kGroup, ch = item / (kWords * kGroup);
        std::uint32_t acc = sh.carry[g][ch][w];
        HPCML_DEVICE_UNROLL
        for (int j = 0; j < 32; ++j) {
            const int k = ch * 32 + j;
            sh.table[g][k][table_quad(k, w / 4)].word[w % 4] = acc;
            acc |= bit_in_word(sh.ycol[g][k], w);
        }
        if (ch == kChunks - 1) sh.table[g][kCols][table_quad(kCols, w / 4)].word[w % 4] = acc;
    }
}

// Row t's mask of sample g: P[hi] ^ P[lo] (an empty interval where hi < lo, which a threshold
// <= 0 gives).
// Quad q of them (words 4q .. 4q + 3).
HPCML_HD inline void row_masks(const Shared& sh, int g, int t, int q, std::uint32_t (&m)[4]) {
    const std::uint32_t ends = sh.ends[g][t];
    const int lo = static_cast<int>(ends & 0xffffu), end = static_cast<int>(ends >> 16);
    const int hi = end > lo ? end : lo;
    const Quad h = sh.table[g][hi][table_quad(hi, q)], l = sh.table[g][lo][table_quad(lo, q)];
    HPCML_DEVICE_UNROLL
    for (int w = 0; w < 4; ++w) m[w] = h.word[w] ^ l.word[w];
}

// Step 5, count mode: one Harley-Seal cycle of the 8 masks per word (7 full adders), its eights
// carry rippled into the planes. Samples past the last have empty masks.
HPCML_HD inline bool accumulate(const Shared& sh, CountState& st, int t, std::size_t) {
    HPCML_DEVICE_UNROLL
    for (int q = 0; q < 2; ++q) {  // a quad of words at a time: fewer registers live
        std::uint32_t twos_a[4], fours_a[4];
        HPCML_DEVICE_UNROLL
        for (int pair = 0; pair < kGroup / 2; ++pair) {
            std::uint32_t m0[4], m1[4];
            row_masks(sh, 2 * pair, t, q, m0);
            row_masks(sh, 2 * pair + 1, t, q, m1);
            HPCML_DEVICE_UNROLL
            for (int i = 0; i < 4; ++i) {
                const int w = 4 * q + i;
                const std::uint32_t two = sorted::carry3(st.ones[w], m0[i], m1[i]);
                st.ones[w] = sorted::sum3(st.ones[w], m0[i], m1[i]);
                if (pair % 2 == 0) {
                    twos_a[i] = two;
                    continue;
                }
                const std::uint32_t four = sorted::carry3(st.twos[w], twos_a[i], two);
                st.twos[w] = sorted::sum3(st.twos[w], twos_a[i], two);
                if (pair == 1) {
                    fours_a[i] = four;
                    continue;
                }
                std::uint32_t carry = sorted::carry3(st.fours[w], fours_a[i], four);
                st.fours[w] = sorted::sum3(st.fours[w], fours_a[i], four);
                HPCML_DEVICE_UNROLL
                for (int p = 0; p < kHiPlanes; ++p) {
                    const std::uint32_t plane = st.eights[p][w];
                    st.eights[p][w] = plane ^ carry;
                    carry &= plane;
                }
            }
        }
    }
    return true;
}

// Step 5, mode all: AND the masks of the samples that exist; whether a pair is left.
HPCML_HD inline bool accumulate(const Shared& sh, AllState& st, int t, std::size_t samples_left) {
    std::uint32_t any = 0;
    HPCML_DEVICE_UNROLL
    for (int g = 0; g < kGroup; ++g) {
        if (static_cast<std::size_t>(g) >= samples_left) break;
        HPCML_DEVICE_UNROLL
        for (int q = 0; q < 2; ++q) {
            std::uint32_t m[4];
            row_masks(sh, g, t, q, m);
            HPCML_DEVICE_UNROLL
            for (int i = 0; i < 4; ++i) st.alive[4 * q + i] &= m[i];
        }
    }
    HPCML_DEVICE_UNROLL
    for (int w = 0; w < kWords; ++w) any |= st.alive[w];
    return any != 0;
}

// Step 6, once the passes are done: the block's results through shared memory (free by then),
// so that a warp stores whole rows' contiguous bytes (coalesced) rather than one element of 32
// rows. Each round stages 64 columns of every row (two words of a thread's counts, so that a
// round's registers are alike for every output type: 16 quads of int32, 8 of uint16, 4 of uint8
// or bool; a bitmask's 256 columns, 2 quads, in one round): a thread writes its row's quads,
// then the block copies rows out, a thread a quad (a 16-byte store where the output is aligned).
// Rows are 17 quads apart: a quarter warp's 8 rows (the unit of a 16-byte shared access) write
// to 8 different bank groups.
constexpr int kRoundCols = 64;
constexpr int kStagePitch = 17;  // quads from one row to the next
static_assert(sizeof(Quad) * kRows * kStagePitch <= sizeof(Shared), "a round's stage fits in the shared memory");

template <class Out>
constexpr int kRowBytes = Out::bits ? kCols / 8 : kCols* static_cast<int>(sizeof(typename Out::Element));
template <class Out>
constexpr int kRoundBytes = Out::bits ? kRowBytes<Out> : kRoundCols* static_cast<int>(sizeof(typename Out::Element));
template <class Out>
constexpr int kRoundQuads = kRoundBytes<Out> / 16;
template <class Out>
constexpr int kStoreRounds = kRowBytes<Out> / kRoundBytes<Out>;
static_assert(kRoundQuads<Int32Output> <= kStagePitch && kRoundBytes<UInt8Output> % 16 == 0);

// The block's columns inside the region (to kCols).
HPCML_HD inline int valid_cols(const SortedArgs& a, unsigned bx) {
    const int left = a.cols - static_cast<int>(bx) * kCols;
    return left < kCols ? left : kCols;
}

HPCML_HD inline Quad* stage(Shared& sh) { return reinterpret_cast<Quad*>(&sh); }

// Quad q of a row's results (bytes 16 q ..): mode all's bitmask bits (those past the region's
// columns cleared), or 16 bytes of elements encoded as Out says.
template <class Out>
HPCML_HD Quad result_quad(const State<Out>& st, int q, std::uint32_t samples, int valid) {
    Quad out{};
    if constexpr (Out::bits) {
        HPCML_DEVICE_UNROLL
        for (int i = 0; i < 4; ++i) {
            const int w = 4 * q + i, left = valid - 32 * w;
            out.word[i] = left >= 32 ? st.alive[w] : left <= 0 ? 0u : st.alive[w] & ((1u << left) - 1u);
        }
    } else {
        using T = typename Out::Element;
        constexpr int kPerQuad = 16 / sizeof(T), kPerWord = 4 / sizeof(T);
        const int c0 = q * kPerQuad, w = c0 / 32;
        HPCML_DEVICE_UNROLL
        for (int e0 = 0; e0 < kPerQuad; e0 += 4) {
            std::uint32_t count[4];
            if constexpr (Out::mode == SimilarityMode::Count) {
                st.counts4(w, c0 % 32 + e0, count);
            } else {
                HPCML_DEVICE_UNROLL
                for (int k = 0; k < 4; ++k) count[k] = (st.alive[w] >> (c0 % 32 + e0 + k)) & 1u ? samples : 0;
            }
            HPCML_DEVICE_UNROLL
            for (int k = 0; k < 4; ++k) {
                const int e = e0 + k;
                const auto bits = static_cast<std::make_unsigned_t<T>>(Out::encode(count[k], samples));
                out.word[e / kPerWord] |= static_cast<std::uint32_t>(bits) << (8 * sizeof(T) * (e % kPerWord));
            }
        }
    }
    return out;
}

// Round r's quads of thread t's row into the stage.
template <class Out>
HPCML_HD void stage_round(const SortedArgs& a, unsigned bx, const State<Out>& st, Shared& sh, int t, int r) {
    HPCML_DEVICE_UNROLL
    for (int q = 0; q < kRoundQuads<Out>; ++q) {
        const Quad v =
            result_quad<Out>(st, r * kRoundQuads<Out> + q, static_cast<std::uint32_t>(a.samples), valid_cols(a, bx));
        copy16(stage(sh) + t * kStagePitch + q, &v);
    }
}

// `bytes` (to 16) from the stage to the output: one 16-byte store where whole and aligned, else
// 4-byte stores while aligned, then bytes.
HPCML_HD inline void store_bytes(unsigned char* dst, const unsigned char* src, int bytes) {
    const auto at = reinterpret_cast<std::uintptr_t>(dst);
    if (bytes == 16 && at % 16 == 0) return copy16(dst, src);
    int b = 0;
    if (at % 4 == 0)
        for (; b + 4 <= bytes; b += 4) {
#if defined(__CUDA_ARCH__)
            *reinterpret_cast<std::uint32_t*>(dst + b) = *reinterpret_cast<const std::uint32_t*>(src + b);
#else
            std::memcpy(dst + b, src + b, 4);
#endif
        }
    for (; b < bytes; ++b) dst[b] = src[b];
}

// Round r's stage to the output: the block's rows inside the region, their bytes of the
// region's columns, a thread a quad.
template <class Out>
HPCML_HD void copy_round(const SortedArgs& a, unsigned bx, unsigned by, Shared& sh, int t, int r) {
    constexpr int kQuads = kRoundQuads<Out>;
    const int valid = valid_cols(a, bx), rows = a.rows - static_cast<int>(by) * kRows;
    const int valid_bytes = Out::bits ? (valid + 7) / 8 : valid * static_cast<int>(sizeof(typename Out::Element));
    const int round_bytes = valid_bytes - kRoundBytes<Out> * r;  // may exceed the round's
    unsigned char* out = a.out + static_cast<std::size_t>(bx) * kRowBytes<Out> + kRoundBytes<Out> * r;
    const auto* from = reinterpret_cast<const unsigned char*>(stage(sh));
    HPCML_DEVICE_NO_UNROLL
    for (int item = t; item < kRows * kQuads; item += kThreads) {
        const int row = item / kQuads, q = item % kQuads, left = round_bytes - 16 * q;
        if (row >= rows || left <= 0) continue;
        const std::size_t out_row = static_cast<std::size_t>(by) * kRows + row;
        store_bytes(out + out_row * a.out_stride + 16 * q, from + 16 * (row * kStagePitch + q), left < 16 ? left : 16);
    }
}

// The whole block over every sample: Threads runs a step on every thread, then a barrier
// (phase), or the same with a block-wide OR of the step's results (any).
template <class Out, class Threads>
HPCML_HD void run_block(const SortedArgs& a, unsigned bx, unsigned by, Shared& sh, Threads& threads) {
    using St = State<Out>;
    for (std::size_t s0 = 0; s0 < a.samples; s0 += kGroup) {
        threads.phase([&](int t, St&) { load(a, bx, by, s0, sh, t); });
        threads.phase([&](int t, St&) { merge(a, sh, t); });
        threads.phase([&](int t, St&) { carries(sh, t); });
        threads.phase([&](int t, St&) { build_table(sh, t); });
        // Also the barrier before the next pass overwrites shared memory.
        if (!threads.any([&](int t, St& st) { return accumulate(sh, st, t, a.samples - s0); })) break;
    }
    HPCML_DEVICE_UNROLL
    for (int r = 0; r < kStoreRounds<Out>; ++r) {  // the last pass's vote was the barrier before the first
        threads.phase([&](int t, const St& st) { stage_round<Out>(a, bx, st, sh, t, r); });
        threads.phase([&](int t, const St&) { copy_round<Out>(a, bx, by, sh, t, r); });
    }
}

// The CPU tests' threads: each step on threads 0, 1, ... 255 in turn, each with its registers.
template <class St>
struct SerialThreads {
    St states[kThreads];
    template <class Step>
    void phase(const Step& step) {
        for (int t = 0; t < kThreads; ++t) step(t, states[t]);
    }
    template <class Step>
    bool any(const Step& step) {
        bool result = false;
        for (int t = 0; t < kThreads; ++t) result |= step(t, states[t]);
        return result;
    }
};

}  // namespace hpcml::detail::similarity::sorted_gpu
