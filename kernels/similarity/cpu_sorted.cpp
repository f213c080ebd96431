// Similarity on the CPU by the sorted method (sorted_math.hpp gives the idea; docs/similarity.md
// the worked example and the costs). Per sample, the strip's finite y values are sorted (one
// radix sort), and so are its x values; one merge of the two finds every row's rank interval
// [lo, hi) in y's order with the exact predicate (cpu_sorted_strip.cpp). Per sample and tile of
// 512 columns, a rank map turns a row's strip interval into its interval among the tile's columns,
// two loads. Per group of 16 samples, each tile gets a prefix table per sample, P[k] = the
// columns of ranks < k as a 512-bit mask, and a row's mask at that sample is P[hi] ^ P[lo]. Count
// mode adds the 16 masks into bit-sliced counters (a carry-save tree, then a ripple add); mode
// All ANDs them, stops once an item's rows have all failed, and checks the pairs that survive
// directly, 16 columns at a time, once that costs less than a group (where y is x the diagonal
// never fails).
//
// Cost per row, sample and tile (512 pairs): two rank-map loads, two table rows (one cache line
// each) and about 7 logic ops for the counters (with AVX-512, one instruction per full-adder
// bit), against the direct method's 128 vector instructions; per row and sample, a merge step for
// each end, whatever the tile. cpu_sorted_store.cpp stores the items.
#include <algorithm>
#include <atomic>
#include <cstring>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "common/error.hpp"
#include "cpu_sorted_item.hpp"

