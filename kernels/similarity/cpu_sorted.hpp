// The sorted similarity method's pieces (cpu_sorted.cpp runs them; docs/similarity.md explains
// the method): its constants and tuning, each instruction-set level's 512-bit rows and the sorted
// strip (cpu_sorted_strip.cpp sorts it and finds each row's rank interval). The steps each level
// writes its own way are in cpu_sorted_levels.hpp.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>

// 512-bit vector types pass between functions that are all inlined into one per level.
#pragma GCC diagnostic ignored "-Wpsabi"

#include "common/cpu_kernel.hpp"
#include "common/memory.hpp"
#include "cpu_common.hpp"
#include "sorted_math.hpp"

namespace hpcml::detail::similarity::sorted {

// The method's layout (its tables, masks and adder code are written for these: not tuning knobs).
constexpr std::size_t kTile = 512;  // columns per tile: a row's mask is 512 bits, one cache line
constexpr std::size_t kBand = kTile;  // rows per band (square, so that a band's mirror is a tile)
constexpr std::size_t kGroup = 16;    // samples per group of tables (add16)
constexpr std::size_t kPad = 16;      // +inf after the strip's sorted values: window searches read past the end
constexpr std::size_t kWords = kTile / 64;

// The sorted CPU method's tuning (as CUB's tuning policies): it changes speed, never results.
// Each value with what chose it; Zen 4 is the AMD EPYC machine of bench/results/, 2 cores.
struct SortedCpuPolicy {
    std::size_t strip;        // rows or columns sorted at once (the sorted copies: 8 bytes per sample and feature)
    std::size_t sort_block;   // samples sorted at once (mode All: later blocks only when an item reaches them)
    std::size_t bands_per_item;  // count mode: bands sharing an item's tables and rank maps (a power of 2)
    std::size_t bands_per_item_all;  // mode All's (at most bands_per_item)
    std::size_t mirror_rows;  // count mode's mirror transposed this many stored rows at a time, still in L1
    std::size_t stream_bytes; // outputs at least this large are stored past the caches (non-temporal)
    std::size_t vector_split_tiles;  // AVX-512: strips of at most this many tiles split by a vector pass per tile
    std::size_t direct_chunk_cost;   // mode All: a live chunk's direct check per sample, in table rows
    std::size_t first_all_group;     // mode All: samples of an item's first group (at most kGroup)
    std::size_t high_digits_most;    // sorts of at most this many values: the high digits, then insertion
    std::size_t parallel_sort_min;   // values x samples sorted at once from which the threads share them
};
inline constexpr SortedCpuPolicy kSortedCpu{
    .strip = 16384,  // bounds the sorted copies to ~130 MB at 1000 samples: not timed against others
    // mode All: most pairs fail within the first group; 32 -> 16: the real case as pairs 13.1 -> 9.5 s, all 20000
    // alike; 16 -> 12 (the first group's samples): the real case's sort 1.2x -> 0.73x its items' time (Zen 4)
    .sort_block = 12,
    .bands_per_item = 8,  // 1 -> 4: count 256 x 8000 (y a copy) 3.6-3.9x -> 4.4-5.2x fused, main job 1.8-1.9x
                          // -> 2.0-2.2x, all 256 x 20000 3.0x -> 3.6x; 4 -> 8 (2026-11-29, 5 rounds): count 256 x
                          // 8000 y = x 6% faster, a copy 3%, 4000 2%, the main job alike (its tiles stack 1) (Zen 4)
    .bands_per_item_all = 4,  // 8: all 256 x 20000 with y = x 3-7% slower, a copy 1-4% faster (Zen 4)
    .mirror_rows = 16,  // main job 8.30 -> 7.30 ms with the mirror from L1; 16 x 16 AVX-512 no faster (84dd064, Zen 4)
    // a normal store reads its line first; 64 -> 12 MiB: main job (16 MB) 7-9% faster, 4000 x 4000 (64 MB) 23%;
    // an 8 MB output 5% slower streamed, 4 MB alike (Zen 4, 32 MB L3)
    .stream_bytes = std::size_t{12} << 20,
    // scalar -> vector: main job (4 tiles) sorted about 3% faster; 8 and 16 tiles within noise (Zen 4)
    .vector_split_tiles = 8,
    .direct_chunk_cost = 1,  // 2 -> 1: all 256 x 4000 with columns repeated 10 times 5.8-7.4 -> 4.4-4.6 ms; 4 and 8
                             // never switch there (Zen 4)
    .first_all_group = 12,   // 16 -> 12: all 256 x 20000 about 5% faster; 8 and 4 slower (Zen 4)
    // a sort of 2000 normal values' radix part 3.8-4.0 -> 3.1-3.4 ns a value (512: 5.5 -> 4.3); of 8000, the
    // insertions cost as much as the low digit's pass (Zen 4)
    .high_digits_most = 4096,
    // 65536 -> 16384: the real case as a pair list (tiles of 2048 x 2048, 12 samples sorted first: 49152, on one
    // thread while the other waited) 6.5 -> 4.7 s wall (Zen 4)
    .parallel_sort_min = 16384,
};
// Ranks and ends within a strip are 16-bit.
static_assert(kSortedCpu.strip <= 65535 && kSortedCpu.strip % kTile == 0);
static_assert(kSortedCpu.first_all_group >= 1 && kSortedCpu.first_all_group <= kGroup);
static_assert(kSortedCpu.bands_per_item_all <= kSortedCpu.bands_per_item);

// The strip and the bands per item in use: the policy's (the bands fewer where threads would
// lack items), or what a test sets so that small shapes cross strip boundaries and stack bands
// whatever the thread count (a multiple of kTile up to the policy's, and a power of 2; 0: the
// policy's). Not for concurrent calls.
struct SortedLayout {
    std::size_t strip, bands_per_item;
};
SortedLayout layout_for_tests();
void set_layout_for_tests(SortedLayout layout);

// A row of a table, or a counter plane: 512 bits as the level's native vectors of 64-bit lanes
// (one AVX-512 register, two AVX2 or four 16-byte ones: GCC moves a 512-bit vector type through
// memory piece by piece where it is not native, so each level gets its own).
template <class Native>
struct WideBits {
    static constexpr std::size_t kLanes = sizeof(Native) / 8, kParts = kWords / kLanes;
    Native part[kParts];

