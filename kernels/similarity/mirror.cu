// The mirror of the symmetric device path: where y is x, S = S^T, and the fused kernel (or the
// sorted one, whose 256 x 256 blocks cover them) writes only the 128 x 128 blocks on and above
// the diagonal (rows in bands of whole blocks); these
// kernels fill every element below it, out(a, b) = out(b, a) with a / 128 > b / 128.
//
// Elements (Int32, UInt16, UInt8, Bool): 32 x 32 tiles through shared memory, so that both the
// read of the source rows and the write of the destination rows are coalesced. A 32-tile lies in
// one 128-block, so a tile is wholly mirrored or wholly left alone. Bitmask: 32 x 32 bit tiles,
// a warp each, transposed by 32 ballots. Cost: 2 bytes moved per mirrored output byte (read
// once, written once): n^2 / 2 output elements over the memory bandwidth, against the
// n^2 / 2 x samples compare-counts saved.
#include <algorithm>
#include <cstdint>

#include "common/cuda_check.hpp"
#include "cuda_launchers.hpp"
#include "math.hpp"

namespace hpcml::detail::similarity {

namespace {

// The mirror's tuning: it changes speed, never results. Timed only as part of the symmetric
// device path: 4.80 ms against 8.40 ms without symmetry (H100, 67fae64); no other tile timed.
struct MirrorGpuPolicy {
    int tile;           // a block transposes tile x tile elements through shared memory
    int rows_per_pass;  // rows of the tile a thread pass covers (tile / rows_per_pass elements a thread)
};
constexpr MirrorGpuPolicy kMirrorGpu{.tile = 32, .rows_per_pass = 8};
constexpr int kTile = kMirrorGpu.tile, kRowsPerPass = kMirrorGpu.rows_per_pass;
constexpr std::size_t kBlock = kFusedGpu.block_rows;
static_assert(kFusedGpu.block_rows == kFusedGpu.block_cols && kFusedGpu.block_rows % kTile == 0,
              "a mirror tile lies in one of the fused kernel's blocks");

// Grid: x over destination column tiles, y (striding) over destination row tiles [tile_begin,
// tile_end).
template <class T>
__global__ void mirror_lower_kernel(unsigned char* out, std::size_t stride, std::size_t n, std::size_t tile_begin,
                                    std::size_t tile_end) {
    __shared__ T tile[kTile][kTile + 1];  // +1: the transposed read hits 32 banks
    const std::size_t b0 = std::size_t{blockIdx.x} * kTile;
    for (std::size_t ty = tile_begin + blockIdx.y; ty < tile_end; ty += gridDim.y) {
        const std::size_t a0 = ty * kTile;
        if (a0 / kBlock <= b0 / kBlock) continue;  // computed by the upper launch (uniform per block)
        for (int k = static_cast<int>(threadIdx.y); k < kTile; k += kRowsPerPass) {
            const std::size_t b = b0 + k, a = a0 + threadIdx.x;
            if (b < n && a < n) tile[k][threadIdx.x] = reinterpret_cast<const T*>(out + b * stride)[a];
        }
        __syncthreads();
        for (int k = static_cast<int>(threadIdx.y); k < kTile; k += kRowsPerPass) {
            const std::size_t a = a0 + k, b = b0 + threadIdx.x;
            if (a < n && b < n) reinterpret_cast<T*>(out + a * stride)[b] = tile[threadIdx.x][k];
        }
        __syncthreads();  // the tile is read before the next one overwrites it
    }
}

// One warp per 32 x 32 bit tile: lane l holds the 32 bits of source row b0 + l at columns
// a0..a0+31, and the k-th ballot gathers bit k of every lane, which is destination row a0 + k
// at columns b0..b0+31 (bit l = column b0 + l, Bitmask's little bit order). Rows and bytes past
// the output are neither read nor written; their bits are 0. Grid: x over source row tiles
// (b), y and the block's 8 warps (striding) over destination row tiles (a) [tile_begin, tile_end).
__global__ void mirror_lower_bits_kernel(unsigned char* out, std::size_t stride, std::size_t n, std::size_t tile_begin,
                                         std::size_t tile_end) {
    const std::size_t row_bytes = detail::similarity::row_bytes(n, SimilarityOutput::Bitmask);
    const unsigned lane = threadIdx.x;
    const std::size_t b0 = std::size_t{blockIdx.x} * kTile;
    for (std::size_t ta = tile_begin + std::size_t{blockIdx.y} * blockDim.y + threadIdx.y; ta < tile_end;
         ta += std::size_t{gridDim.y} * blockDim.y) {
        const std::size_t a0 = ta * kTile;
        if (a0 / kBlock <= b0 / kBlock) continue;  // computed by the upper launch (uniform per warp)
        unsigned bits = 0;
        if (b0 + lane < n)
            for (unsigned q = 0; q < 4 && a0 / 8 + q < row_bytes; ++q)
                bits |= unsigned{out[(b0 + lane) * stride + a0 / 8 + q]} << (8 * q);
        unsigned mine = 0;
        for (unsigned k = 0; k < kTile; ++k) {
            const unsigned row = __ballot_sync(0xffffffffu, (bits >> k) & 1u);
            if (k == lane) mine = row;
        }
        if (a0 + lane < n)
            for (unsigned q = 0; q < 4 && b0 / 8 + q < row_bytes; ++q)
                out[(a0 + lane) * stride + b0 / 8 + q] = static_cast<unsigned char>(mine >> (8 * q));
    }
}

unsigned grid_rows(std::size_t rows) { return static_cast<unsigned>(rows < 65535 ? (rows ? rows : 1) : 65535); }

}  // namespace

void launch_mirror_lower(const Problem& p, void* out, std::size_t out_row_bytes, std::size_t row_begin,
                         std::size_t row_end, cudaStream_t stream) {
    const std::size_t n = p.n;
    row_end = std::min(row_end, n);
    if (row_begin % kBlock != 0 || (row_end % kBlock != 0 && row_end != n))
        detail::raise(ErrorKind::Internal, "similarity: a mirrored band starts or ends inside a 128-row block");
    if (row_end <= std::max(row_begin, kBlock)) return;  // nothing below the diagonal blocks
    auto* bytes = static_cast<unsigned char*>(out);
    // Destination row tiles [tile_begin, tile_end); their sources are the column tiles left of
    // the band's last row, computed by the upper launch for the bands above and this one.
    const std::size_t tile_begin = row_begin / kTile, tile_end = (row_end + kTile - 1) / kTile,
                      rows = tile_end - tile_begin;
    const dim3 block(kTile, kRowsPerPass);
    const bool known = Outputs::visit(p.output, [&](auto entry) {
        using Out = decltype(entry);
        if constexpr (Out::bits) {
            const dim3 grid(static_cast<unsigned>(tile_end), grid_rows((rows + kRowsPerPass - 1) / kRowsPerPass));
            mirror_lower_bits_kernel<<<grid, block, 0, stream>>>(bytes, out_row_bytes, n, tile_begin, tile_end);
        } else {  // a move of elements: one instantiation per element type
            const dim3 grid(static_cast<unsigned>(tile_end), grid_rows(rows));
            mirror_lower_kernel<typename Out::Element>
                <<<grid, block, 0, stream>>>(bytes, out_row_bytes, n, tile_begin, tile_end);
        }
    });
    if (!known) detail::raise(ErrorKind::Internal, "similarity: unresolved output type");
    HPCML_LAUNCH_CHECK("mirror kernel");
}

}  // namespace hpcml::detail::similarity
