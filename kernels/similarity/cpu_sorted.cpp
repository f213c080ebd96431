// Similarity on the CPU by the sorted method (sorted_math.hpp gives the idea; docs/similarity.md
// the worked example and the costs). Per sample, each column tile's finite y values are sorted
// (one radix sort of the region's columns, split by tile) and so are each row band's x values. Per
// sample, band and tile, a merge of the two finds every row's rank interval [lo, hi) with the
// exact predicate. Per group of 16 samples, each tile gets a prefix table per sample, P[k] = the
// columns of ranks < k as a 512-bit mask, and a row's mask at that sample is P[hi] ^ P[lo]. Count
// mode adds the 16 masks into bit-sliced counters (a carry-save tree, then a ripple add); mode
// All ANDs them, stops once a band's rows have all failed, and checks the last few surviving
// pairs one by one (where y is x the diagonal never fails).
//
// Cost per row, sample and tile (512 pairs): a merge step for each end, two table rows (one cache
// line each) and about 7 logic ops per row and sample for the counters (with AVX-512, one
// instruction per full-adder bit), against the direct method's 128 vector instructions.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>

#ifdef _OPENMP
#include <omp.h>
#endif

// 512-bit vector types pass between functions that are all inlined into one per level.
#pragma GCC diagnostic ignored "-Wpsabi"

#include "common/cpu_kernel.hpp"
#include "cpu_common.hpp"
#include "sorted_math.hpp"

namespace hpcml::detail::similarity {

namespace {

using namespace sorted;

constexpr std::size_t kTile = 512;  // columns per tile: a row's mask is 512 bits, one cache line
constexpr std::size_t kBand = kTile;  // rows per band (square, so that a band's mirror is a tile)
constexpr std::size_t kGroup = 16;    // samples per group of tables (add16)
constexpr std::size_t kPad = 16;      // +inf after a tile's sorted values: window searches read past the end
constexpr std::size_t kWords = kTile / 64;
// Rows or columns sorted at once: the sorted copies take 6 bytes per sample and feature.
constexpr std::size_t kStrip = 16384;

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

// A 64-byte aligned tracked array of T.
template <class T>
class Aligned {
public:
    Aligned() = default;
    Aligned(detail::MemoryTracker& tracker, std::size_t count, const char* what)
        : buffer_(tracker, count * sizeof(T) + 64, what) {
        const auto address = reinterpret_cast<std::uintptr_t>(buffer_.data());
        data_ = reinterpret_cast<T*>(buffer_.data() + (64 - address % 64) % 64);
    }
    T* data() const { return data_; }

private:
    detail::HostBuffer<unsigned char> buffer_;
    T* data_ = nullptr;
};

// A least-significant-digit radix sort of (key << 32 | payload) items by key: three passes of
// 11, 11 and 10 bits, their histograms counted in one read of the items.
struct RadixSort {
    static constexpr unsigned kShift[3] = {32, 43, 54}, kBits[3] = {11, 11, 10};
    std::uint32_t start[3][2048];

