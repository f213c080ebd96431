// The sorted CPU method's output paths (cpu_sorted_item.hpp's items): rows of counters to counts
// in the output's type, or mode All's masks to its encoding, each encoded in the workspace and
// then copied (streamed where the output is large), and the y = x or caller's mirror beside them.
#include <cstring>

#include "cpu_sorted_item.hpp"

namespace hpcml::detail::similarity::sorted {

namespace {

// Copies a row's bytes to the output (streamed where the output is large).
void put_row(const Item& it, const void* row, std::size_t bytes, unsigned char* dst) {
    if (it.stream) {
        cpu::stream_bytes(row, bytes, dst);
    } else if (bytes == kBitsBytes) {  // a whole tile's mask: inlined, where a call would cost as much as the copy
        std::memcpy(dst, row, kBitsBytes);
    } else {
        std::memcpy(dst, row, bytes);
    }
}

// Mode All: a row's mask (bit j is column j) in the output's encoding, `cols` columns of it.
template <class Level, class Bits>
const void* encode_mask(const Item& it, const Bits& mask) {
    if (it.p.output == SimilarityOutput::Bitmask) return &mask;  // bit j % 8 of byte j / 8: the same bits
    mask_to_bytes<Level>(mask, it.w.rows);
    return it.w.rows;
}

// Mode All's mirror, from the masks, a band of the item at a time (its rows with a mirror): 64 x
// 64 bit blocks transposed into w.transposed (a mask per column, bit r for the band's row r),
// each then a row of the mirror.
template <class Level>
void store_mirror_masks(const Item& it, bool any_alive) {
    using Bits = typename BitsOf<Level>::type;
    const Workspace& w = it.w;
    auto* const transposed_words = reinterpret_cast<std::uint64_t*>(w.transposed);
    for (std::size_t first = 0; first < it.mirrored_rows; first += kBand) {
        const Bits* const masks = Workspace::as<Bits>(w.counters) + first;
        const std::size_t rows = std::min(kBand, it.mirrored_rows - first);
        for (std::size_t cb = 0; cb < kWords; ++cb)
            for (std::size_t rb = 0; rb < kWords; ++rb) {
                std::uint64_t block[64];
                for (std::size_t k = 0; k < 64; ++k) {
                    const std::size_t r = rb * 64 + k;
                    block[k] = any_alive && r < rows ? masks[r].word(cb) : 0;
                }
                cpu::transpose_64x64_bits(block);
                for (std::size_t k = 0; k < 64; ++k) transposed_words[(cb * 64 + k) * kWords + rb] = block[k];
            }
        const RegionOutput mirror = offset(*it.mirror, it.p, 0, first);
        const std::size_t bytes = row_bytes(rows, it.p.output);
        for (std::size_t c = 0; c < it.cols; ++c)
            put_row(it, encode_mask<Level>(it, Workspace::as<Bits>(w.transposed)[c]), bytes,
                    static_cast<unsigned char*>(mirror.data) + c * mirror.row_stride_bytes);
    }
}

// The item's rows to the output, each encoded in the workspace and then copied, and its mirror
// where it has one (mode All's from the masks, count mode's a transpose of the encoded rows).
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
    // Count mode encodes mirror_rows rows at a time into the workspace (int32 counts not streamed:
    // straight into the output), stores them, and transposes its mirror from them while they are
    // in L1, never from an output streamed past the cache; mode All's mirror comes from the masks.
    constexpr std::size_t kMirrorRows = kSortedCpu.mirror_rows;
    const bool direct = !all && it.p.output == SimilarityOutput::Int32 && !it.stream;
    // Streamed int32 counts get their mirror a cache line at a time too (16 rows' counts in each
    // mirror row, non-temporal, so that no store reads its line first): the chunks of rows start
    // where the mirror's lines do, where every mirror row starts at the same place in its line.
    const bool lines = it.mirror && !all && it.stream && it.p.output == SimilarityOutput::Int32 &&
                       it.mirror->row_stride_bytes % 64 == 0 &&
                       reinterpret_cast<std::uintptr_t>(it.mirror->data) % 4 == 0;
    const std::size_t phase = lines ? (64 - reinterpret_cast<std::uintptr_t>(it.mirror->data) % 64) % 64 / 4 : 0;
    for (std::size_t r0 = 0, r1 = 0; r0 < it.rows; r0 = r1) {
        r1 = std::min(it.rows, r0 == 0 && phase ? phase : r0 + kMirrorRows);
        const RegionOutput encoded =
            direct ? offset(stored, it.p, r0, 0) : RegionOutput{w.rows, row_bytes(kTile, it.p.output)};
        for (std::size_t r = r0; r < r1; ++r) {
            unsigned char* dst = static_cast<unsigned char*>(stored.data) + r * stored.row_stride_bytes;
            if (all) {
                const Bits mask = any_alive ? counters[r] : Bits{};  // lives until the row is stored
                put_row(it, encode_mask<Level>(it, mask), bytes, dst);
                continue;
            }
            unsigned char* row = static_cast<unsigned char*>(encoded.data) + (r - r0) * encoded.row_stride_bytes;
            if (it.p.output == SimilarityOutput::Int32) {
                counters_to_counts<Level>(counters + r * it.planes, it.planes, it.cols,
                                          reinterpret_cast<std::int32_t*>(row));
            } else {
                counters_to_counts<Level>(counters + r * it.planes, it.planes, it.cols, w.counts);
                cpu::store_counts(w.counts, kTile, 1, it.cols, 0, 0, it.p, RegionOutput{row, bytes});
            }
            if (!direct) put_row(it, row, bytes, dst);
        }
        const std::size_t mirrored_end = std::min(r1, it.mirrored_rows);
        if (all || !it.mirror || r0 >= mirrored_end) continue;
        const RegionOutput mirror = offset(*it.mirror, it.p, 0, r0);
        if (!lines || mirrored_end - r0 != kMirrorRows) {
            cpu_transpose(it.p, encoded, mirrored_end - r0, it.cols, mirror);
            continue;
        }
        const std::size_t line = kMirrorRows * sizeof(std::int32_t);
        cpu_transpose(it.p, encoded, kMirrorRows, it.cols, RegionOutput{w.mirrored, line});
        for (std::size_t c = 0; c < it.cols; ++c)
            cpu::stream_bytes(w.mirrored + c * line, line,
                              static_cast<unsigned char*>(mirror.data) + c * mirror.row_stride_bytes);
    }
    if (it.stream) cpu::stream_fence();
    if (it.mirror && all) {
        store_mirror_masks<Level>(it, any_alive);
        if (it.stream) cpu::stream_fence();
    }
}

template <class Level>
void store_item_at(const Item& it, bool any_alive) {
    Level::run([&] { store_item<Level>(it, any_alive); });
}

}  // namespace

StoreKernel store_kernel(CpuKernel level) {
    StoreKernel kernel = nullptr;
    CpuLevels::visit(level, [&](auto entry) { kernel = store_item_at<decltype(entry)>; });
    return kernel;
}

}  // namespace hpcml::detail::similarity::sorted
