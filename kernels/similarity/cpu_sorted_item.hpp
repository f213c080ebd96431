// A work item of the sorted CPU method: rows of a band (or of up to bands_per_item bands)
// against a tile of 512 columns, with the thread's workspace it is computed in. cpu_sorted.cpp
// computes an item's counters or masks; cpu_sorted_store.cpp stores them into the output.
#pragma once

#include <cstddef>
#include <cstdint>

#include "cpu_sorted_levels.hpp"

namespace hpcml::detail::similarity::sorted {

// Items are up to bands_per_item bands tall.
constexpr std::size_t kItemRows = kSortedCpu.bands_per_item * kBand;
// A group's samples of rows' ends are this many apart: a cache line more than the rows, so that
// the 16 a row reads fall in different L1 sets.
constexpr std::size_t kEndsStride = kItemRows + 64 / sizeof(RankInterval);

// A thread's scratch for one item: the group's tables, the rows' interval ends, the counters (or
// mode All's masks), one row of counts, rows of output and a rank map.
struct Workspace {
    unsigned char* tables;      // kGroup x (kTile + 1) rows of bits
    unsigned char* counters;    // kItemRows x planes (count), kItemRows (all) rows of bits
    unsigned char* transposed;  // kTile rows of bits: mode All's masks transposed, for a mirror
    RankInterval* ends;         // kGroup x kEndsStride: the rows' intervals in the tile, a sample's contiguous
    std::int32_t* counts;       // kTile
    unsigned char* rows;        // mirror_rows x kTile int32s' bytes: rows encoded for the output
    unsigned char* mirrored;    // kTile x mirror_rows int32s: their transpose, for a streamed mirror
    std::uint16_t* alive;       // kItemRows: mode All's rows still alive
    std::uint16_t* map;         // strip + 1 + kRankMapRoom: a tile's rank map at one sample
    static std::size_t bytes(unsigned planes, std::size_t strip) {
        return (kGroup * (kTile + 1) + kItemRows * planes + kTile) * kBitsBytes +
               kGroup * kEndsStride * sizeof(RankInterval) +
               (1 + 2 * kSortedCpu.mirror_rows) * kTile * sizeof(std::int32_t) + kItemRows * sizeof(std::uint16_t) +
               (strip + 1 + kRankMapRoom) * sizeof(std::uint16_t);
    }
    Workspace(unsigned char* at, unsigned planes)  // at: 64-byte aligned, bytes(planes, strip) long
        : tables(at),
          counters(tables + kGroup * (kTile + 1) * kBitsBytes),
          transposed(counters + kItemRows * planes * kBitsBytes),
          ends(reinterpret_cast<RankInterval*>(transposed + kTile * kBitsBytes)),
          counts(reinterpret_cast<std::int32_t*>(ends + kGroup * kEndsStride)),
          rows(reinterpret_cast<unsigned char*>(counts + kTile)),
          mirrored(rows + kSortedCpu.mirror_rows * kTile * sizeof(std::int32_t)),
          alive(reinterpret_cast<std::uint16_t*>(mirrored + kSortedCpu.mirror_rows * kTile * sizeof(std::int32_t))),
          map(alive + kItemRows) {}
    // The rows of bits as the level's type.
    template <class Bits>
    static Bits* as(unsigned char* rows) {
        return reinterpret_cast<Bits*>(rows);
    }
};

// One work item: rows [0, rows) of band `band` against columns [0, cols) of tile `tile` of the
// region, computed in a thread's workspace and stored into `out` (the region's output).
struct Item {
    const Problem& p;
    const Region& region;
    const SortedStrip& sorted;
    std::size_t band, tile, rows, cols;
    unsigned planes;
    const Workspace& w;
    const RegionOutput& out;
    const RegionOutput* mirror;  // where the item's transpose goes (at its place), or null
    std::size_t mirrored_rows;   // rows [0, mirrored_rows) have that mirror (a diagonal band's do not)
    bool stream;                 // non-temporal stores (a large output)
};

// o moved r rows down and c columns right.
inline RegionOutput offset(const RegionOutput& o, const Problem& p, std::size_t r, std::size_t c) {
    return {static_cast<unsigned char*>(o.data) + r * o.row_stride_bytes + row_bytes(c, p.output), o.row_stride_bytes};
}

// Stores an item's rows (counts from its counters, or mode All's masks, empty where no pair is
// left) and its mirror where it has one: the level's compiled form (cpu_sorted_store.cpp).
using StoreKernel = void (*)(const Item& it, bool any_alive);
StoreKernel store_kernel(CpuKernel level);

}  // namespace hpcml::detail::similarity::sorted