    // Sorts items[0 .. n) (scratch: n more), returning the buffer that holds the result.
    std::uint64_t* sort(std::uint64_t* items, std::uint64_t* scratch, std::size_t n) {
        std::memset(start, 0, sizeof start);
        for (std::size_t k = 0; k < n; ++k) {
            const std::uint64_t item = items[k];
            ++start[0][(item >> kShift[0]) & 2047];
            ++start[1][(item >> kShift[1]) & 2047];
            ++start[2][(item >> kShift[2]) & 1023];
        }
        for (unsigned pass = 0; pass < 3; ++pass) {
            std::uint32_t* first = start[pass];
            const std::size_t mask = (std::size_t{1} << kBits[pass]) - 1;
            if (n == 0 || first[(items[0] >> kShift[pass]) & mask] == n) continue;  // one digit: nothing moves
            std::uint32_t sum = 0;
            for (std::size_t d = 0; d <= mask; ++d) sum += std::exchange(first[d], sum);
            for (std::size_t k = 0; k < n; ++k) scratch[first[(items[k] >> kShift[pass]) & mask]++] = items[k];
            std::swap(items, scratch);
        }
        return items;
    }
};

// One side's values sorted per sample within groups of 512 features (y's tiles or x's bands):
// group g at sample s holds count(g, s) finite values, ascending, then kPad +inf, with each
// value's feature index within the group. Samples are sorted in blocks of kSortBlock: all of them
// at once (count mode, which reads every sample), or the first block at once and each further
// block by the first item that reaches it (mode All, where most pairs fail within a few samples).
constexpr std::size_t kSortBlock = 32;
class SortedGroups {
public:
    SortedGroups() = default;
    SortedGroups(const float* data, std::size_t ld, std::size_t first, std::size_t features, std::size_t samples,
                 bool lazily, detail::MemoryTracker& tracker, const char* what)
        : data_(data),
          ld_(ld),
          first_(first),
          features_(features),
          groups_(ceil_div(features, kTile)),
          samples_(samples),
          values_(tracker, groups_ * samples * (kTile + kPad), what),
          ids_(tracker, groups_ * samples * kTile, what),
          counts_(tracker, groups_ * samples, what),
          blocks_(ceil_div(samples, kSortBlock)),
          sorted_(std::make_unique<std::once_flag[]>(blocks_)) {
#ifdef _OPENMP
        threads_ = static_cast<std::size_t>(omp_get_max_threads());
#endif
        scratch_ = detail::HostBuffer<std::uint64_t>(tracker, threads_ * 2 * features, "similarity sorted: sort scratch");
        const std::size_t now = lazily ? std::min(samples, kSortBlock) : samples;
        const int threads = features * now >= cpu::kParallelMin ? static_cast<int>(std::min(threads_, now)) : 1;
#pragma omp parallel for schedule(dynamic) num_threads(threads)
        for (std::size_t s = 0; s < now; ++s) sort_sample(s);
        for (std::size_t b = 0; b * kSortBlock < now; ++b) std::call_once(sorted_[b], [] {});
    }
    // Samples [0, end) sorted (each block once, by the first thread to ask).
    void ensure(std::size_t end) const {
        for (std::size_t b = 0; b * kSortBlock < end; ++b)
            std::call_once(sorted_[b], [&] {
                for (std::size_t s = b * kSortBlock; s < std::min(samples_, (b + 1) * kSortBlock); ++s) sort_sample(s);
            });
    }
    const float* values(std::size_t g, std::size_t s) const { return values_.data() + (g * samples_ + s) * (kTile + kPad); }
    const std::uint16_t* ids(std::size_t g, std::size_t s) const { return ids_.data() + (g * samples_ + s) * kTile; }
    std::uint32_t count(std::size_t g, std::size_t s) const { return counts_[g * samples_ + s]; }

private:
    void sort_sample(std::size_t s) const {
        std::size_t thread = 0;
#ifdef _OPENMP
        thread = std::min(static_cast<std::size_t>(omp_get_thread_num()), threads_ - 1);
#endif
        std::uint64_t* items = scratch_.data() + thread * 2 * features_;
        const float* row = data_ + s * ld_ + first_;
        std::size_t finite = 0;
        for (std::size_t f = 0; f < features_; ++f)
            if (std::isfinite(row[f])) items[finite++] = std::uint64_t{order_key(row[f])} << 32 | f;
        RadixSort radix;
        const std::uint64_t* sorted = radix.sort(items, items + features_, finite);
        std::uint32_t filled[kStrip / kTile] = {};
        for (std::size_t k = 0; k < finite; ++k) {
            const auto f = static_cast<std::uint32_t>(sorted[k]);
            const std::size_t g = f / kTile, at = g * samples_ + s;
            const std::uint32_t pos = filled[g]++;
            values_[at * (kTile + kPad) + pos] = from_order_key(static_cast<std::uint32_t>(sorted[k] >> 32));
            ids_[at * kTile + pos] = static_cast<std::uint16_t>(f % kTile);
        }
        for (std::size_t g = 0; g < groups_; ++g) {
            const std::size_t at = g * samples_ + s;
            counts_[at] = static_cast<std::uint16_t>(filled[g]);
            std::fill_n(values_.data() + at * (kTile + kPad) + filled[g], kPad, std::numeric_limits<float>::infinity());
        }
    }

