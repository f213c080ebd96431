// The CPU's mirrors where y is x: S(j, i) = S(i, j) written from finished tiles (the public
// similarity_transpose), by SSE tiles (4 x 4 32-bit elements, 8 x 8 16-bit or 8-bit ones) and
// element by element at the edges, 8 x 8 bit blocks for Bitmask. (The fused method writes the mirrors of its own tiles
// as it stores them: cpu.cpp.)
#include <cstring>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "cpu_common.hpp"

namespace hpcml::detail::similarity {

namespace {

using cpu::kFusedCpu;

// The mirrors' tuning: it changes speed, never results (Zen 3: the AMD EPYC machine of
// bench/results/2026-11-23-cpu-similarity.md, 2 cores).
struct TransposeCpuPolicy {
    std::size_t block;     // elements: blocks of block x block, so that the column reads stay in cache
    std::size_t bit_band;  // bitmask: rows per thread's band, its source lines in L1 while read a byte at a time
};
constexpr TransposeCpuPolicy kTransposeCpu{
    .block = 32,      // not timed against other sizes
    .bit_band = 256,  // the real case's 256 x 270725 bitmask: 116.6 s, against 148.9 s with 8-row strips
};

// Element access for mirroring, by element type (a template parameter, so the loops below
// compile without a switch per element).
template <class T>
T get(const RegionOutput& o, std::size_t a, std::size_t b) {
    T v;
    std::memcpy(&v, static_cast<const unsigned char*>(o.data) + a * o.row_stride_bytes + b * sizeof(T), sizeof(T));
    return v;
}

template <class T>
void put(const RegionOutput& o, std::size_t a, std::size_t b, T v) {
    std::memcpy(static_cast<unsigned char*>(o.data) + a * o.row_stride_bytes + b * sizeof(T), &v, sizeof(T));
}

#if defined(__SSE2__)
// The kTile x kTile elements at s (rows s_stride bytes apart) transposed to d: 4 x 4 32-bit
// elements by SSE shuffles, 8 x 8 16-bit ones or 8 x 8 bytes by three rounds of unpacks (a move
// of bits, whatever they hold).
template <class T>
struct SimdTile;
template <>
struct SimdTile<std::int32_t> {
    static constexpr std::size_t kTile = 4;
    static void transpose(const unsigned char* s, std::size_t s_stride, unsigned char* d, std::size_t d_stride) {
        __m128 r[4];
        for (int k = 0; k < 4; ++k) r[k] = _mm_loadu_ps(reinterpret_cast<const float*>(s + k * s_stride));
        _MM_TRANSPOSE4_PS(r[0], r[1], r[2], r[3]);
        for (int k = 0; k < 4; ++k) _mm_storeu_ps(reinterpret_cast<float*>(d + k * d_stride), r[k]);
    }
};
template <>
struct SimdTile<std::uint16_t> {
    static constexpr std::size_t kTile = 8;
    static void transpose(const unsigned char* s, std::size_t s_stride, unsigned char* d, std::size_t d_stride) {
        __m128i r[8], t[8];
        for (int k = 0; k < 8; ++k) r[k] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + k * s_stride));
        for (int k = 0; k < 4; ++k) {  // rows 2k, 2k + 1 interleaved: t[k] columns 0-3, t[k + 4] 4-7
            t[k] = _mm_unpacklo_epi16(r[2 * k], r[2 * k + 1]);
            t[k + 4] = _mm_unpackhi_epi16(r[2 * k], r[2 * k + 1]);
        }
        for (int h = 0; h < 2; ++h)  // r[4 h + ...]: columns 4 h.., rows 0-3 and 4-7 in pairs of columns
            for (int k = 0; k < 2; ++k) {
                r[4 * h + 2 * k] = _mm_unpacklo_epi32(t[4 * h + 2 * k], t[4 * h + 2 * k + 1]);
                r[4 * h + 2 * k + 1] = _mm_unpackhi_epi32(t[4 * h + 2 * k], t[4 * h + 2 * k + 1]);
            }
        for (int c = 0; c < 8; c += 2) {  // column c from rows 0-3 (r[c / 4 * 4 + c % 4 / 2]) and 4-7
            const int low = c / 4 * 4 + c % 4 / 2, high = low + 2;
            _mm_storeu_si128(reinterpret_cast<__m128i*>(d + c * d_stride), _mm_unpacklo_epi64(r[low], r[high]));
            _mm_storeu_si128(reinterpret_cast<__m128i*>(d + (c + 1) * d_stride), _mm_unpackhi_epi64(r[low], r[high]));
        }
    }
};
template <>
struct SimdTile<std::uint8_t> {
    static constexpr std::size_t kTile = 8;
    static void transpose(const unsigned char* s, std::size_t s_stride, unsigned char* d, std::size_t d_stride) {
        __m128i r[8], t[4], u[4];
        for (int k = 0; k < 8; ++k) r[k] = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(s + k * s_stride));
        for (int k = 0; k < 4; ++k) t[k] = _mm_unpacklo_epi8(r[2 * k], r[2 * k + 1]);  // rows 2k, 2k + 1
        for (int k = 0; k < 2; ++k) {  // rows 4k..4k + 3: u[2k] columns 0-3, u[2k + 1] columns 4-7
            u[2 * k] = _mm_unpacklo_epi16(t[2 * k], t[2 * k + 1]);
            u[2 * k + 1] = _mm_unpackhi_epi16(t[2 * k], t[2 * k + 1]);
        }
        for (int h = 0; h < 2; ++h)
            for (int k = 0; k < 2; ++k) {  // columns 4h + 2k and 4h + 2k + 1, all 8 rows
                const __m128i pair = k ? _mm_unpackhi_epi32(u[h], u[h + 2]) : _mm_unpacklo_epi32(u[h], u[h + 2]);
                const int c = 4 * h + 2 * k;
                _mm_storel_epi64(reinterpret_cast<__m128i*>(d + c * d_stride), pair);
                _mm_storel_epi64(reinterpret_cast<__m128i*>(d + (c + 1) * d_stride), _mm_srli_si128(pair, 8));
            }
    }
};
#endif

