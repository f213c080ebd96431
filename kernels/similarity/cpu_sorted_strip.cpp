// The sorted method's sorted strip (cpu_sorted.hpp): per sample, the finite values of the strip's
// y in one radix sort by value, split by tile into each tile's columns and their strip ranks, and
// x's (the same sort where x is y) merged with them once to give every row's rank interval.
// Compiled per instruction-set level; with AVX-512 the finite values' items are made 16 at a time
// and the histograms' prefix sums are vector scans.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <utility>

#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>
#endif

#ifdef _OPENMP
#include <omp.h>
#endif

#include "cpu_sorted_levels.hpp"

namespace hpcml::detail::similarity::sorted {

namespace {

// The radix sort's three digits of an item (key << 32 | f), f < 2^16: key bits 0-10, 11-21, then
// 22-31.
constexpr std::size_t kDigits = 2048;
template <int d>
std::size_t digit(std::uint64_t item) {
    return (item >> (32 + 11 * d)) & (kDigits - 1);
}

#if defined(__GNUC__) && defined(__x86_64__)
// GCC 12's AVX-512 headers start some results from a self-initialised "undefined" vector, which
// -Wmaybe-uninitialized reports once inlined (GCC bug 105593).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

// exclusive_scan by AVX-512: within each 16 counts four shifted adds, between them the running
// total's broadcast.
[[gnu::target("avx512f")]] void exclusive_scan_avx512(std::uint32_t* a, std::size_t n) {
    const __m512i zero = _mm512_setzero_si512(), last = _mm512_set1_epi32(15);
    __m512i total = zero;
    for (std::size_t d = 0; d < n; d += 16) {
        const __m512i x = _mm512_loadu_si512(a + d);
        __m512i sums = _mm512_add_epi32(x, _mm512_alignr_epi32(x, zero, 15));
        sums = _mm512_add_epi32(sums, _mm512_alignr_epi32(sums, zero, 14));
        sums = _mm512_add_epi32(sums, _mm512_alignr_epi32(sums, zero, 12));
        sums = _mm512_add_epi32(sums, _mm512_alignr_epi32(sums, zero, 8));
        _mm512_storeu_si512(a + d, _mm512_add_epi32(_mm512_sub_epi32(sums, x), total));
        total = _mm512_add_epi32(total, _mm512_permutexvar_epi32(last, sums));
    }
}

// finite_items by AVX-512, 16 values at a time: the finite ones' items compressed in registers
// (a compress to memory is slow on some CPUs) and stored whole.
[[gnu::target("avx512f")]] std::size_t finite_items_avx512(const float* row, std::size_t from, std::size_t to,
                                                           std::uint64_t* items, std::size_t at) {
    const __m512i lanes = _mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0), sign = _mm512_set1_epi32(INT32_MIN);
    for (std::size_t f = from; f < to; f += 16) {
        const auto in = static_cast<__mmask16>(to - f >= 16 ? 0xffffu : (1u << (to - f)) - 1);
        const __m512 v = _mm512_maskz_loadu_ps(in, row + f);
        const __mmask16 finite = _mm512_mask_cmp_ps_mask(
            in, _mm512_abs_ps(v), _mm512_set1_ps(std::numeric_limits<float>::infinity()), _CMP_LT_OQ);
        const __m512i bits = _mm512_castps_si512(v);  // order_key: ~bits where negative, else bits | sign
        const __m512i keys = _mm512_xor_si512(bits, _mm512_or_si512(_mm512_srai_epi32(bits, 31), sign));
        for (int half = 0; half < 2; ++half) {
            const __m256i key = half ? _mm512_extracti64x4_epi64(keys, 1) : _mm512_castsi512_si256(keys);
            const __m512i id = _mm512_add_epi64(lanes, _mm512_set1_epi64(static_cast<long long>(f + 8 * half)));
            const __m512i item = _mm512_or_si512(_mm512_slli_epi64(_mm512_cvtepu32_epi64(key), 32), id);
            const auto keep = static_cast<__mmask8>(finite >> (8 * half));
            _mm512_storeu_si512(items + at, _mm512_maskz_compress_epi64(keep, item));
            at += static_cast<std::size_t>(__builtin_popcount(keep));
        }
    }
    return at;
}

// split_by_tile by AVX-512, 16 sorted items at a time: per tile, its items' ids and ranks
// compressed in registers and stored whole (masked near the tile's end).
[[gnu::target("avx512f,avx512bw,avx512vl")]] void split_by_tile_avx512(const std::uint64_t* items, std::size_t count,
                                                                       std::size_t tiles, std::uint16_t* const* ids,
                                                                       std::uint16_t* const* ranks,
                                                                       std::uint16_t* filled) {
    const __m512i lanes = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
    const __m512i words = _mm512_set_epi16(31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1,  //
                                           30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    for (std::size_t g = 0; g < count; g += 16) {
        const auto in = static_cast<__mmask16>(count - g >= 16 ? 0xffffu : (1u << (count - g)) - 1);
        const __m256i low = _mm512_cvtepi64_epi32(_mm512_maskz_loadu_epi64(static_cast<__mmask8>(in), items + g));
        const __m256i high =
            _mm512_cvtepi64_epi32(_mm512_maskz_loadu_epi64(static_cast<__mmask8>(in >> 8), items + g + 8));
        const __m512i f = _mm512_inserti64x4(_mm512_castsi256_si512(low), high, 1);  // features, < 2^16
        const __m512i tile = _mm512_srli_epi32(f, 9);
        const __m512i packed = _mm512_or_si512(  // id | rank << 16
            _mm512_and_si512(f, _mm512_set1_epi32(kTile - 1)),
            _mm512_slli_epi32(_mm512_add_epi32(lanes, _mm512_set1_epi32(static_cast<int>(g))), 16));
        for (std::size_t t = 0; t < tiles; ++t) {
            const __mmask16 mine = _mm512_mask_cmpeq_epi32_mask(in, tile, _mm512_set1_epi32(static_cast<int>(t)));
            // The ids to the low half, the ranks to the high half: one word permute (Zen 4
            // runs a down-converting store, VPMOVDW to memory, as microcode).
            const __m512i kept = _mm512_permutexvar_epi16(words, _mm512_maskz_compress_epi32(mine, packed));
            const auto n = static_cast<unsigned>(__builtin_popcount(mine));
            // Whole stores while the tile's 512 slots have room for them (their tail is written
            // over next), masked ones of exactly n near its end (masked stores are the slower).
            if (filled[t] + std::size_t{16} <= kTile) {
                _mm256_storeu_si256(reinterpret_cast<__m256i*>(ids[t] + filled[t]), _mm512_castsi512_si256(kept));
                _mm256_storeu_si256(reinterpret_cast<__m256i*>(ranks[t] + filled[t]), _mm512_extracti64x4_epi64(kept, 1));
            } else {
                const auto store = static_cast<__mmask16>((1u << n) - 1);
                _mm256_mask_storeu_epi16(ids[t] + filled[t], store, _mm512_castsi512_si256(kept));
                _mm256_mask_storeu_epi16(ranks[t] + filled[t], store, _mm512_extracti64x4_epi64(kept, 1));
            }
            filled[t] = static_cast<std::uint16_t>(filled[t] + n);
        }
    }
}
#pragma GCC diagnostic pop
#endif

// a[d] = a[0] + ... + a[d - 1] for d < n (a multiple of 16).
template <class Level>
void exclusive_scan(std::uint32_t* a, std::size_t n) {
#if defined(__GNUC__) && defined(__x86_64__)
    if constexpr (std::is_same_v<Level, Avx512Level>) return exclusive_scan_avx512(a, n);
#endif
    std::uint32_t sum = 0;
    for (std::size_t d = 0; d < n; ++d) sum += std::exchange(a[d], sum);
}

// Room past a sample's items for finite_items' whole 8-item stores.
constexpr std::size_t kItemsRoom = 16;

// items[at ..) = (order_key(row[f]) << 32 | f) for the finite row[f], f in [from, to), in order;
// returns the new end. May write up to 8 items past it (kItemsRoom).
template <class Level>
std::size_t finite_items(const float* row, std::size_t from, std::size_t to, std::uint64_t* items, std::size_t at) {
#if defined(__GNUC__) && defined(__x86_64__)
    if constexpr (std::is_same_v<Level, Avx512Level>) return finite_items_avx512(row, from, to, items, at);
#endif
    for (std::size_t f = from; f < to; ++f)
        if (std::isfinite(row[f])) items[at++] = std::uint64_t{order_key(row[f])} << 32 | f;
    return at;
}

#if defined(__GNUC__) && defined(__x86_64__)
// descends by AVX-512: the 8 pairs in one compare.
[[gnu::target("avx512f")]] inline bool descends_avx512(const std::uint64_t* items, std::size_t from, std::size_t to) {
    const auto in = static_cast<__mmask8>((1u << (to - from)) - 1);
    return _mm512_mask_cmpgt_epu64_mask(in, _mm512_maskz_loadu_epi64(in, items + from - 1),
                                        _mm512_maskz_loadu_epi64(in, items + from)) != 0;
}
#endif

// Whether items[k - 1] > items[k] for any k in [from, to), at most 8 of them (from >= 1).
template <class Level>
bool descends(const std::uint64_t* items, std::size_t from, std::size_t to) {
#if defined(__GNUC__) && defined(__x86_64__)
    if constexpr (std::is_same_v<Level, Avx512Level>) return descends_avx512(items, from, to);
#endif
    bool any = false;
    for (std::size_t k = from; k < to; ++k) any |= items[k - 1] > items[k];
    return any;
}

// Sum of squares of a histogram's counts (integers, so that the sum is vectorised).
double squares(const std::uint32_t* counts) {
    std::uint64_t sum = 0;
    for (std::size_t d = 0; d < kDigits; ++d) sum += std::uint64_t{counts[d]} * counts[d];
    return static_cast<double>(sum);
}

// Whether few of n keys share both high digits, by the high digits' histograms as if the digits
// were independent: sum c1^2 sum c2^2 / 2 n^2 pairs, at most n / 8.
bool few_share_high_digits(const std::uint32_t* high1, const std::uint32_t* high2, std::size_t n) {
    return squares(high1) * squares(high2) <= double(n) * n * n / 4;
}

// Items sorted but for runs that share a key's high digits put right by insertion, 8 checked at
// a time by `descends`; false once past a budget of n moves (the items then still a permutation).
template <class Level>
bool insert_out_of_order(std::uint64_t* items, std::size_t n) {
    std::size_t moves = 0;
    for (std::size_t k0 = 1; k0 < n; k0 += 8) {
        const std::size_t end = std::min(n, k0 + 8);
        if (!descends<Level>(items, k0, end)) continue;
        for (std::size_t k = k0; k < end; ++k) {
            const std::uint64_t item = items[k];
            std::size_t j = k;
            for (; j > 0 && items[j - 1] > item; --j) items[j] = items[j - 1];
            items[j] = item;
            moves += k - j;
        }
        if (moves > n) return false;
    }
    return true;
}

// Sorts items[0 .. n) by key, least significant digit first (each digit's histogram counted in
// one read of the items, then a pass per digit, none where one digit holds every item); returns
// where the sorted items are (items or scratch). Up to high_digits_most items, where few keys
// share both high digits (floats within a relative 2^-12 or so: few where values are spread),
// the high digits alone and then insertion; the low digit's pass too where the histograms predict
// many (values close together) or the insertions pass their budget. Past high_digits_most,
// spread values share them often enough that the insertions cost as much as the low digit's pass.
template <class Level>
std::uint64_t* radix_sort(std::uint64_t* items, std::uint64_t* scratch, std::size_t n, std::uint32_t* histograms) {
    const auto count = [&](auto... d) {
        (std::memset(histograms + d * kDigits, 0, kDigits * sizeof *histograms), ...);
        for (std::size_t k = 0; k < n; ++k) (++histograms[d * kDigits + digit<d>(items[k])], ...);
    };
    const auto pass = [&](auto d) {
        std::uint32_t* const start = histograms + d * kDigits;
        if (n == 0 || start[digit<d>(items[0])] == n) return;
        exclusive_scan<Level>(start, kDigits);
        for (std::size_t k = 0; k < n; ++k) scratch[start[digit<d>(items[k])]++] = items[k];
        std::swap(items, scratch);
    };
    using D0 = std::integral_constant<int, 0>;
    using D1 = std::integral_constant<int, 1>;
    using D2 = std::integral_constant<int, 2>;
    if (n <= kSortedCpu.high_digits_most) {
        count(D1{}, D2{});
        if (few_share_high_digits(histograms + kDigits, histograms + 2 * kDigits, n)) {
            pass(D1{});
            pass(D2{});
            if (insert_out_of_order<Level>(items, n)) return items;
            count(D1{}, D2{});  // the passes' scans turned them into offsets
        }
        count(D0{});
    } else {
        count(D0{}, D1{}, D2{});
    }
    pass(D0{});
    pass(D1{});
    pass(D2{});
    return items;
}

// One side of a sample sorted: its finite values ascending (then kPad +inf) and their features.
struct SortedSide {
    const float* values;
    const std::uint64_t* items;  // key << 32 | feature
    std::size_t count;
};
template <class Level>
SortedSide sort_side(const float* row, std::size_t features, std::uint64_t* items, std::uint64_t* scratch,
                     std::uint32_t* histograms, float* values) {
    const std::size_t n = finite_items<Level>(row, 0, features, items, 0);
    const std::uint64_t* sorted = radix_sort<Level>(items, scratch, n, histograms);
    for (std::size_t k = 0; k < n; ++k) values[k] = from_order_key(static_cast<std::uint32_t>(sorted[k] >> 32));
    std::fill_n(values + n, kPad, std::numeric_limits<float>::infinity());
    return {values, sorted, n};
}

// Every row's interval: x ascending merged with y, both ends moved forward a window of 16 at a
// time (they never move back, since for sorted a both are non-decreasing). A step waits for the
// one before it (a load, a subtract, a compare), so x's order is cut into kChains runs merged side
// by side, each starting from its first value's ends found by bisection. With `starts_only`, only
// each row's lo, in x's order, into lows.
constexpr std::size_t kChains = 4;
template <class Level, bool starts_only>
void merge_ends(const SortedSide& xs, const SortedSide& ys, float threshold, RankInterval* intervals,
                std::uint16_t* lows) {
    std::size_t q[kChains], end[kChains];
    std::uint32_t lo[kChains], hi[kChains];
    const float* const v = ys.values;
    for (std::size_t c = 0; c < kChains; ++c) {
        q[c] = xs.count * c / kChains;
        end[c] = xs.count * (c + 1) / kChains;
        const float a = q[c] < end[c] ? xs.values[q[c]] : 0.0f;
        lo[c] = static_cast<std::uint32_t>(
            std::partition_point(v, v + ys.count, [&](float y) { return before_interval(a, y, threshold); }) - v);
        hi[c] = lo[c];
    }
    const auto step = [&](std::size_t c) {
        const float a = xs.values[q[c]];
        for (std::uint32_t n = kPad; n == kPad;) lo[c] += n = count_before<Level>(a, v + lo[c], threshold, false);
        if constexpr (starts_only) {
            lows[q[c]] = static_cast<std::uint16_t>(lo[c]);
        } else {
            hi[c] = std::max(hi[c], lo[c]);
            for (std::uint32_t n = kPad; n == kPad;) hi[c] += n = count_before<Level>(a, v + hi[c], threshold, true);
            intervals[xs.items[q[c]] & 0xffff] = {static_cast<std::uint16_t>(lo[c]), static_cast<std::uint16_t>(hi[c])};
        }
        ++q[c];
    };
    const std::size_t common = xs.count / kChains;  // every run is at least this long
    for (std::size_t k = 0; k < common; ++k) {
#pragma GCC unroll 4
        for (std::size_t c = 0; c < kChains; ++c) step(c);
    }
    for (std::size_t c = 0; c < kChains; ++c)
        while (q[c] < end[c]) step(c);
}

// Where x is y and the threshold positive, j is in row q's interval exactly when q is in row j's
// (|a - b| < t is symmetric, and a row is in its own), so hi(q) = 1 + the last j with lo(j) <= q:
// the ends follow from the starts (highs[lo(j)] = j + 1 for ascending j, then a running maximum),
// with no second search. Scratch: 2 count entries at lows.
void intervals_from_starts(const SortedSide& ys, std::uint16_t* lows, RankInterval* intervals) {
    std::uint16_t* const highs = lows + ys.count;
    std::fill_n(highs, ys.count, 0);
    for (std::size_t j = 0; j < ys.count; ++j) highs[lows[j]] = static_cast<std::uint16_t>(j + 1);  // lo(j) <= j
    std::uint16_t hi = 0;  // in a register: through memory, each step would wait for the last one's store
    for (std::size_t q = 0; q < ys.count; ++q) {
        hi = std::max(hi, highs[q]);
        intervals[ys.items[q] & 0xffff] = {lows[q], hi};
    }
}

// Every row's interval [lo, hi) in y's order; rows whose x is not finite keep [0, 0). Where x is
// y, scratch holds 2 entries per row.
template <class Level>
void merge_intervals(const SortedSide& xs, const SortedSide& ys, float threshold, bool same, std::size_t rows,
                     std::uint16_t* scratch, RankInterval* intervals) {
    if (xs.count < rows) std::fill_n(intervals, rows, RankInterval{0, 0});  // else every row's is written
    if (same && threshold > 0) {
        merge_ends<Level, true>(ys, ys, threshold, intervals, scratch);
        intervals_from_starts(ys, scratch, intervals);
        return;
    }
    merge_ends<Level, false>(xs, ys, threshold, intervals, nullptr);
}

// One sample (SortedStrip::sort_sample), compiled for Level. Scratch: each side's items and radix
// scratch (features + kItemsRoom each) and sorted values (features + kPad).
struct SampleOut {
    std::uint16_t* ids;  // tile t's at ids + t * stride * kTile (ranks likewise)
    std::uint16_t* ranks;
    std::uint16_t* counts;  // tile t's at counts[t * stride]
    std::size_t stride;
    std::uint16_t* strip_count;
    RankInterval* intervals;  // rows' intervals
};
// Each tile's columns in the strip's order, with their ranks in it, and how many it has.
template <class Level>
void split_by_tile(const SortedSide& ys, std::size_t tiles, const SampleOut& out) {
    constexpr std::size_t kMostTiles = kSortedCpu.strip / kTile;
    std::uint16_t* ids[kMostTiles];
    std::uint16_t* ranks[kMostTiles];
    std::uint16_t filled[kMostTiles] = {};
    for (std::size_t t = 0; t < tiles; ++t) {
        ids[t] = out.ids + t * out.stride * kTile;
        ranks[t] = out.ranks + t * out.stride * kTile;
    }
    bool split = false;
#if defined(__GNUC__) && defined(__x86_64__)
    if constexpr (std::is_same_v<Level, Avx512Level>)
        if (tiles <= kSortedCpu.vector_split_tiles) {
            split_by_tile_avx512(ys.items, ys.count, tiles, ids, ranks, filled);
            split = true;
        }
#endif
    // Each item's tile counter is a store and a load through memory, a chain where items of the
    // same tile follow each other.
    for (std::size_t g = 0; g < ys.count && !split; ++g) {
        const std::size_t f = ys.items[g] & 0xffff, t = f / kTile, at = filled[t]++;
        ids[t][at] = static_cast<std::uint16_t>(f % kTile);
        ranks[t][at] = static_cast<std::uint16_t>(g);
    }
    for (std::size_t t = 0; t < tiles; ++t) out.counts[t * out.stride] = filled[t];
}

template <class Level>
void sort_sample_for(const float* x, std::size_t rows, const float* y, std::size_t cols, bool same, float threshold,
                     std::uint64_t* scratch, std::uint32_t* histograms, const SampleOut& out) {
    const std::size_t y_room = cols + kItemsRoom, x_room = rows + kItemsRoom;
    auto* const y_values = reinterpret_cast<float*>(scratch + 2 * y_room + 2 * x_room);
    auto* const x_values = y_values + cols + kPad;
    const SortedSide ys = sort_side<Level>(y, cols, scratch, scratch + y_room, histograms, y_values);
    split_by_tile<Level>(ys, ceil_div(cols, kTile), out);
    *out.strip_count = static_cast<std::uint16_t>(ys.count);
    const SortedSide xs =
        same ? ys
             : sort_side<Level>(x, rows, scratch + 2 * y_room, scratch + 2 * y_room + x_room, histograms, x_values);
    // Where x is y, x's items' room is free: the ends' scratch.
    merge_intervals<Level>(xs, ys, threshold, same, rows, reinterpret_cast<std::uint16_t*>(scratch + 2 * y_room),
                           out.intervals);
}

}  // namespace

SortedStrip::SortedStrip(const Problem& p, const Region& region, bool same, bool lazily, detail::MemoryTracker& tracker)
    : x_(p.x + region.row0),
      y_(p.y + region.col0),
      ldx_(p.ldx),
      ldy_(p.ldy),
      rows_(region.rows),
      cols_(region.cols),
      tiles_(ceil_div(region.cols, kTile)),
      samples_(p.samples),
      threshold_(p.threshold),
      same_(same),
      ids_(tracker, tiles_ * samples_ * kTile, "similarity sorted: tiles' columns"),
      ranks_(tracker, tiles_ * samples_ * kTile, "similarity sorted: tiles' ranks"),
      counts_(tracker, tiles_ * samples_, "similarity sorted: tiles' counts"),
      strip_counts_(tracker, samples_, "similarity sorted: counts"),
      intervals_(tracker, rows_ * samples_, "similarity sorted: rows' intervals"),
      level_(cpu_kernel_level()),
      blocks_(ceil_div(samples_, kSortedCpu.sort_block)),
      sorted_(std::make_unique<std::once_flag[]>(blocks_)) {
#ifdef _OPENMP
    threads_ = static_cast<std::size_t>(omp_get_max_threads());
#endif
    scratch_ = detail::HostBuffer<std::uint64_t>(tracker, threads_ * scratch_size(), "similarity sorted: sort scratch");
    histograms_ = detail::HostBuffer<std::uint32_t>(tracker, threads_ * 3 * kDigits, "similarity sorted: histograms");
    const std::size_t now = lazily ? std::min(samples_, kSortedCpu.sort_block) : samples_;
    const int threads = (same_ ? cols_ : rows_ + cols_) * now >= kSortedCpu.parallel_sort_min
                            ? static_cast<int>(std::min(threads_, now))
                            : 1;
#pragma omp parallel for schedule(dynamic) num_threads(threads)
    for (std::size_t s = 0; s < now; ++s) sort_sample(s);
    for (std::size_t b = 0; b * kSortedCpu.sort_block < now; ++b) std::call_once(sorted_[b], [] {});
}

// Samples [0, end) sorted (each block once, by the first thread to ask).
void SortedStrip::ensure(std::size_t end) const {
    for (std::size_t b = 0; b * kSortedCpu.sort_block < end; ++b)
        std::call_once(sorted_[b], [&] {
            for (std::size_t s = b * kSortedCpu.sort_block; s < std::min(samples_, (b + 1) * kSortedCpu.sort_block);
                 ++s)
                sort_sample(s);
        });
}

void SortedStrip::sort_sample(std::size_t s) const {
    std::size_t thread = 0;
#ifdef _OPENMP
    thread = std::min(static_cast<std::size_t>(omp_get_thread_num()), threads_ - 1);
#endif
    const SampleOut out{ids_.data() + s * kTile,  ranks_.data() + s * kTile,    counts_.data() + s, samples_,
                        strip_counts_.data() + s, intervals_.data() + s * rows_};
    CpuLevels::visit(level_, [&](auto entry) {
        using Level = decltype(entry);
        Level::run([&] {
            sort_sample_for<Level>(x_ + s * ldx_, rows_, y_ + s * ldy_, cols_, same_, threshold_,
                                   scratch_.data() + thread * scratch_size(), histograms_.data() + thread * 3 * kDigits,
                                   out);
        });
    });
}

// Each side's items and radix scratch, then its sorted values (floats, two to an item).
std::size_t SortedStrip::scratch_size() const {
    return 2 * (cols_ + kItemsRoom) + 2 * (rows_ + kItemsRoom) + ceil_div(cols_ + rows_ + 2 * kPad, 2);
}

}  // namespace hpcml::detail::similarity::sorted
