// The sorted method's sorted copies (cpu_sorted.hpp): per sample, the finite values of a region's
// features in one radix sort, split into groups of 512.
#include <cmath>
#include <limits>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "cpu_sorted.hpp"

namespace hpcml::detail::similarity::sorted {

namespace {

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
void SortedGroups::ensure(std::size_t end) const {
    for (std::size_t b = 0; b * kSortBlock < end; ++b)
        std::call_once(sorted_[b], [&] {
            for (std::size_t s = b * kSortBlock; s < std::min(samples_, (b + 1) * kSortBlock); ++s) sort_sample(s);
        });
}

void SortedGroups::sort_sample(std::size_t s) const {
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

}  // namespace hpcml::detail::similarity::sorted