namespace hpcml::detail::similarity {

namespace {

using namespace sorted;

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

// Mode All's masks (in w.counters) as 16-column chunks: row r's columns 16 k.. at [r kChunks + k].
constexpr std::size_t kChunks = kTile / 16;
std::uint16_t* mask_chunks(const Item& it) { return reinterpret_cast<std::uint16_t*>(it.w.counters); }

// Mode All: the pairs still alive in the masks of rows alive[0 .. count) checked directly over
// samples [from, samples), 16 columns at a time: each row's 16-column chunk with a pair alive is,
// per sample, x's value against 16 of y's, contiguous in y's sample row (one vector compare). The
// list of live chunks (in the group's tables, free by now) is cut to those still alive every
// kGroup samples, whose rows of x and y stay in cache meanwhile; where y is x, the pairs on the
// diagonal pass every sample.
template <class Level>
void finish_directly(const Item& it, std::size_t count, std::size_t from) {
    const Problem& p = it.p;
    std::uint16_t* const chunks = mask_chunks(it);
    auto* const live = reinterpret_cast<std::uint32_t*>(it.w.tables);
    static_assert(kItemRows * kChunks * sizeof *live <= kGroup * (kTile + 1) * kBitsBytes, "fits in the tables");
    std::size_t n = 0;
    for (std::size_t q = 0; q < count; ++q)
        for (std::size_t k = 0; k < kChunks; ++k)
            if (chunks[it.w.alive[q] * kChunks + k]) live[n++] = static_cast<std::uint32_t>(it.w.alive[q] * kChunks + k);
    const float* const x = p.x + it.region.row0 + it.band * kBand;
    const float* const y = p.y + it.region.col0 + it.tile * kTile;
    for (std::size_t s0 = from; s0 < p.samples && n > 0; s0 += kGroup) {
        const std::size_t samples = std::min(kGroup, p.samples - s0);
        std::size_t still = 0;
        for (std::size_t e = 0; e < n; ++e) {
            const std::uint32_t c = live[e];
            const std::size_t col = c % kChunks * 16;
            chunks[c] = check_columns<Level>(x + s0 * p.ldx + c / kChunks, p.ldx, y + s0 * p.ldy + col, p.ldy, samples,
                                             p.threshold, chunks[c], col + 16 <= it.cols);
            if (chunks[c]) live[still++] = c;
        }
        n = still;
    }
}

template <class Bits>
std::size_t popcount(const Bits& b) {
    std::size_t n = 0;
    for (std::size_t w = 0; w < kWords; ++w) n += static_cast<std::size_t>(__builtin_popcountll(b.word(w)));
    return n;
}

// Mode All: whether the rows alive[0 .. alive) are cheaper to finish directly than by another
// group. A group costs a table row per tile rank and sample, a rank map's stores, and a few loads
// per row alive; a direct check a vector compare per live 16-column chunk and sample. The chunks
// are counted only where they may be few enough (at least survivors / 16).
bool direct_pays(const Item& it, std::size_t survivors, std::size_t alive, std::size_t strip_count) {
    const std::size_t group = kTile + strip_count / 32 + 4 * alive, cost = kSortedCpu.direct_chunk_cost;
    if (survivors * cost < group) return true;
    if (survivors / 16 * cost >= group) return false;
    const std::uint16_t* const chunks = mask_chunks(it);
    std::size_t live = 0;
    for (std::size_t q = 0; q < alive; ++q)
        for (std::size_t k = 0; k < kChunks; ++k) live += chunks[it.w.alive[q] * kChunks + k] != 0;
    return live * cost < group;
}

// Samples [g0, g0 + valid) of a group: each one's table, and the ends in the tile of rows
// alive[0 .. count) (all rows where alive is null; samples past `valid` keep [0, 0)): their strip
// intervals through the sample's rank map, or, for a few rows (mode All once most have failed),
// by bisection of the tile's ranks (map[g] is the number of ranks below g).
template <class Level, class Bits>
void prepare_group(const Item& it, Bits* tables, std::size_t g0, std::size_t valid, const std::uint16_t* alive,
                   std::size_t count) {
    const SortedStrip& sorted = it.sorted;
    if (valid < kGroup && !alive)  // count mode's missing samples: empty masks (mode All reads only `valid`)
        std::fill(it.w.ends + valid * kEndsStride, it.w.ends + kGroup * kEndsStride, RankInterval{0, 0});
    for (std::size_t k = 0; k < valid; ++k) {
        const std::size_t s = g0 + k;
        const std::uint16_t* const ranks = sorted.ranks(it.tile, s);
        const std::uint32_t in_tile = sorted.count(it.tile, s);
        build_table<Level>(tables + k * (kTile + 1), sorted.ids(it.tile, s), in_tile);
        const RankInterval* interval = sorted.intervals(s) + it.band * kBand;
        RankInterval* const ends = it.w.ends + k * kEndsStride;
        // A map costs about a store per 16 strip ranks and a few instructions per tile rank, a
        // bisection about 4 per halving of the tile's ranks, twice per row: not timed.
        if (alive && count * 10 < in_tile + sorted.strip_count(s) / 128) {
            const auto rank_in_tile = [&](std::uint16_t g) {
                return static_cast<std::uint16_t>(std::lower_bound(ranks, ranks + in_tile, g) - ranks);
            };
            for (std::size_t q = 0; q < count; ++q) {
                const std::size_t r = alive[q];
                ends[r] = {rank_in_tile(interval[r].lo), rank_in_tile(interval[r].hi)};
            }
            continue;
        }
        build_rank_map<std::remove_cvref_t<decltype(Bits::part[0])>>(it.w.map, ranks, in_tile, sorted.strip_count(s));
        for (std::size_t q = 0; q < (alive ? count : it.rows); ++q) {
            const std::size_t r = alive ? alive[q] : q;
            ends[r] = {it.w.map[interval[r].lo], it.w.map[interval[r].hi]};
        }
    }
}

// Row r's mask at sample k of the group: P[hi] ^ P[lo].
template <class Bits>
[[gnu::always_inline]] inline Bits row_mask(const Bits* tables, const RankInterval* ends, std::size_t r,
                                            std::size_t k) {
    const Bits* table = tables + k * (kTile + 1);
    const RankInterval e = ends[k * kEndsStride + r];
    return table[e.hi] ^ table[e.lo];
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
    // The first group shorter: most pairs fail within a few samples, and the survivors of fewer
    // cost less to check directly than more samples' tables.
    for (std::size_t g0 = 0, valid = 0; g0 < it.p.samples; g0 += valid) {
        valid = std::min(g0 == 0 ? kSortedCpu.first_all_group : kGroup, it.p.samples - g0);
        it.sorted.ensure(g0 + valid);
        prepare_group<Level>(it, tables, g0, valid, w.alive, alive);
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
        if (g0 + valid < it.p.samples && direct_pays(it, survivors, alive, it.sorted.strip_count(g0))) {
            finish_directly<Level>(it, alive, g0 + valid);
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
        prepare_group<Level>(it, tables, g0, valid, nullptr, it.rows);
        for (std::size_t k = valid; k < kGroup; ++k) tables[k * (kTile + 1)] = Bits{};  // missing samples: empty masks
        for (std::size_t r = 0; r < it.rows; ++r) {
            Bits masks[kGroup], sum[5];
#pragma GCC unroll 16
            for (std::size_t k = 0; k < kGroup; ++k) masks[k] = row_mask(tables, w.ends, r, k);
            add16(masks, sum);
            add_planes(counters + r * it.planes, sum, it.planes);
        }
    }
}

// An item's counters (count mode) or masks (mode All: whether any pair is left), compiled for
// each instruction-set level; store_kernel's then stores them.
using ItemKernel = bool (*)(const Item&);
template <class Level>
bool item_kernel(const Item& it) {
    bool any_alive = true;
    Level::run([&] {
        if (it.p.mode == SimilarityMode::All) {
            any_alive = all_masks<Level>(it);
        } else {
            count_masks<Level>(it);
        }
    });
    return any_alive;
}

}  // namespace

namespace sorted {
namespace {
std::atomic<std::size_t> strip_for_tests{0}, bands_for_tests{0};
}
SortedLayout layout_for_tests() { return {strip_for_tests.load(), bands_for_tests.load()}; }
void set_layout_for_tests(SortedLayout layout) {
    require(layout.strip % kTile == 0 && layout.strip <= kSortedCpu.strip,
            "strip: a multiple of 512 up to the policy's");
    require((layout.bands_per_item & (layout.bands_per_item - 1)) == 0 &&
                layout.bands_per_item <= kSortedCpu.bands_per_item,
            "bands_per_item: a power of 2 up to the policy's");
    strip_for_tests.store(layout.strip);
    bands_for_tests.store(layout.bands_per_item);
}
}  // namespace sorted

namespace {

// A region (cpu_sorted's), in strips where it is larger than one; `stream`: its output is
// stored past the caches.
void sorted_region(const Problem& p, const Region& region, const RegionOutput& out, detail::MemoryTracker& tracker,
                   detail::Progress* progress, const RegionOutput* mirror, bool stream) {
    const bool diagonal = symmetry_pays(p) && region.row0 == region.col0 && region.rows == region.cols;
    const SortedLayout lowered = sorted::layout_for_tests();
    const std::size_t strip = lowered.strip ? lowered.strip : kSortedCpu.strip;
    if (region.rows > strip || region.cols > strip) {  // strips, so that the sorted copies stay small
        for (std::size_t r = 0; r < region.rows; r += strip)
            for (std::size_t c = diagonal ? r : 0; c < region.cols; c += strip) {
                const Region sub{region.row0 + r, region.col0 + c, std::min(strip, region.rows - r),
                                 std::min(strip, region.cols - c)};
                const RegionOutput sub_mirror = mirror ? offset(*mirror, p, c, r) : offset(out, p, c, r);
                const bool mirrored_here = diagonal && c > r;  // this strip's mirror is in the region
                sorted_region(p, sub, offset(out, p, r, c), tracker, progress,
                              mirror || mirrored_here ? &sub_mirror : nullptr, stream);
                if (progress && mirrored_here) progress->add(units(sub));
            }
        return;
    }
    const bool lazily = p.mode == SimilarityMode::All;
    const SortedStrip sorted(p, region, diagonal, lazily, tracker);  // on the diagonal x is y: one sort
    const std::size_t bands = ceil_div(region.rows, kBand), tiles = ceil_div(region.cols, kTile);
    std::size_t most_threads = 1;
#ifdef _OPENMP
    most_threads = static_cast<std::size_t>(omp_get_max_threads());
#endif
    // Bands stacked into taller items, as long as every thread keeps two items or more.
    std::size_t stack = lowered.bands_per_item            ? lowered.bands_per_item
                        : p.mode == SimilarityMode::Count ? kSortedCpu.bands_per_item
                                                          : kSortedCpu.bands_per_item_all;
    while (!lowered.bands_per_item && stack > 1 && ceil_div(bands, stack) * tiles < 2 * most_threads) stack /= 2;
    const std::size_t items = ceil_div(bands, stack) * tiles;
    const unsigned planes = counter_planes(p.samples);
    const int threads = static_cast<int>(std::min(items, most_threads));
    const std::size_t workspace_bytes = (Workspace::bytes(planes, region.cols) + 63) / 64 * 64;
    const Aligned<unsigned char> workspaces(tracker, threads * workspace_bytes,
                                            "similarity sorted: tables and counters");
    const CpuKernel level = cpu_kernel_level();
    const ItemKernel kernel = [level] {
        ItemKernel k = nullptr;
        CpuLevels::visit(level, [&](auto entry) { k = item_kernel<decltype(entry)>; });
        return k;
    }();
    const StoreKernel store = store_kernel(level);

#pragma omp parallel for schedule(dynamic) num_threads(threads)
    for (std::size_t next = 0; next < items; ++next) {
        const std::size_t item = items - 1 - next;  // the last tiles first: where y is x, the tallest items
#ifdef _OPENMP
        const std::size_t thread = static_cast<std::size_t>(omp_get_thread_num());
#else
        const std::size_t thread = 0;
#endif
        // Bands [band, last) against the tile: where y is x, those on or above the diagonal.
        const std::size_t band = item / tiles * stack, tile = item % tiles;
        const std::size_t last = std::min(bands, diagonal ? std::min(band + stack, tile + 1) : band + stack);
        const std::size_t rows = std::min(last * kBand, region.rows) - std::min(band * kBand, region.rows);
        const std::size_t cols = std::min(kTile, region.cols - tile * kTile);
        // Rows with a mirror: where y is x, the bands above the diagonal; else all, if any.
        const std::size_t mirrored = diagonal ? std::min(rows, (tile - std::min(tile, band)) * kBand)
                                     : mirror ? rows
                                              : 0;
        if (last > band) {
            const Workspace w(workspaces.data() + thread * workspace_bytes, planes);
            const RegionOutput transposed = mirrored ? offset(diagonal ? out : *mirror, p, tile * kTile, band * kBand)
                                                     : RegionOutput{};
            const Item it{
                p,        region, sorted, band, tile, rows, cols, planes, w, out, mirrored ? &transposed : nullptr,
                mirrored, stream};
            store(it, kernel(it));
            // A mirror inside this diagonal region is the region's; an outside one, its planner's.
            if (progress) progress->add((std::uint64_t{rows} + (diagonal ? mirrored : 0)) * cols);
        }
    }
}

}  // namespace

void cpu_sorted(const Problem& p, const Region& region, const RegionOutput& out, detail::MemoryTracker& tracker,
                detail::Progress* progress, const RegionOutput* mirror) {
    if (region.rows == 0 || region.cols == 0) return;
    if (p.samples == 0) return cpu_fused(p, region, out, tracker, progress, mirror);  // nothing to sort
    // A large output bypasses the cache, all of its strips (nothing reads it soon, and a normal
    // store reads each line before writing it); a tile that a sink reads next stays in it.
    const bool stream = region.rows * row_bytes(region.cols, p.output) >= kSortedCpu.stream_bytes;
    sorted_region(p, region, out, tracker, progress, mirror, stream);
}

}  // namespace hpcml::detail::similarity
