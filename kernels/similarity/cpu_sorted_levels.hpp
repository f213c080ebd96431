// The sorted method's steps that each instruction-set level writes its own way (cpu_sorted.cpp
// and cpu_sorted_strip.cpp call them by level): the adders' full adder, the merge's window
// compares, a tile's table of prefix masks and its rank map, a row of counters to counts, a
// mask to bytes and mode All's direct check of 16 columns. The generic form of each is what the baseline (and Arm) compiles.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "cpu_sorted.hpp"

namespace hpcml::detail::similarity::sorted {

#if defined(__GNUC__) && defined(__x86_64__)
// The adders' full adder for AVX-512 rows: the sum and the carry (majority) are one VPTERNLOG each,
// where GCC makes two or three instructions of the generic forms (add16 and add_planes find
// these by overload).
template <int truth_table>
[[gnu::target("avx512f")]] inline WideBits<U64x8> ternary_logic(const WideBits<U64x8>& a, const WideBits<U64x8>& b,
                                                                const WideBits<U64x8>& c) {
    WideBits<U64x8> r;
    r.part[0] = reinterpret_cast<U64x8>(_mm512_ternarylogic_epi64(reinterpret_cast<__m512i>(a.part[0]),
                                                                  reinterpret_cast<__m512i>(b.part[0]),
                                                                  reinterpret_cast<__m512i>(c.part[0]), truth_table));
    return r;
}
[[gnu::target("avx512f")]] inline WideBits<U64x8> sum3(const WideBits<U64x8>& a, const WideBits<U64x8>& b,
                                                       const WideBits<U64x8>& c) {
    return ternary_logic<0x96>(a, b, c);  // a ^ b ^ c
}
[[gnu::target("avx512f")]] inline WideBits<U64x8> carry3(const WideBits<U64x8>& a, const WideBits<U64x8>& b,
                                                         const WideBits<U64x8>& c) {
    return ternary_logic<0xe8>(a, b, c);  // at least two of a, b, c
}
#endif

#if defined(__GNUC__) && defined(__x86_64__)
[[gnu::target("avx512f")]] inline std::uint32_t count_before_avx512(float a, const float* v, float threshold,
                                                                    bool end) {
    const __m512 d = _mm512_sub_ps(_mm512_set1_ps(a), _mm512_loadu_ps(v));
    const __mmask16 before = end ? _mm512_cmp_ps_mask(d, _mm512_set1_ps(-threshold), _CMP_GT_OQ)
                                 : _mm512_cmp_ps_mask(d, _mm512_set1_ps(threshold), _CMP_NLT_UQ);
    return static_cast<std::uint32_t>(__builtin_popcount(before));
}
#endif

#if defined(__GNUC__) && defined(__x86_64__)
// count_before by AVX (two 8-lane compares) and by SSE2 (four 4-lane ones); GCC leaves the
// generic loop's 16 compares scalar.
[[gnu::target("avx2,popcnt")]] inline std::uint32_t count_before_avx2(float a, const float* v, float threshold,
                                                                      bool end) {
    const __m256 x = _mm256_set1_ps(a), bound = _mm256_set1_ps(end ? -threshold : threshold);
    const __m256 d0 = _mm256_sub_ps(x, _mm256_loadu_ps(v)), d1 = _mm256_sub_ps(x, _mm256_loadu_ps(v + 8));
    const int before = end ? _mm256_movemask_ps(_mm256_cmp_ps(d0, bound, _CMP_GT_OQ)) |
                                 _mm256_movemask_ps(_mm256_cmp_ps(d1, bound, _CMP_GT_OQ)) << 8
                           : _mm256_movemask_ps(_mm256_cmp_ps(d0, bound, _CMP_NLT_UQ)) |
                                 _mm256_movemask_ps(_mm256_cmp_ps(d1, bound, _CMP_NLT_UQ)) << 8;
    return static_cast<std::uint32_t>(__builtin_popcount(static_cast<unsigned>(before)));
}
inline std::uint32_t count_before_sse2(float a, const float* v, float threshold, bool end) {
    const __m128 x = _mm_set1_ps(a), bound = _mm_set1_ps(end ? -threshold : threshold);
    std::uint32_t n = 0;
    for (int k = 0; k < 16; k += 4) {
        const __m128 d = _mm_sub_ps(x, _mm_loadu_ps(v + k));
        n += static_cast<std::uint32_t>(__builtin_popcount(
            static_cast<unsigned>(_mm_movemask_ps(end ? _mm_cmpgt_ps(d, bound) : _mm_cmpnlt_ps(d, bound)))));
    }
    return n;
}
#endif

// How many of v[0 .. 16) lie before the interval's start (or, with `end`, its end) for a: the
// values are sorted, so the predicate holds on a prefix of the window and this is where it turns,
// if it turns inside the window (16: look further).
template <class Level>
[[gnu::always_inline]] inline std::uint32_t count_before(float a, const float* v, float threshold, bool end) {
#if defined(__GNUC__) && defined(__x86_64__)
    if constexpr (std::is_same_v<Level, Avx512Level>) return count_before_avx512(a, v, threshold, end);
    if constexpr (std::is_same_v<Level, Avx2Level>) return count_before_avx2(a, v, threshold, end);
    return count_before_sse2(a, v, threshold, end);
#endif
    // The prefix walked: GCC 12 for aarch64 vectorised a sum of the predicates over the window
    // into a sum of -1 masks (each end came out 1 short per value passed, found by scripts/arm64.sh).
    std::uint32_t n = 0;
    while (n < kPad && (end ? before_interval_end(a, v[n], threshold) : before_interval(a, v[n], threshold))) ++n;
    return n;
}

#if defined(__GNUC__) && defined(__x86_64__)
// build_table by AVX-512: a column's bit is one masked broadcast into its 64-bit lane.
[[gnu::target("avx512f")]] inline void build_table_avx512(void* table, const std::uint16_t* ids, std::uint32_t count) {
    auto* rows = static_cast<__m512i*>(table);
    __m512i row = _mm512_setzero_si512();
    _mm512_store_si512(rows, row);
    for (std::uint32_t k = 0; k < count; ++k) {
        const unsigned id = ids[k];
        row = _mm512_mask_or_epi64(row, static_cast<__mmask8>(1u << (id >> 6)), row,
                                   _mm512_set1_epi64(static_cast<long long>(std::uint64_t{1} << (id & 63))));
        _mm512_store_si512(rows + k + 1, row);
    }
}
#endif

// P[k] = the columns of ranks < k, for k <= count: the table of one sample's tile.
template <class Level, class Bits>
[[gnu::always_inline]] inline void build_table(Bits* table, const std::uint16_t* ids, std::uint32_t count) {
#if defined(__GNUC__) && defined(__x86_64__)
    if constexpr (std::is_same_v<Level, Avx512Level>) return build_table_avx512(table, ids, count);
#endif
    Bits row = {};
    table[0] = row;
    for (std::uint32_t k = 0; k < count; ++k) {
        row |= Bits::column_bit(ids[k]);
        table[k + 1] = row;
    }
}

// map[g] = j for g in (ranks[j - 1], ranks[j]], each run written `stores` vectors of Run at a
// time whatever its length, a loop only past them: the next run's stores overwrite what this
// one's wrote past its end.
template <class Run, int stores>
[[gnu::always_inline]] inline void fill_runs(std::uint16_t* map, const std::uint16_t* ranks, std::uint32_t count,
                                             std::uint32_t total) {
    constexpr std::uint32_t kLanes = sizeof(Run) / sizeof(std::uint16_t);
    std::uint32_t first = 0;
    for (std::uint32_t j = 0; j <= count; ++j) {
        const std::uint32_t last = j < count ? ranks[j] : total;
        const Run run = Run{} + static_cast<std::uint16_t>(j);
        for (int k = 0; k < stores; ++k) std::memcpy(map + first + k * kLanes, &run, sizeof run);  // unaligned
        for (std::uint32_t g = first + stores * kLanes; g <= last; g += kLanes) {
            std::memcpy(map + g, &run, sizeof run);
            asm("" : "+r"(g));  // hides the stores' overlap from GCC, which would make them 2-byte ones
        }
        first = last + 1;
    }
}

// map[g] = how many of a tile's columns have strip ranks below g, for g <= total (the strip's
// count): a row's interval in the strip's order becomes its interval in the tile's, [map[lo],
// map[hi]), by two loads. Runs average total / count entries: up to 8 (strips of up to 8 tiles),
// with AVX2 or AVX-512 one store of 16 entries each (longer runs, rare there, loop); else two
// native vectors (16 to 32 entries for a strip of 8000 to 16384 features). So map has room for
// two of the widest vectors past total (kRankMapRoom).
template <class Native>
[[gnu::always_inline]] inline void build_rank_map(std::uint16_t* map, const std::uint16_t* ranks, std::uint32_t count,
                                                  std::uint32_t total) {
    if constexpr (sizeof(Native) >= 32)
        if (total <= 8 * count) return fill_runs<U16VectorOf<32>::type, 1>(map, ranks, count, total);
    fill_runs<typename U16VectorOf<sizeof(Native)>::type, 2>(map, ranks, count, total);
}
constexpr std::size_t kRankMapRoom = 64;  // entries past a map's end (two of the widest vectors)

#if defined(__GNUC__) && defined(__x86_64__)
// GCC 12's AVX-512 headers start some results from a self-initialised "undefined" vector, which
// -Wmaybe-uninitialized reports once inlined (GCC bug 105593).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
// counts[0 .. min(16, left)) = low + (high << 8), 16 bytes each: exactly `left` counts are written
// where fewer than 16 are left.
[[gnu::target("avx512f")]] inline void store_counts16_avx512(std::int32_t* counts, std::size_t left, __m128i low,
                                                             __m128i high) {
    const __m512i v = _mm512_or_si512(_mm512_cvtepu8_epi32(low), _mm512_slli_epi32(_mm512_cvtepu8_epi32(high), 8));
    _mm512_mask_storeu_epi32(counts, left >= 16 ? 0xffff : (1u << left) - 1, v);
}

// counters_to_counts by AVX-512, 64 columns at a time: each plane's 64 bits add its weight to 64
// byte lanes (a masked byte add: one instruction per plane), planes 0-7 into one vector of bytes
// and 8-15 into another; the bytes are then widened to counts 16 at a time. More than 16 planes
// (65536 samples or more) go 16 columns at a time, plane by plane.
[[gnu::target("avx512f,avx512bw")]] inline void counters_to_counts_avx512(const void* planes_of_row, unsigned planes,
                                                                          std::size_t cols, std::int32_t* counts) {
    const auto* words =
        static_cast<const std::uint64_t*>(planes_of_row);  // plane p's columns 64 g.. at words[p kWords + g]
    const auto store = [=](std::size_t j0, __m128i low, __m128i high) {
        store_counts16_avx512(counts + j0, cols - j0, low, planes > 8 ? high : _mm_setzero_si128());
    };
    if (planes <= 16) {
        for (std::size_t g = 0; g * 64 < cols; ++g) {
            __m512i low = _mm512_setzero_si512(), high = low;
            for (unsigned p = 0; p < planes && p < 8; ++p)
                low =
                    _mm512_mask_add_epi8(low, words[p * kWords + g], low, _mm512_set1_epi8(static_cast<char>(1u << p)));
            for (unsigned p = 8; p < planes; ++p)
                high = _mm512_mask_add_epi8(high, words[p * kWords + g], high,
                                            _mm512_set1_epi8(static_cast<char>(1u << (p - 8))));
            const std::size_t j0 = g * 64;
            store(j0, _mm512_castsi512_si128(low), _mm512_castsi512_si128(high));
            if (j0 + 16 < cols) store(j0 + 16, _mm512_extracti32x4_epi32(low, 1), _mm512_extracti32x4_epi32(high, 1));
            if (j0 + 32 < cols) store(j0 + 32, _mm512_extracti32x4_epi32(low, 2), _mm512_extracti32x4_epi32(high, 2));
            if (j0 + 48 < cols) store(j0 + 48, _mm512_extracti32x4_epi32(low, 3), _mm512_extracti32x4_epi32(high, 3));
        }
        return;
    }
    const auto* bytes = static_cast<const unsigned char*>(planes_of_row);  // a plane is 32 chunks of 16 columns
    for (std::size_t g = 0; g * 16 < cols; ++g) {
        __m512i acc = _mm512_setzero_si512();
        for (unsigned p = 0; p < planes; ++p) {
            std::uint16_t chunk;
            std::memcpy(&chunk, bytes + (p * (kTile / 16) + g) * sizeof chunk, sizeof chunk);
            acc = _mm512_mask_or_epi32(acc, chunk, acc, _mm512_set1_epi32(1 << p));
        }
        const std::size_t left = cols - g * 16;
        _mm512_mask_storeu_epi32(counts + g * 16, left >= 16 ? 0xffff : (1u << left) - 1, acc);
    }
}
#pragma GCC diagnostic pop
#endif

#if defined(__GNUC__) && defined(__x86_64__)
// counters_to_counts by AVX2, 32 columns at a time, for at most 16 planes: each plane's 32 bits
// spread to 32 byte lanes (a byte shuffle of the broadcast word, a compare against each byte's
// bit) add its weight, planes 0-7 into one vector of bytes and 8-15 into another; then widened
// 8 at a time.
[[gnu::target("avx2")]] inline void counters_to_counts_avx2(const void* planes_of_row, unsigned planes,
                                                            std::size_t cols, std::int32_t* counts) {
    const auto* words =
        static_cast<const std::uint32_t*>(planes_of_row);  // plane p's columns 32 g.. at words[p 16 + g]
    const __m256i spread = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,  //
                                            2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
    const __m256i bit = _mm256_set1_epi64x(static_cast<long long>(0x8040201008040201ull));
    for (std::size_t g = 0; g * 32 < cols; ++g) {
        __m256i low = _mm256_setzero_si256(), high = low;
        for (unsigned p = 0; p < planes; ++p) {
            const __m256i bytes =
                _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(words[p * kTile / 32 + g])), spread);
            const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(bytes, bit), bit);
            const __m256i weight = _mm256_set1_epi8(static_cast<char>(1u << (p % 8)));
            if (p < 8) {
                low = _mm256_or_si256(low, _mm256_and_si256(set, weight));
            } else {
                high = _mm256_or_si256(high, _mm256_and_si256(set, weight));
            }
        }
        alignas(32) unsigned char lows[32], highs[32];
        _mm256_store_si256(reinterpret_cast<__m256i*>(lows), low);
        _mm256_store_si256(reinterpret_cast<__m256i*>(highs), high);
        for (std::size_t q = 0; q < 32 && g * 32 + q < cols; q += 8) {
            const __m256i v = _mm256_or_si256(
                _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(lows + q))),
                _mm256_slli_epi32(_mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(highs + q))),
                                  8));
            const std::size_t left = cols - (g * 32 + q);  // exactly cols counts are written
            if (left >= 8) {
                _mm256_storeu_si256(reinterpret_cast<__m256i*>(counts + g * 32 + q), v);
            } else {
                alignas(32) std::int32_t part[8];
                _mm256_store_si256(reinterpret_cast<__m256i*>(part), v);
                std::memcpy(counts + g * 32 + q, part, left * sizeof(std::int32_t));
            }
        }
    }
}
#endif