    [[gnu::always_inline]] friend WideBits operator&(const WideBits& a, const WideBits& b) {
        WideBits r;
#pragma GCC unroll 4
        for (std::size_t i = 0; i < kParts; ++i) r.part[i] = a.part[i] & b.part[i];
        return r;
    }
    [[gnu::always_inline]] friend WideBits operator|(const WideBits& a, const WideBits& b) {
        WideBits r;
#pragma GCC unroll 4
        for (std::size_t i = 0; i < kParts; ++i) r.part[i] = a.part[i] | b.part[i];
        return r;
    }
    [[gnu::always_inline]] friend WideBits operator^(const WideBits& a, const WideBits& b) {
        WideBits r;
#pragma GCC unroll 4
        for (std::size_t i = 0; i < kParts; ++i) r.part[i] = a.part[i] ^ b.part[i];
        return r;
    }
    [[gnu::always_inline]] friend WideBits operator~(const WideBits& a) {
        WideBits r;
#pragma GCC unroll 4
        for (std::size_t i = 0; i < kParts; ++i) r.part[i] = ~a.part[i];
        return r;
    }
    WideBits& operator&=(const WideBits& b) { return *this = *this & b; }
    WideBits& operator|=(const WideBits& b) { return *this = *this | b; }
    std::uint64_t word(std::size_t w) const { return part[w / kLanes][w % kLanes]; }  // columns 64 w ..
    void clear(std::size_t column) { part[column / 64 / kLanes][column / 64 % kLanes] &= ~(std::uint64_t{1} << column % 64); }

