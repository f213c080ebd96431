// The sorted method's sorted copies (cpu_sorted.hpp): per sample, the finite values of a region's
// features in one radix sort by (group of 512, value), so that each group's sorted values and ids
// are a sequential copy. Compiled per instruction-set level; with AVX-512 the finite values'
// items are made 16 at a time and the histograms' prefix sums are vector scans.
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

#include "cpu_sorted.hpp"

namespace hpcml::detail::similarity::sorted {

namespace {

// The radix sort's three digits of an item (key << 32 | f), f < kSortedCpu.strip: key bits 0-10, 11-21,
// then 22-31 with f's group above them, so that the sort orders by (group, key) and each group's
// values come out together, in order.
constexpr std::size_t kLowDigits = 2048;
std::size_t digit0(std::uint64_t item) { return (item >> 32) & (kLowDigits - 1); }
std::size_t digit1(std::uint64_t item) { return (item >> 43) & (kLowDigits - 1); }
std::size_t digit2(std::uint64_t item) {
    static_assert(kTile == 512 && (kSortedCpu.strip / kTile & (kSortedCpu.strip / kTile - 1)) == 0, "the group is f >> 9");
    return (item >> 54) | ((item >> 9) & (kSortedCpu.strip / kTile - 1)) << 10;
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

// One sample's sort (SortedGroups::sort_sample), compiled for Level.
template <class Level>
void sort_sample_for(const float* row, std::size_t features, std::size_t groups, std::uint64_t* items,
                     std::uint64_t* scratch, std::uint32_t* histograms, float* values, std::uint16_t* ids,
                     std::uint16_t* counts, std::size_t stride) {
    // The finite values' items, each group's count (group g's at counts[g * stride]).
    std::size_t n = 0;
    for (std::size_t g = 0; g < groups; ++g) {
        const std::size_t before = n;
        n = finite_items<Level>(row, g * kTile, std::min(features, (g + 1) * kTile), items, n);
        counts[g * stride] = static_cast<std::uint16_t>(n - before);
    }
    // A least-significant-digit radix sort by (group, key): the three histograms counted in one
    // read of the items, then a pass per digit (none where one digit holds every item).
    std::uint32_t* first[3] = {histograms, histograms + kLowDigits, histograms + 2 * kLowDigits};
    std::memset(histograms, 0, (2 * kLowDigits + (groups << 10)) * sizeof *histograms);
    for (std::size_t k = 0; k < n; ++k) {
        ++first[0][digit0(items[k])];
        ++first[1][digit1(items[k])];
        ++first[2][digit2(items[k])];
    }
    const auto pass = [&](std::uint32_t* start, std::size_t digits, auto digit) {
        if (n == 0 || start[digit(items[0])] == n) return;
        exclusive_scan<Level>(start, digits);
        for (std::size_t k = 0; k < n; ++k) scratch[start[digit(items[k])]++] = items[k];
        std::swap(items, scratch);
    };
    pass(first[0], kLowDigits, digit0);
    pass(first[1], kLowDigits, digit1);
    pass(first[2], groups << 10, digit2);
    // Each group's values and ids, then kPad +inf.
    const std::uint64_t* sorted = items;
    for (std::size_t g = 0; g < groups; ++g) {
        const std::size_t count = counts[g * stride];
        float* v = values + g * stride * (kTile + kPad);
        std::uint16_t* id = ids + g * stride * kTile;
        for (std::size_t k = 0; k < count; ++k) {
            v[k] = from_order_key(static_cast<std::uint32_t>(sorted[k] >> 32));
            id[k] = static_cast<std::uint16_t>(sorted[k] % kTile);
        }
        std::fill_n(v + count, kPad, std::numeric_limits<float>::infinity());
        sorted += count;
    }
}

}  // namespace

SortedGroups::SortedGroups(const float* data, std::size_t ld, std::size_t first, std::size_t features, std::size_t samples,
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
      level_(cpu_kernel_level()),
      blocks_(ceil_div(samples, kSortedCpu.sort_block)),
      sorted_(std::make_unique<std::once_flag[]>(blocks_)) {
#ifdef _OPENMP
    threads_ = static_cast<std::size_t>(omp_get_max_threads());
#endif
    scratch_ = detail::HostBuffer<std::uint64_t>(tracker, threads_ * scratch_size(), "similarity sorted: sort scratch");
    histograms_ =
        detail::HostBuffer<std::uint32_t>(tracker, threads_ * histogram_size(), "similarity sorted: histograms");
    const std::size_t now = lazily ? std::min(samples, kSortedCpu.sort_block) : samples;
    const int threads = features * now >= cpu::kFusedCpu.parallel_min ? static_cast<int>(std::min(threads_, now)) : 1;
#pragma omp parallel for schedule(dynamic) num_threads(threads)
    for (std::size_t s = 0; s < now; ++s) sort_sample(s);
    for (std::size_t b = 0; b * kSortedCpu.sort_block < now; ++b) std::call_once(sorted_[b], [] {});
}

// Samples [0, end) sorted (each block once, by the first thread to ask).
void SortedGroups::ensure(std::size_t end) const {
    for (std::size_t b = 0; b * kSortedCpu.sort_block < end; ++b)
        std::call_once(sorted_[b], [&] {
            for (std::size_t s = b * kSortedCpu.sort_block; s < std::min(samples_, (b + 1) * kSortedCpu.sort_block); ++s) sort_sample(s);
        });
}

void SortedGroups::sort_sample(std::size_t s) const {
    std::size_t thread = 0;
#ifdef _OPENMP
    thread = std::min(static_cast<std::size_t>(omp_get_thread_num()), threads_ - 1);
#endif
    std::uint64_t* items = scratch_.data() + thread * scratch_size();
    CpuLevels::visit(level_, [&](auto entry) {
        using Level = decltype(entry);
        Level::run([&] {
            sort_sample_for<Level>(data_ + s * ld_ + first_, features_, groups_, items, items + features_ + kItemsRoom,
                                   histograms_.data() + thread * histogram_size(), values_.data() + s * (kTile + kPad),
                                   ids_.data() + s * kTile, counts_.data() + s, samples_);
        });
    });
}

std::size_t SortedGroups::scratch_size() const { return 2 * (features_ + kItemsRoom); }  // items, then scratch

std::size_t SortedGroups::histogram_size() const { return 2 * kLowDigits + (groups_ << 10); }

}  // namespace hpcml::detail::similarity::sorted