    const float* data_ = nullptr;
    std::size_t ld_ = 0, first_ = 0, features_ = 0, groups_ = 0, samples_ = 0;
    // Written by sort_sample, once per sample, before any item reads the sample (call_once orders them).
    mutable detail::HostBuffer<float> values_;
    mutable detail::HostBuffer<std::uint16_t> ids_;
    mutable detail::HostBuffer<std::uint16_t> counts_;
    mutable detail::HostBuffer<std::uint64_t> scratch_;  // per thread: items and the radix sort's scratch
    std::size_t blocks_ = 0, threads_ = 1;
    std::unique_ptr<std::once_flag[]> sorted_;
};

#if defined(__GNUC__) && defined(__x86_64__)
[[gnu::target("avx512f")]] inline std::uint32_t count_before_avx512(float a, const float* v, float threshold, bool end) {
    const __m512 d = _mm512_sub_ps(_mm512_set1_ps(a), _mm512_loadu_ps(v));
    const __mmask16 before = end ? _mm512_cmp_ps_mask(d, _mm512_set1_ps(-threshold), _CMP_GT_OQ)
                                 : _mm512_cmp_ps_mask(d, _mm512_set1_ps(threshold), _CMP_NLT_UQ);
    return static_cast<std::uint32_t>(__builtin_popcount(before));
}
#endif

// How many of v[0 .. 16) lie before the interval's start (or, with `end`, its end) for a: the
// values are sorted, so the predicate holds on a prefix of the window and this is where it turns,
// if it turns inside the window (16: look further).
template <class Level>
[[gnu::always_inline]] inline std::uint32_t count_before(float a, const float* v, float threshold, bool end) {
#if defined(__GNUC__) && defined(__x86_64__)
    if constexpr (std::is_same_v<Level, Avx512Level>) return count_before_avx512(a, v, threshold, end);
#endif
    std::uint32_t n = 0;
    for (std::size_t k = 0; k < kPad; ++k)
        n += end ? before_interval_end(a, v[k], threshold) : before_interval(a, v[k], threshold);
    return n;
}

// A thread's scratch for one item: the group's tables, the rows' interval ends, the counters (or
// mode All's masks), one row of counts and one row of output.
struct Workspace {
    unsigned char* tables;      // kGroup x (kTile + 1) rows of bits
    unsigned char* counters;    // kBand x planes (count), kBand (all) rows of bits
    unsigned char* transposed;  // kTile rows of bits: mode All's masks transposed, for a mirror
    std::uint16_t* ends;   // kBand x 2 kGroup: a row's lo at each sample of the group, then its hi
    std::int32_t* counts;  // kTile
    unsigned char* row;    // kTile int32s' bytes
    std::uint16_t* alive;  // kBand: mode All's rows still alive
    static std::size_t bytes(unsigned planes) {
        return (kGroup * (kTile + 1) + kBand * planes + kTile) * kBitsBytes +
               2 * kGroup * kBand * sizeof(std::uint16_t) + 2 * kTile * sizeof(std::int32_t) +
               kBand * sizeof(std::uint16_t);
    }
    Workspace(unsigned char* at, unsigned planes)  // at: 64-byte aligned, bytes(planes) long
        : tables(at),
          counters(tables + kGroup * (kTile + 1) * kBitsBytes),
          transposed(counters + kBand * planes * kBitsBytes),
          ends(reinterpret_cast<std::uint16_t*>(transposed + kTile * kBitsBytes)),
          counts(reinterpret_cast<std::int32_t*>(ends + 2 * kGroup * kBand)),
          row(reinterpret_cast<unsigned char*>(counts + kTile)),
          alive(reinterpret_cast<std::uint16_t*>(row + kTile * sizeof(std::int32_t))) {}
    // The rows of bits as the level's type.
    template <class Bits>
    static Bits* as(unsigned char* rows) {
        return reinterpret_cast<Bits*>(rows);
    }
};

// P[k] = the columns of ranks < k, for k <= count: the table of one sample's tile.
template <class Bits>
[[gnu::always_inline]] inline void build_table(Bits* table, const std::uint16_t* ids, std::uint32_t count) {
    Bits row = {};
    table[0] = row;
    for (std::uint32_t k = 0; k < count; ++k) {
        row |= Bits::column_bit(ids[k]);
        table[k + 1] = row;
    }
}

// Every row's interval for samples [s, s + merged), merged <= kMerged: per sample, the band's sorted values
// merged with the tile's, each end moved forward a window of 16 at a time. A merge step waits for
// the one before it (a load, a subtract, a compare), so the samples' merges run side by side.
// Rows whose x value is not finite keep [0, 0) (the caller zeroes `ends` first). Sample s + k's
// ends of row r go to ends[r * 2 kGroup + k] and ends[r * 2 kGroup + kGroup + k].
constexpr std::size_t kMerged = 4;
template <class Level>
[[gnu::always_inline]] inline void find_intervals(const SortedGroups& xs, const SortedGroups& ys, std::size_t band,
                                                  std::size_t tile, std::size_t s, float threshold, std::size_t merged,
                                                  std::uint16_t* ends) {
    const float* v[kMerged] = {};
    const float* a[kMerged] = {};
    const std::uint16_t* row[kMerged] = {};
    std::uint32_t n[kMerged] = {}, lo[kMerged] = {}, hi[kMerged] = {};
    for (std::size_t k = 0; k < merged; ++k) {
        v[k] = ys.values(tile, s + k);
        a[k] = xs.values(band, s + k);
        row[k] = xs.ids(band, s + k);
        n[k] = xs.count(band, s + k);
    }
    const auto step = [&](std::size_t k, std::uint32_t q) {
        for (std::uint32_t c = kPad; c == kPad;) lo[k] += c = count_before<Level>(a[k][q], v[k] + lo[k], threshold, false);
        hi[k] = std::max(hi[k], lo[k]);
        for (std::uint32_t c = kPad; c == kPad;) hi[k] += c = count_before<Level>(a[k][q], v[k] + hi[k], threshold, true);
        std::uint16_t* of_row = ends + row[k][q] * 2 * kGroup + k;
        of_row[0] = static_cast<std::uint16_t>(lo[k]);
        of_row[kGroup] = static_cast<std::uint16_t>(hi[k]);
    };
    const std::uint32_t common = merged < kMerged ? 0 : *std::min_element(n, n + kMerged);
    for (std::uint32_t q = 0; q < common; ++q) {
#pragma GCC unroll 4
        for (std::size_t k = 0; k < kMerged; ++k) step(k, q);
    }
    for (std::size_t k = 0; k < merged; ++k)
        for (std::uint32_t q = common; q < n[k]; ++q) step(k, q);
}

#if defined(__GNUC__) && defined(__x86_64__)
[[gnu::target("avx512f")]] inline void counters_to_counts_avx512(const void* planes_of_row, unsigned planes,
                                                                std::size_t cols, std::int32_t* counts) {
    const auto* bytes = static_cast<const unsigned char*>(planes_of_row);  // a plane is 32 chunks of 16 columns
    for (std::size_t g = 0; g * 16 < cols; ++g) {
        __m512i acc = _mm512_setzero_si512();
        for (unsigned p = 0; p < planes; ++p) {
            std::uint16_t chunk;
            std::memcpy(&chunk, bytes + (p * (kTile / 16) + g) * sizeof chunk, sizeof chunk);
            acc = _mm512_mask_or_epi32(acc, chunk, acc, _mm512_set1_epi32(1 << p));
        }
        const std::size_t left = cols - g * 16;  // the last chunk may be partial: exactly cols counts are written
        _mm512_mask_storeu_epi32(counts + g * 16, left >= 16 ? 0xffff : (1u << left) - 1, acc);
    }
}
#endif

// counts[j] = the counter of column j, for j < cols (16 at a time, plane by plane; nothing past cols
// is written, so counts may be the output's row).
template <class Level, class Bits>
[[gnu::always_inline]] inline void counters_to_counts(const Bits* planes_of_row, unsigned planes, std::size_t cols,
                                                      std::int32_t* counts) {
#if defined(__GNUC__) && defined(__x86_64__)
    if constexpr (std::is_same_v<Level, Avx512Level>) return counters_to_counts_avx512(planes_of_row, planes, cols, counts);
#endif
    // Columns in vectors of the level's native width (see WideBits).
    using Ints = typename U32VectorOf<sizeof(Bits::part[0])>::type;
    constexpr std::size_t kColumns = sizeof(Ints) / sizeof(std::uint32_t);
    Ints lane;
    for (std::size_t k = 0; k < kColumns; ++k) lane[k] = static_cast<std::uint32_t>(k);
    for (std::size_t j0 = 0; j0 < cols; j0 += kColumns) {
        Ints acc = {};
        for (unsigned p = planes; p-- > 0;) {
            const auto bits = static_cast<std::uint32_t>(planes_of_row[p].word(j0 / 64) >> (j0 % 64));
            acc = (acc << 1) | (((Ints{} + bits) >> lane) & 1);  // shifts, not a compare (see WideBits)
        }
        std::memcpy(counts + j0, &acc, std::min(kColumns, cols - j0) * sizeof(std::int32_t));
    }
}

// One work item: rows [0, rows) of band `band` against columns [0, cols) of tile `tile` of the
// region, computed in a thread's workspace and stored into `out` (the region's output).
struct Item {
    const Problem& p;
    const Region& region;
    const SortedGroups& xs;
    const SortedGroups& ys;
    std::size_t band, tile, rows, cols;
    unsigned planes;
    const Workspace& w;
    const RegionOutput& out;
    const RegionOutput* mirror;  // where the item's transpose goes (at its place), or null
    bool stream;                 // non-temporal stores (a large output)
};

template <class Bits>
std::size_t popcount(const Bits& b) {
    std::size_t n = 0;
    for (std::size_t w = 0; w < kWords; ++w) n += static_cast<std::size_t>(__builtin_popcountll(b.word(w)));
    return n;
}

// Mode All: the pairs still alive in the masks of rows alive[0 .. count) checked one by one over
// samples [from, samples) with the predicate itself (few pairs are left: a failing one fails
// within a few samples; where y is x, those on the diagonal pass them all).
template <class Bits>
void finish_directly(const Item& it, std::size_t count, std::size_t from) {
    const Problem& p = it.p;
    for (std::size_t q = 0; q < count; ++q) {
        const std::size_t r = it.w.alive[q];
        Bits& mask = Workspace::as<Bits>(it.w.counters)[r];
        const float* x = p.x + it.region.row0 + it.band * kBand + r;
        for (std::size_t word = 0; word < kWords; ++word)
            for (std::uint64_t bits = mask.word(word); bits != 0; bits &= bits - 1) {
                const std::size_t j = word * 64 + static_cast<std::size_t>(__builtin_ctzll(bits));
                const float* y = p.y + it.region.col0 + it.tile * kTile + j;
                for (std::size_t s = from; s < p.samples; ++s)
                    if (!within_threshold(x[s * p.ldx], y[s * p.ldy], p.threshold)) {
                        mask.clear(j);
                        break;
                    }
            }
    }
}

// Samples [g0, g0 + valid) of a group: each one's table, and every row's interval ends.
template <class Level, class Bits>
void prepare_group(const Item& it, Bits* tables, std::size_t g0, std::size_t valid) {
    for (std::size_t k = 0; k < valid; ++k)
        build_table(tables + k * (kTile + 1), it.ys.ids(it.tile, g0 + k), it.ys.count(it.tile, g0 + k));
    std::fill_n(it.w.ends, it.rows * 2 * kGroup, 0);
    for (std::size_t k = 0; k < valid; k += kMerged)
        find_intervals<Level>(it.xs, it.ys, it.band, it.tile, g0 + k, it.p.threshold, std::min(kMerged, valid - k),
                              it.w.ends + k);
}

// Row r's mask at sample k of the group: P[hi] ^ P[lo].
template <class Bits>
[[gnu::always_inline]] inline Bits row_mask(const Bits* tables, const std::uint16_t* ends, std::size_t r, std::size_t k) {
    const Bits* table = tables + k * (kTile + 1);
    return table[ends[r * 2 * kGroup + kGroup + k]] ^ table[ends[r * 2 * kGroup + k]];
}

// Mode All: the rows' masks (in w.counters) ANDed over the samples. Returns whether any pair is left.
template <class Level>
bool all_masks(const Item& it) {
    using Bits = typename BitsOf<Level>::type;
    const Workspace& w = it.w;
    Bits* const masks = Workspace::as<Bits>(w.counters);
    Bits* const tables = Workspace::as<Bits>(w.tables);
    std::size_t alive = it.rows;
    for (std::size_t r = 0; r < it.rows; ++r) {
        masks[r] = ~Bits{};
        w.alive[r] = static_cast<std::uint16_t>(r);
    }
    for (std::size_t g0 = 0; g0 < it.p.samples; g0 += kGroup) {
        const std::size_t valid = std::min(kGroup, it.p.samples - g0);
        it.xs.ensure(g0 + valid);
        it.ys.ensure(g0 + valid);
        prepare_group<Level>(it, tables, g0, valid);
        std::size_t still = 0, survivors = 0;
        for (std::size_t q = 0; q < alive; ++q) {
            const std::size_t r = w.alive[q];
            Bits mask = masks[r];
            for (std::size_t k = 0; k < valid; ++k) mask &= row_mask(tables, w.ends, r, k);
            masks[r] = mask;
            const std::size_t n = popcount(mask);
            survivors += n;
            if (n) w.alive[still++] = static_cast<std::uint16_t>(r);
        }
        alive = still;
        if (alive == 0) return false;
        // Fewer pairs left than a group's tables and merges would cost, even if each of them
        // took 32 samples to settle: check them directly.
        const std::size_t rest = it.p.samples - (g0 + valid);
        if (rest > 0 && survivors * std::min<std::size_t>(rest, 32) < kGroup * (kTile + 4 * it.rows)) {
            finish_directly<Bits>(it, alive, g0 + valid);
            return true;
        }
    }
    return true;
}

// Count mode: the rows' counts as bit-sliced counters (planes per row, in w.counters).
template <class Level>
void count_masks(const Item& it) {
    using Bits = typename BitsOf<Level>::type;
    const Workspace& w = it.w;
    Bits* const counters = Workspace::as<Bits>(w.counters);
    Bits* const tables = Workspace::as<Bits>(w.tables);
    std::fill_n(counters, it.rows * it.planes, Bits{});
    for (std::size_t g0 = 0; g0 < it.p.samples; g0 += kGroup) {
        const std::size_t valid = std::min(kGroup, it.p.samples - g0);
        prepare_group<Level>(it, tables, g0, valid);
        for (std::size_t k = valid; k < kGroup; ++k) tables[k * (kTile + 1)] = Bits{};  // missing samples: empty masks
        for (std::size_t r = 0; r < it.rows; ++r) {
            Bits masks[kGroup], sum[5];
            for (std::size_t k = 0; k < kGroup; ++k) masks[k] = row_mask(tables, w.ends, r, k);
            add16(masks, sum);
            add_planes(counters + r * it.planes, sum, it.planes);
        }
    }
}

#if defined(__GNUC__) && defined(__x86_64__)
[[gnu::target("avx512bw")]] inline void mask_to_bytes_avx512(const std::uint64_t* words, unsigned char* bytes) {
    for (std::size_t word = 0; word < kWords; ++word)
        _mm512_storeu_si512(bytes + word * 64, _mm512_maskz_set1_epi8(words[word], 1));
}
#endif

// bytes[j] = bit j of the mask (NumPy's bool), for the tile's kTile columns.
template <class Level, class Bits>
[[gnu::always_inline]] inline void mask_to_bytes(const Bits& mask, unsigned char* bytes) {
#if defined(__GNUC__) && defined(__x86_64__)
    if constexpr (std::is_same_v<Level, Avx512Level>)
        return mask_to_bytes_avx512(reinterpret_cast<const std::uint64_t*>(&mask), bytes);
#endif
    for (std::size_t k = 0; k < kTile / 8; ++k) {
        // Byte k of the mask to 8 bytes: copied into each, bit i kept in byte i, then moved to bit 0.
        std::uint64_t spread = ((mask.word(k / 8) >> (k % 8 * 8)) & 0xff) * 0x0101010101010101ull & 0x8040201008040201ull;
        spread = ((spread + 0x7f7f7f7f7f7f7f7full) >> 7) & 0x0101010101010101ull;
        std::memcpy(bytes + k * 8, &spread, 8);
    }
}

// Copies a row's bytes to the output (streamed where the output is large).
void put_row(const Item& it, const void* row, std::size_t bytes, unsigned char* dst) {
    if (it.stream) {
        cpu::stream_bytes(row, bytes, dst);
    } else {
        std::memcpy(dst, row, bytes);
    }
}

// Mode All: a row's mask (bit j is column j) in the output's encoding, `cols` columns of it.
template <class Level, class Bits>
const void* encode_mask(const Item& it, const Bits& mask) {
    if (it.p.output == SimilarityOutput::Bitmask) return &mask;  // bit j % 8 of byte j / 8: the same bits
    mask_to_bytes<Level>(mask, it.w.row);
    return it.w.row;
}

// Mode All's mirror, from the masks: 64 x 64 bit blocks transposed into w.transposed (a mask per
// column, bit r for row r), each then a row of the mirror.
template <class Level>
void store_mirror_masks(const Item& it, bool any_alive) {
    using Bits = typename BitsOf<Level>::type;
    const Workspace& w = it.w;
    const Bits* const masks = Workspace::as<Bits>(w.counters);
    auto* const transposed_words = reinterpret_cast<std::uint64_t*>(w.transposed);
    for (std::size_t cb = 0; cb < kWords; ++cb)
        for (std::size_t rb = 0; rb < kWords; ++rb) {
            std::uint64_t block[64];
            for (std::size_t k = 0; k < 64; ++k) {
                const std::size_t r = rb * 64 + k;
                block[k] = any_alive && r < it.rows ? masks[r].word(cb) : 0;
            }
            cpu::transpose_64x64_bits(block);
            for (std::size_t k = 0; k < 64; ++k) transposed_words[(cb * 64 + k) * kWords + rb] = block[k];
        }
    const std::size_t bytes = row_bytes(it.rows, it.p.output);
    for (std::size_t c = 0; c < it.cols; ++c)
        put_row(it, encode_mask<Level>(it, Workspace::as<Bits>(w.transposed)[c]), bytes,
                static_cast<unsigned char*>(it.mirror->data) + c * it.mirror->row_stride_bytes);
}

// The item's rows to the output, each encoded in the workspace and then copied, and its mirror
// where it has one (mode All's from the masks, count mode's a transpose of the stored counts).
template <class Level>
void store_item(const Item& it, bool any_alive) {
    using Bits = typename BitsOf<Level>::type;
    const Workspace& w = it.w;
    const Bits* const counters = Workspace::as<Bits>(w.counters);
    const bool all = it.p.mode == SimilarityMode::All;
    const std::size_t bytes = row_bytes(it.cols, it.p.output);
    const RegionOutput stored{static_cast<unsigned char*>(it.out.data) + it.band * kBand * it.out.row_stride_bytes +
                                  row_bytes(it.tile * kTile, it.p.output),
                              it.out.row_stride_bytes};
    for (std::size_t r = 0; r < it.rows; ++r) {
        unsigned char* dst = static_cast<unsigned char*>(stored.data) + r * stored.row_stride_bytes;
        const void* row = w.row;
        const Bits mask = all && any_alive ? counters[r] : Bits{};  // lives until the row is stored
        if (all) {
            row = encode_mask<Level>(it, mask);
        } else if (it.p.output == SimilarityOutput::Int32 && !it.stream) {  // the counts straight to the output
            counters_to_counts<Level>(counters + r * it.planes, it.planes, it.cols, reinterpret_cast<std::int32_t*>(dst));
            continue;
        } else {
            counters_to_counts<Level>(counters + r * it.planes, it.planes, it.cols, w.counts);
            if (it.p.output == SimilarityOutput::Int32) {
                row = w.counts;
            } else {
                cpu::store_counts(w.counts, kTile, 1, it.cols, 0, 0, it.p, RegionOutput{w.row, bytes});
            }
        }
        put_row(it, row, bytes, dst);
    }
    if (it.stream) cpu::stream_fence();
    if (!it.mirror) return;
    if (all) {
        store_mirror_masks<Level>(it, any_alive);
        if (it.stream) cpu::stream_fence();
    } else {
        cpu_transpose(it.p, stored, it.rows, it.cols, *it.mirror);
    }
}

template <class Level>
void run_item(const Item& it) {
    if (it.p.mode == SimilarityMode::All) {
        store_item<Level>(it, all_masks<Level>(it));
    } else {
        count_masks<Level>(it);
        store_item<Level>(it, true);
    }
}

// An item's kernel, compiled for each instruction-set level.
using ItemKernel = void (*)(const Item&);
template <class Level>
void item_kernel(const Item& it) {
    Level::run([&] { run_item<Level>(it); });
}

RegionOutput offset(const RegionOutput& o, const Problem& p, std::size_t r, std::size_t c) {
    return {static_cast<unsigned char*>(o.data) + r * o.row_stride_bytes + row_bytes(c, p.output), o.row_stride_bytes};
}

}  // namespace

void cpu_sorted(const Problem& p, const Region& region, const RegionOutput& out, detail::MemoryTracker& tracker,
                detail::Progress* progress, const RegionOutput* mirror) {
    if (region.rows == 0 || region.cols == 0) return;
    if (p.samples == 0) return cpu_fused(p, region, out, tracker, progress, mirror);  // nothing to sort
    const bool diagonal =
        uses_symmetry(p, Method::Sorted) && region.row0 == region.col0 && region.rows == region.cols;
    if (region.rows > kStrip || region.cols > kStrip) {  // strips, so that the sorted copies stay small
        for (std::size_t r = 0; r < region.rows; r += kStrip)
            for (std::size_t c = diagonal ? r : 0; c < region.cols; c += kStrip) {
                const Region sub{region.row0 + r, region.col0 + c, std::min(kStrip, region.rows - r),
                                 std::min(kStrip, region.cols - c)};
                const RegionOutput sub_mirror = mirror ? offset(*mirror, p, c, r) : offset(out, p, c, r);
                cpu_sorted(p, sub, offset(out, p, r, c), tracker, progress,
                           mirror || (diagonal && c > r) ? &sub_mirror : nullptr);
            }
        return;
    }
    const bool lazily = p.mode == SimilarityMode::All;
    const SortedGroups ys(p.y, p.ldy, region.col0, region.cols, p.samples, lazily, tracker, "similarity sorted: y");
    const SortedGroups xs_own = diagonal ? SortedGroups{}
                                         : SortedGroups(p.x, p.ldx, region.row0, region.rows, p.samples, lazily,
                                                        tracker, "similarity sorted: x");
    const SortedGroups& xs = diagonal ? ys : xs_own;  // the same features, sorted once
    const std::size_t bands = ceil_div(region.rows, kBand), tiles = ceil_div(region.cols, kTile);
    const std::size_t items = bands * tiles;
    const unsigned planes = counter_planes(p.samples);
    int threads = 1;
#ifdef _OPENMP
    threads = static_cast<int>(std::min<std::size_t>(items, omp_get_max_threads()));
#endif
    const std::size_t workspace_bytes = (Workspace::bytes(planes) + 63) / 64 * 64;
    const Aligned<unsigned char> workspaces(tracker, threads * workspace_bytes, "similarity sorted: tables and counters");
    // A large output bypasses the cache (nothing reads it soon, and a normal store reads each
    // line before writing it); a tile that a sink reads next stays in it.
    const bool stream = region.rows * row_bytes(region.cols, p.output) >= cpu::kStreamBytes;
    const ItemKernel kernel = [] {
        ItemKernel k = nullptr;
        CpuLevels::visit(cpu_kernel_level(), [&](auto entry) { k = item_kernel<decltype(entry)>; });
        return k;
    }();

#pragma omp parallel for schedule(dynamic) num_threads(threads)
    for (std::size_t item = 0; item < items; ++item) {
#ifdef _OPENMP
        const std::size_t thread = static_cast<std::size_t>(omp_get_thread_num());
#else
        const std::size_t thread = 0;
#endif
        const std::size_t band = item / tiles, tile = item % tiles;
        const std::size_t rows = std::min(kBand, region.rows - band * kBand);
        const std::size_t cols = std::min(kTile, region.cols - tile * kTile);
        const bool mirrored = diagonal ? tile > band : mirror != nullptr;
        if (!(diagonal && tile < band)) {  // below the diagonal: written as a mirror
            const Workspace w(workspaces.data() + thread * workspace_bytes, planes);
            const RegionOutput transposed = mirrored ? offset(diagonal ? out : *mirror, p, tile * kTile, band * kBand)
                                                     : RegionOutput{};
            kernel(Item{p, region, xs, ys, band, tile, rows, cols, planes, w, out, mirrored ? &transposed : nullptr,
                        stream});
            if (progress) progress->add(std::uint64_t{rows} * cols * (mirrored ? 2 : 1));
        }
    }
}

}  // namespace hpcml::detail::similarity

namespace hpcml::detail::similarity {

// The measured crossover (docs/similarity.md, "Which method auto runs"; the grid in
// bench/results/2026-11-27-cpu-sorted-method.md): the sorted method pays a tile's tables and a
// band's merges per 512 columns and rows and a sort per sample, so it needs both sides wide and,
// in count mode, a group's worth of samples; mode All's early exit favours it at any sample count.
Method cpu_auto_method(const Problem& p) {
    constexpr std::size_t kLeastSide = 512, kLeastSamples = 16;
    constexpr std::uint64_t kLeastPairs = 2'500'000;
    const bool enough_samples = p.mode == SimilarityMode::All || p.samples >= kLeastSamples;
    const bool large = std::min(p.n, p.m) >= kLeastSide && std::uint64_t{p.n} * p.m >= kLeastPairs;
    return enough_samples && large ? Method::Sorted : Method::Fused;
}

}  // namespace hpcml::detail::similarity