    // Column `column` alone: all ones in its lane by shifts and subtractions, not a compare (which
    // GCC takes apart lane by lane for some widths), then its bit.
    [[gnu::always_inline]] static WideBits column_bit(std::uint64_t column) {
        WideBits b;
#pragma GCC unroll 4
        for (std::size_t i = 0; i < kParts; ++i) {
            Native lane;
            for (std::size_t k = 0; k < kLanes; ++k) lane[k] = i * kLanes + k;
            const Native other = lane ^ (Native{} + (column >> 6));
            b.part[i] = ((((other | (Native{} - other)) >> 63) - 1) & (Native{} + (std::uint64_t{1} << (column & 63))));
        }
        return b;
    }
};
using U64x2 = std::uint64_t __attribute__((vector_size(16)));
using U64x4 = std::uint64_t __attribute__((vector_size(32)));
using U64x8 = std::uint64_t __attribute__((vector_size(64)));
template <std::size_t Bytes>
struct U32VectorOf;  // 32-bit lanes in the same width
template <>
struct U32VectorOf<16> {
    using type = std::uint32_t __attribute__((vector_size(16)));
};
template <>
struct U32VectorOf<32> {
    using type = std::uint32_t __attribute__((vector_size(32)));
};
template <>
struct U32VectorOf<64> {
    using type = std::uint32_t __attribute__((vector_size(64)));
};
template <std::size_t Bytes>
struct U16VectorOf;  // 16-bit lanes in the same width (GCC ignores a dependent vector_size)
template <>
struct U16VectorOf<16> {
    using type = std::uint16_t __attribute__((vector_size(16)));
};
template <>
struct U16VectorOf<32> {
    using type = std::uint16_t __attribute__((vector_size(32)));
};
template <>
struct U16VectorOf<64> {
    using type = std::uint16_t __attribute__((vector_size(64)));
};
// The levels' types (the baseline's 16-byte vectors are SSE2's or NEON's).
template <class Level>
struct BitsOf {
    using type = WideBits<U64x2>;
};
template <>
struct BitsOf<Avx2Level> {
    using type = WideBits<U64x4>;
};
template <>
struct BitsOf<Avx512Level> {
    using type = WideBits<U64x8>;
};
constexpr std::size_t kBitsBytes = kTile / 8;  // every level's 512 bits

// A row's rank interval [lo, hi) at one sample, in the strip's sorted y.
struct RankInterval {
    std::uint16_t lo, hi;
};

// A strip's samples sorted (cpu_sorted_strip.cpp): per sample, y's finite values over the whole
// strip in one order, each row's interval in it (x's sorted values merged with y's once, whatever
// the tile), and per tile of 512 columns its columns in that order (`ids`, for its tables) with
// their ranks in the strip's (`ranks`, from which a tile's rank map is built). Samples are sorted
// in blocks of kSortedCpu.sort_block: all at once (count mode, which reads every sample), or the
// first block at once and each further block by the first item that reaches it (mode All, where
// most pairs fail within a few samples).
class SortedStrip {
public:
    SortedStrip(const Problem& p, const Region& region, bool same, bool lazily, detail::MemoryTracker& tracker);
    // Samples [0, end) sorted (each block once, by the first thread to ask).
    void ensure(std::size_t end) const;
    const std::uint16_t* ids(std::size_t tile, std::size_t s) const {
        return ids_.data() + (tile * samples_ + s) * kTile;
    }
    const std::uint16_t* ranks(std::size_t tile, std::size_t s) const {
        return ranks_.data() + (tile * samples_ + s) * kTile;
    }
    std::uint32_t count(std::size_t tile, std::size_t s) const { return counts_[tile * samples_ + s]; }
    std::uint32_t strip_count(std::size_t s) const { return strip_counts_[s]; }  // y's finite values
    // Row r's interval at sample s (rows whose x is not finite: [0, 0)).
    const RankInterval* intervals(std::size_t s) const { return intervals_.data() + s * rows_; }

private:
    void sort_sample(std::size_t s) const;
    std::size_t scratch_size() const;  // a thread's items, radix-sort scratch and sorted values

    const float* x_ = nullptr;
    const float* y_ = nullptr;
    std::size_t ldx_ = 0, ldy_ = 0, rows_ = 0, cols_ = 0, tiles_ = 0, samples_ = 0;
    float threshold_ = 0;
    bool same_ = false;  // x's features are y's: one sort
    // Written by sort_sample, once per sample, before any item reads the sample (call_once orders them).
    mutable detail::HostBuffer<std::uint16_t> ids_;
    mutable detail::HostBuffer<std::uint16_t> ranks_;
    mutable detail::HostBuffer<std::uint16_t> counts_;
    mutable detail::HostBuffer<std::uint16_t> strip_counts_;
    mutable detail::HostBuffer<RankInterval> intervals_;
    mutable detail::HostBuffer<std::uint64_t> scratch_;     // per thread
    mutable detail::HostBuffer<std::uint32_t> histograms_;  // per thread: the radix sort's histograms
    CpuKernel level_{};  // what the sort is compiled for
    std::size_t blocks_ = 0, threads_ = 1;
    std::unique_ptr<std::once_flag[]> sorted_;
};

}  // namespace hpcml::detail::similarity::sorted