// dst(a0 + a, b0 + b) = src(b0 + b, a0 + a) for a < cols, b < rows: one block of a transpose,
// SimdTile's tiles where the element type has them, element by element at the edges.
template <class T>
void transpose_block(const RegionOutput& src, std::size_t b0, std::size_t a0, std::size_t rows, std::size_t cols,
                     const RegionOutput& dst) {
    std::size_t whole_rows = 0, whole_cols = 0;  // the part done by tiles
#if defined(__SSE2__)
    if constexpr (requires { SimdTile<T>::kTile; }) {
        constexpr std::size_t kTile = SimdTile<T>::kTile;
        whole_rows = rows / kTile * kTile;
        whole_cols = cols / kTile * kTile;
        const auto* s = static_cast<const unsigned char*>(src.data);
        auto* d = static_cast<unsigned char*>(dst.data);
        for (std::size_t b = 0; b < whole_rows; b += kTile)
            for (std::size_t a = 0; a < whole_cols; a += kTile)
                SimdTile<T>::transpose(s + (b0 + b) * src.row_stride_bytes + (a0 + a) * sizeof(T), src.row_stride_bytes,
                                       d + (a0 + a) * dst.row_stride_bytes + (b0 + b) * sizeof(T),
                                       dst.row_stride_bytes);
    }
#endif
    for (std::size_t a = 0; a < cols; ++a)
        for (std::size_t b = a < whole_cols ? whole_rows : 0; b < rows; ++b)
            put<T>(dst, a0 + a, b0 + b, get<T>(src, b0 + b, a0 + a));
}

// dst(a, b) = src(b, a) for a < cols, b < rows, in blocks (kTransposeCpu) so that the column
// reads stay in cache. Threads own destination rows; the source is another region, only read.
template <class T>
void transpose(const RegionOutput& src, std::size_t rows, std::size_t cols, const RegionOutput& dst) {
    constexpr std::size_t kBlock = kTransposeCpu.block;
#pragma omp parallel for schedule(static) if (rows * cols >= kFusedCpu.parallel_min)
    for (std::size_t a0 = 0; a0 < cols; a0 += kBlock)
        for (std::size_t b0 = 0; b0 < rows; b0 += kBlock)
            transpose_block<T>(src, b0, a0, std::min(kBlock, rows - b0), std::min(kBlock, cols - a0), dst);
}

// The 8 x 8 bit matrix in x (bit c of byte r is element (r, c)) transposed: Hacker's
// Delight's three swap stages.
std::uint64_t transpose_8x8_bits(std::uint64_t x) {
    std::uint64_t t = (x ^ (x >> 7)) & 0x00AA00AA00AA00AAull;
    x ^= t ^ (t << 7);
    t = (x ^ (x >> 14)) & 0x0000CCCC0000CCCCull;
    x ^= t ^ (t << 14);
    t = (x ^ (x >> 28)) & 0x00000000F0F0F0F0ull;
    return x ^ t ^ (t << 28);
}