// counts[j] = the counter of column j, for j < cols (16 at a time, plane by plane; nothing past cols
// is written, so counts may be the output's row).
template <class Level, class Bits>
[[gnu::always_inline]] inline void counters_to_counts(const Bits* planes_of_row, unsigned planes, std::size_t cols,
                                                      std::int32_t* counts) {
#if defined(__GNUC__) && defined(__x86_64__)
    if constexpr (std::is_same_v<Level, Avx512Level>)
        return counters_to_counts_avx512(planes_of_row, planes, cols, counts);
    if constexpr (std::is_same_v<Level, Avx2Level>)
        if (planes <= 16) return counters_to_counts_avx2(planes_of_row, planes, cols, counts);
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
        std::uint64_t spread =
            ((mask.word(k / 8) >> (k % 8 * 8)) & 0xff) * 0x0101010101010101ull & 0x8040201008040201ull;
        spread = ((spread + 0x7f7f7f7f7f7f7f7full) >> 7) & 0x0101010101010101ull;
        std::memcpy(bytes + k * 8, &spread, 8);
    }
}

#if defined(__GNUC__) && defined(__x86_64__)
[[gnu::target("avx512f")]] inline __mmask16 within_avx512(float x, const float* y, __mmask16 load, __m512 threshold) {
    const __m512 d = _mm512_sub_ps(_mm512_set1_ps(x), _mm512_maskz_loadu_ps(load, y));
    return _mm512_cmp_ps_mask(_mm512_abs_ps(d), threshold, _CMP_LT_OQ);
}
[[gnu::target("avx512f")]] inline std::uint16_t check_columns_avx512(const float* x, std::size_t ldx, const float* y,
                                                                    std::size_t ldy, std::size_t samples,
                                                                    float threshold, std::uint16_t alive) {
    // Columns not alive at the start are not loaded (nor past y's edge); 4 samples' compares
    // between checks, independent of each other (a compare under the last one's mask would make
    // each sample wait for the one before).
    const __m512 t = _mm512_set1_ps(threshold);
    const auto load = static_cast<__mmask16>(alive);
    __mmask16 m = load;
    std::size_t s = 0;
    for (; s + 4 <= samples && m; s += 4)
        m &= within_avx512(x[s * ldx], y + s * ldy, load, t) & within_avx512(x[(s + 1) * ldx], y + (s + 1) * ldy, load, t) &
             within_avx512(x[(s + 2) * ldx], y + (s + 2) * ldy, load, t) &
             within_avx512(x[(s + 3) * ldx], y + (s + 3) * ldy, load, t);
    for (; s < samples && m; ++s) m &= within_avx512(x[s * ldx], y + s * ldy, load, t);
    return m;
}
[[gnu::target("avx2")]] inline std::uint16_t check_columns_avx2(const float* x, std::size_t ldx, const float* y,
                                                               std::size_t ldy, std::size_t samples, float threshold,
                                                               std::uint16_t alive) {
    const __m256 t = _mm256_set1_ps(threshold), magnitude = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    unsigned m = alive;
    for (std::size_t s = 0; s < samples && m; ++s) {
        const __m256 a = _mm256_set1_ps(x[s * ldx]);
        const __m256 d0 = _mm256_and_ps(_mm256_sub_ps(a, _mm256_loadu_ps(y + s * ldy)), magnitude);
        const __m256 d1 = _mm256_and_ps(_mm256_sub_ps(a, _mm256_loadu_ps(y + s * ldy + 8)), magnitude);
        m &= static_cast<unsigned>(_mm256_movemask_ps(_mm256_cmp_ps(d0, t, _CMP_LT_OQ)) |
                                   _mm256_movemask_ps(_mm256_cmp_ps(d1, t, _CMP_LT_OQ)) << 8);
    }
    return static_cast<std::uint16_t>(m);
}
#endif