// Bitmask element (r, c) is bit c % 8 of byte c / 8 of row r. An 8 x 8 block is the byte
// `byte` of rows r0..r0+7 (rows past `rows` read as 0).
std::uint64_t load_bit_block(const RegionOutput& o, std::size_t r0, std::size_t rows, std::size_t byte) {
    std::uint64_t block = 0;
    for (std::size_t k = 0; k < 8 && r0 + k < rows; ++k)
        block |= std::uint64_t{static_cast<const std::uint8_t*>(o.data)[(r0 + k) * o.row_stride_bytes + byte]}
                 << (8 * k);
    return block;
}

void store_bit_block(const RegionOutput& o, std::size_t r0, std::size_t rows, std::size_t byte, std::uint64_t block) {
    for (std::size_t k = 0; k < 8 && r0 + k < rows; ++k)
        static_cast<std::uint8_t*>(o.data)[(r0 + k) * o.row_stride_bytes + byte] =
            static_cast<std::uint8_t>(block >> (8 * k));
}

// Visits the 8 x 8 blocks (b0, a0) of a rows x cols bitmask (rows b0.., byte a0 / 8): threads
// over bands of rows (kTransposeCpu), the columns in order inside a band, so that the band's source lines
// stay in L1 while they are read one byte at a time (a band's 8-row blocks column after column
// would miss the cache on every block of a wide mask).
template <class Visit>
void for_each_bit_block(std::size_t rows, std::size_t cols, Visit&& visit) {
    constexpr std::size_t kBand = kTransposeCpu.bit_band;
#pragma omp parallel for schedule(dynamic) if (rows * cols >= kFusedCpu.parallel_min)
    for (std::size_t band = 0; band < rows; band += kBand)
        for (std::size_t a0 = 0; a0 < cols; a0 += 8)
            for (std::size_t b0 = band; b0 < std::min(band + kBand, rows); b0 += 8) visit(b0, a0);
}

// transpose<T> for Bitmask: dst's rows a < cols get bytes b0 / 8 for b0 < rows. Whole 64 x 64
// blocks as 64 words (a fraction of the 8 x 8 blocks' work), the edges 8 x 8. The region's
// column edges are multiples of 8 or the output's edge, where the padding bits stay 0 (rows
// past `rows` read as 0).
void transpose_bits(const RegionOutput& src, std::size_t rows, std::size_t cols, const RegionOutput& dst) {
    const std::size_t whole_rows = rows / 64 * 64, whole_cols = cols / 64 * 64;
    const auto* s = static_cast<const unsigned char*>(src.data);
    auto* d = static_cast<unsigned char*>(dst.data);
#pragma omp parallel for schedule(dynamic) if (rows * cols >= kFusedCpu.parallel_min)
    for (std::size_t b0 = 0; b0 < whole_rows; b0 += 64)
        for (std::size_t a0 = 0; a0 < whole_cols; a0 += 64) {
            std::uint64_t block[64];
            for (std::size_t k = 0; k < 64; ++k) std::memcpy(&block[k], s + (b0 + k) * src.row_stride_bytes + a0 / 8, 8);
            cpu::transpose_64x64_bits(block);
            for (std::size_t k = 0; k < 64; ++k) std::memcpy(d + (a0 + k) * dst.row_stride_bytes + b0 / 8, &block[k], 8);
        }
    for_each_bit_block(rows, cols, [&](std::size_t b0, std::size_t a0) {
        if (b0 < whole_rows && a0 < whole_cols) return;  // done above
        store_bit_block(dst, a0, cols, b0 / 8, transpose_8x8_bits(load_bit_block(src, b0, rows, a0 / 8)));
    });
}

}  // namespace

void cpu_transpose(const Problem& p, const RegionOutput& src, std::size_t rows, std::size_t cols,
                   const RegionOutput& dst) {
    Outputs::visit(p.output, [&](auto entry) {
        using Out = decltype(entry);
        if constexpr (Out::bits) {
            transpose_bits(src, rows, cols, dst);
        } else {  // a move of elements: one instantiation per element type
            transpose<typename Out::Element>(src, rows, cols, dst);
        }
    });
}

}  // namespace hpcml::detail::similarity