// Mode All, checked directly: which of 16 consecutive columns (bit k: y[.. + k], those in `alive`)
// stay within the threshold of x over `samples` samples (x[s ldx] against y[s ldy + k]). `whole`:
// all 16 columns lie inside y's rows (vector loads need not be masked).
template <class Level>
[[gnu::always_inline]] inline std::uint16_t check_columns(const float* x, std::size_t ldx, const float* y,
                                                          std::size_t ldy, std::size_t samples, float threshold,
                                                          std::uint16_t alive, bool whole) {
#if defined(__GNUC__) && defined(__x86_64__)
    if constexpr (std::is_same_v<Level, Avx512Level>)
        return check_columns_avx512(x, ldx, y, ldy, samples, threshold, alive);
    if constexpr (std::is_same_v<Level, Avx2Level>)
        if (whole) return check_columns_avx2(x, ldx, y, ldy, samples, threshold, alive);
#endif
    for (std::size_t s = 0; s < samples && alive; ++s)
        for (unsigned bits = alive; bits != 0; bits &= bits - 1) {
            const int k = __builtin_ctz(bits);
            if (!within_threshold(x[s * ldx], y[s * ldy + k], threshold)) alive &= static_cast<std::uint16_t>(~(1u << k));
        }
    return alive;
}

}  // namespace hpcml::detail::similarity::sorted
