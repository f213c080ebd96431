/// @file
/// Pairwise similarity counts: S[i,j] = #{s : |x[s,i] - y[s,j]| < t}.
///
/// x is (n_samples, n) and y is (n_samples, m), row-major float32 (samples are rows, features
/// are columns, as a NumPy array x[s, i]); S is (n, m). The result equals, bit for bit, float32
/// NumPy's `(abs(x[:, :, None] - y[:, None, :]) < t).sum(0)`: the difference is rounded to
/// float32 once, the comparison is strict, NaN compares false. The fused and sorted methods never
/// store the n_samples x n x m intermediate that expression materialises (Method, core.hpp: the
/// sorted one sorts each sample's values and counts rank intervals as bit masks; on the GPU, in
/// count mode, it takes at most 1023 samples).
#pragma once

#include <hpcml/core.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>
#include <vector>

namespace hpcml {

/// A row-major float32 matrix: `rows` samples of `cols` features, row s starting at data + s * ld.
/// ld = 0 means packed rows (ld = cols); a larger ld views a block of columns of a wider matrix
/// without copying it (data pointing at the block's first column).
struct MatrixView {
    const float* data = nullptr;  ///< the first sample's first feature
    std::size_t rows = 0;         ///< samples
    std::size_t cols = 0;         ///< features
    std::size_t ld = 0;           ///< floats from one sample's row to the next (0: cols)
};

/// What S[i, j] says of the samples within the threshold.
enum class SimilarityMode {
    Count,  ///< S[i,j] = number of samples within the threshold
    All     ///< S[i,j] = every sample within the threshold (Chebyshev distance < t)
};

/// The element type S is stored in.
enum class SimilarityOutput {
    Default,  ///< Int32 for Count, Bool for All
    Int32,    ///< Count: int32 counts
    UInt16,   ///< Count: uint16 counts; needs n_samples <= 65535
    UInt8,    ///< Count: uint8 counts; needs n_samples <= 255
    Bool,     ///< All: one byte per pair, 0 or 1 (NumPy's bool)
    Bitmask   ///< All: each output row packed 8 pairs per byte, bit j % 8 of byte j / 8
              ///< (numpy.packbits(..., axis=1, bitorder="little")); a row is ceil(m / 8) bytes
};

/// backend, method, device and stream: ExecutionOptions (core.hpp); a stream goes with
/// similarity_device and similarity_pairs_device only.
struct SimilarityOptions : ExecutionOptions {
    float threshold = 1.0f;  ///< finite and >= 0
    SimilarityMode mode = SimilarityMode::Count;          ///< count the samples within t, or require all
    SimilarityOutput output = SimilarityOutput::Default;  ///< the element type of S (Default: by mode)
    /// Output tile edge: the output is produced tile x tile at a time (on the GPU, several tiles
    /// per launch, each copied to the host while the next is computed). Unset: the backend picks
    /// (the whole output on the CPU; batches of 1024 x 1024 tiles on the GPU). On the CPU the
    /// fused and sorted methods fill a host output in one pass whatever the tile: there the tile
    /// shapes what a tile sink receives, and the naive method's intermediates. Must be >= 1. With Bitmask
    /// output the column edge is rounded up to a multiple of 8.
    std::optional<std::size_t> tile;
};

/// One finished output tile, in host memory: rows [row0, row0 + rows) and columns
/// [col0, col0 + cols) of S. Row r of the tile starts at data + r * row_stride_bytes and holds
/// `cols` elements of the output type (for Bitmask, ceil(cols / 8) bytes; col0 is then a
/// multiple of 8). The memory is valid only during the callback.
struct SimilarityTile {
    std::size_t row0 = 0;   ///< S's row of the tile's first row
    std::size_t col0 = 0;   ///< S's column of the tile's first column
    std::size_t rows = 0;   ///< rows in the tile
    std::size_t cols = 0;   ///< columns in the tile
    const void* data = nullptr;        ///< the tile's first row
    std::size_t row_stride_bytes = 0;  ///< bytes from one row of the tile to the next
    SimilarityOutput output = SimilarityOutput::Int32;  ///< the element type (never Default)
};
/// Receives each finished tile (similarity's sink overload); an exception it throws ends the call.
using SimilarityTileSink = std::function<void(const SimilarityTile&)>;

std::string_view to_string(SimilarityMode mode) noexcept;      ///< "count" | "all"
std::string_view to_string(SimilarityOutput output) noexcept;  ///< "default" | "int32" | ... | "bitmask"
/// The inverses; anything else throws InvalidArgument naming `argument` (for example "--dtype").
SimilarityMode parse_similarity_mode(std::string_view text, std::string_view argument = "mode");
/// The SimilarityOutput named `text` (as parse_similarity_mode).
SimilarityOutput parse_similarity_output(std::string_view text, std::string_view argument = "output");
std::vector<std::string_view> similarity_mode_names();    ///< count, all
std::vector<std::string_view> similarity_output_names();  ///< the output types, without "default"

/// The concrete output type `options` asks for (Default resolved by mode).
SimilarityOutput resolve_output(const SimilarityOptions& options);

/// What an output type is, for whoever writes or reads one: its name, NumPy's dtype and the .npy
/// header's descr, bytes per stored element, whether a pair is a bit of one (Bitmask: a byte
/// holds 8 pairs of a row), the most samples it can count (mode All's outputs: int32's) and its mode.
struct SimilarityOutputInfo {
    std::string_view name;         ///< hpcml's name (to_string), as the tools' --dtype takes it
    std::string_view numpy_dtype;  ///< NumPy's dtype ("uint8" for Bitmask)
    std::string_view npy_descr;    ///< the .npy header's descr ("<i4", "|b1", ...)
    std::size_t element_bytes = 0;  ///< bytes of one stored element
    bool bits = false;              ///< a pair is one bit of an element (Bitmask)
    /// Columns an element holds (8 for Bitmask, else 1): a row of m columns is ceil(m /
    /// columns_per_element) elements, and a tile or block that starts a row's columns anywhere
    /// but its first starts on a multiple of it (tiles are rounded up to one).
    std::size_t columns_per_element = 1;
    std::uint64_t largest_count = 0;              ///< the most samples a call with this output may have
    SimilarityMode mode = SimilarityMode::Count;  ///< the mode the output belongs to
};
/// Throws InvalidArgument for Default (resolve it first) or a value that is no output type.
SimilarityOutputInfo similarity_output_info(SimilarityOutput output);
/// S's shape as an array of `output`'s elements: {n, m}, or {n, ceil(m / 8)} for Bitmask.
std::array<std::size_t, 2> similarity_output_shape(std::size_t n, std::size_t m, SimilarityOutput output);

/// Throws InvalidArgument, naming the option, where `options` cannot run on `samples` samples:
/// the threshold, the tile, an output of the other mode, counts the output type cannot hold.
/// Every entry point checks this itself; a caller can check before it commits to a long job,
/// naming the output type as its own users know it (`output_argument`: "--dtype", "dtype").
void check_similarity_options(const SimilarityOptions& options, std::size_t samples,
                              std::string_view output_argument = "output");

/// Bytes of an n x m output of type `output` (rows packed; Bitmask rows are ceil(m / 8) bytes).
std::size_t similarity_output_bytes(std::size_t n, std::size_t m, SimilarityOutput output);

/// Computes S into `out`, a host buffer of similarity_output_bytes(x.cols, y.cols, ...) bytes.
/// y = MatrixView{} (null, 0 x 0) means y = x; so does a view of the same memory as x. Then S is
/// symmetric, and with 16 samples or more the fused and sorted methods compute only half of it
/// and mirror the rest (on the CPU; on the GPU the fused method in similarity_device, whose output
/// stays on the device). Throws InvalidArgument for bad arguments (naming them), OutOfMemory when hpcml's own
/// memory would not fit: the naive method's intermediate, or the CPU methods' copies of the inputs
/// (the fused one's packed inputs, samples x (rows + cols) floats of a tile, `tile` bounding them;
/// the sorted one's sorted values, 6 bytes per sample and feature of strips of 16384; on the GPU,
/// of each launch's region).
RunStats similarity(MatrixView x, MatrixView y, void* out, const SimilarityOptions& options = {});

/// The same, handing each finished tile to `sink` instead of filling one host buffer, so that
/// outputs larger than host memory can be written to disk or reduced as they stream. Tiles come
/// in row-major order, each once; except where the CPU's fused or sorted method uses the symmetry (y is
/// x, 16 samples or more): it computes the tiles on and above the diagonal
/// (row-major among themselves) and hands each one above the diagonal to the sink followed at
/// once by its mirror.
RunStats similarity(MatrixView x, MatrixView y, const SimilarityTileSink& sink, const SimilarityOptions& options = {});

/// The pairs that pass, instead of a dense S: in All mode the (i, j) with every sample within the
/// threshold; in Count mode those with S[i, j] >= min_count, with their counts. Row-major order
/// (NumPy's nonzero order). Computed tile by tile (options.tile, 1024 when unset) and reduced per
/// tile, so memory grows with the number of pairs, not with n x m; on the GPU each launch's
/// output is reduced on the device and only its pairs are copied back. options.output is ignored.
struct SimilarityPairs {
    std::vector<std::uint64_t> i;     ///< the pairs' rows of S (x's features)
    std::vector<std::uint64_t> j;     ///< the pairs' columns of S (y's features)
    std::vector<std::int32_t> count;  ///< Count mode only; empty in All mode
    RunStats stats;                   ///< where and how the call ran
};
/// Computes the pairs (SimilarityPairs) of x and y in host memory; y = MatrixView{} means y = x.
SimilarityPairs similarity_pairs(MatrixView x, MatrixView y, const SimilarityOptions& options = {},
                                 std::size_t min_count = 1);
/// The same from x and y in device memory (as similarity_device takes them; the work runs on
/// options.stream), the pairs returned in host memory.
SimilarityPairs similarity_pairs_device(MatrixView x, MatrixView y, const SimilarityOptions& options = {},
                                        std::size_t min_count = 1);

/// Where similarity_pairs_on_device writes its pairs: device memory of the call's device for
/// `pairs` int64 rows, `pairs` int64 columns and (Count mode) `pairs` int32 counts (count may be
/// null in All mode; every pointer may be null when pairs is 0).
struct SimilarityDevicePairs {
    std::int64_t* i = nullptr;      ///< the pairs' rows of S
    std::int64_t* j = nullptr;      ///< the pairs' columns of S
    std::int32_t* count = nullptr;  ///< their counts (Count mode; may be null in All mode)
};
/// Called once, on the calling thread, when the number of pairs is known, for the memory they go
/// to (a framework's allocator: torch.empty on the call's stream). It may throw; the call then
/// throws that.
using SimilarityDevicePairsAllocator = std::function<SimilarityDevicePairs(std::size_t pairs)>;
/// The pairs of similarity_pairs_device left on the device: each launch's output is reduced
/// there and its pairs appended on the device as they pass; only the number of pairs crosses the
/// link (once per launch). When every launch has run, `allocate` is asked for the memory and the
/// pairs are written there in row-major order, on options.stream, complete when the call
/// returns. x and y in device memory, as similarity_device takes them; the CUDA backend only.
/// Refused while options.stream is being captured into a CUDA graph (the pairs' number sizes
/// their memory).
RunStats similarity_pairs_on_device(MatrixView x, MatrixView y, const SimilarityDevicePairsAllocator& allocate,
                                    const SimilarityOptions& options = {}, std::size_t min_count = 1);

/// How a planned tile's elements are obtained (SimilarityTilePlan).
enum class SimilarityTileRole {
    Computed,  ///< from its rows of x and its columns of y
    Diagonal,  ///< y is x, and the tile starts on the diagonal: computed on and above it, mirrored below
    Mirror     ///< y is x, and the tile is below the diagonal: the transpose of a computed one
};

/// A tile of a SimilarityTilePlan: rows [row0, row0 + rows) and columns [col0, col0 + cols) of
/// S, its place in the plan's grid (row_block, col_block: those of its first tile for a band of
/// SimilarityTilePlan::bands) and its role.
struct SimilarityPlannedTile {
    std::size_t row0 = 0;       ///< S's row of the tile's first row
    std::size_t col0 = 0;       ///< S's column of the tile's first column
    std::size_t rows = 0;       ///< rows in the tile
    std::size_t cols = 0;       ///< columns in the tile
    std::size_t row_block = 0;  ///< its row block in the plan's grid
    std::size_t col_block = 0;  ///< its (first) column block in the plan's grid
    SimilarityTileRole role = SimilarityTileRole::Computed;  ///< how its elements are obtained
};

/// An n x m output cut into tiles: a grid of row blocks by column blocks. The one tile plan of
/// every front end: the library's tiles (a tile sink's, the CUDA launches', the pair lists'),
/// hpcml-similarity's blocks and its resume journal, and hpcml.dask's tiles and to_zarr.
/// Bitmask column blocks start on a byte (whole multiples of 8 columns but the last); where y
/// is x (`symmetric`), the row and column blocks are the same, and a tile below the diagonal is
/// the mirror (similarity_transpose) of the one above it.
struct SimilarityTilePlan {
    std::size_t n = 0;                                  ///< S's rows (x's features)
    std::size_t m = 0;                                  ///< S's columns (y's features)
    SimilarityOutput output = SimilarityOutput::Int32;  ///< a concrete type (never Default)
    bool symmetric = false;                             ///< y is x
    std::vector<std::size_t> row_blocks;  ///< the blocks' heights, covering n (an empty side: one empty block)
    std::vector<std::size_t> col_blocks;  ///< the blocks' widths, covering m (an empty side: one empty block)
    /// The row edge the blocks were cut with (similarity_tile_plan's `tile`, no larger than the
    /// output's longer side), or the first row block's length.
    std::size_t tile_rows = 0;
    /// The column edge (the same, rounded up to whole elements of `output`), or the first
    /// column block's width.
    std::size_t tile_cols = 0;

    /// Every tile of the grid, row-major, with its role (an empty side gives empty tiles).
    std::vector<SimilarityPlannedTile> tiles() const;
    /// Each row block's computed tiles merged, in order, into bands of up to `tiles_per_band`
    /// tiles (at least 1): from the diagonal tile on where symmetric (a band starting there has
    /// role Diagonal), else from the first column; no empty ones. hpcml-similarity's units of
    /// work, the CUDA backend's launches and, with 1, the tiles a sink is given.
    std::vector<SimilarityPlannedTile> bands(std::size_t tiles_per_band) const;
    /// bands(), one at a time to `visit` (a SimilarityPlannedTile each), without the list.
    template <class Visit>
    void for_each_band(std::size_t tiles_per_band, Visit&& visit) const;
    /// Bytes of a row of `cols` columns of S (similarity_output_bytes(1, cols, output)).
    std::size_t row_bytes(std::size_t cols) const;
};

template <class Visit>
void SimilarityTilePlan::for_each_band(std::size_t tiles_per_band, Visit&& visit) const {
    const std::size_t count = col_blocks.size();
    tiles_per_band = tiles_per_band < 1 ? 1 : tiles_per_band > count ? count : tiles_per_band;
    for (std::size_t a = 0, row0 = 0; a < row_blocks.size(); row0 += row_blocks[a++]) {
        if (row_blocks[a] == 0) continue;
        const std::size_t first = symmetric ? a : 0;
        std::size_t col0 = 0;
        for (std::size_t b = 0; b < first; ++b) col0 += col_blocks[b];
        for (std::size_t b = first; b < count && col_blocks[b] > 0;) {
            const std::size_t end = b + (tiles_per_band < count - b ? tiles_per_band : count - b);
            std::size_t cols = 0;
            for (std::size_t k = b; k < end; ++k) cols += col_blocks[k];
            visit(SimilarityPlannedTile{
                row0, col0, row_blocks[a], cols, a, b,
                symmetric && b == a ? SimilarityTileRole::Diagonal : SimilarityTileRole::Computed});
            col0 += cols;
            b = end;
        }
    }
}

/// Blocks of `tile` rows and columns from the first (the last shorter), the edge no larger than
/// max(n, m) and rounded up to whole elements of `output` for the columns, and for the rows too
/// where symmetric (y is x: n == m). Throws InvalidArgument naming "tile" for 0, "output" for
/// Default, "m" for a symmetric plan with n != m.
SimilarityTilePlan similarity_tile_plan(std::size_t n, std::size_t m, std::size_t tile, SimilarityOutput output,
                                        bool symmetric);
/// A plan of given blocks (hpcml.dask's chunks), checked: they cover n and m, none is empty
/// (but an empty side's one), Bitmask column blocks are whole bytes but the last, and symmetric
/// plans have the same row and column blocks, whole bytes too; InvalidArgument naming `argument`.
SimilarityTilePlan similarity_tile_plan(std::size_t n, std::size_t m, std::vector<std::size_t> row_blocks,
                                        std::vector<std::size_t> col_blocks, SimilarityOutput output, bool symmetric,
                                        std::string_view argument = "blocks");
/// Where a symmetric plan's tile or band writes besides its own elements: the transpose of its
/// columns past its last row (role Mirror), or none (a diagonal tile mirrors within itself).
std::optional<SimilarityPlannedTile> similarity_mirror_of(const SimilarityPlannedTile& tile);

/// The mirror of a host tile, S(j, i) = S(i, j) where y is x: dst(a, b) = tile(b, a) for
/// a < tile.cols, b < tile.rows, dst's rows dst_row_stride_bytes apart (tile.row0 and col0 are
/// not used). Every dst row is written whole: for Bitmask from bit 0 of its first byte, with 0
/// in the bits past tile.rows. Threaded; Bitmask by 8 x 8 bit-block transposes. dst must not
/// overlap the tile's data (InvalidArgument).
void similarity_transpose(const SimilarityTile& tile, void* dst, std::size_t dst_row_stride_bytes);

/// The CUDA backend on device memory: x, y and out are device pointers on options.device; work
/// is queued on options.stream and the call returns once it is complete, or at once while that
/// stream is being captured into a CUDA graph (the work is then the graph's; with the fused
/// method it allocates nothing, so torch.compile's "reduce-overhead" can capture it). `out` may
/// also be host memory: the result is then computed tile group by tile group and copied there
/// after the work already on options.stream (straight from the device where `out` is
/// page-locked: cudaHostAlloc, cudaHostRegister, a pinned torch tensor; through pinned buffers
/// and several threads where it is pageable), complete when the call returns; refused
/// (InvalidArgument naming out) while the stream is being captured. Needs a CUDA build and
/// device; throws NoDevice otherwise.
RunStats similarity_device(MatrixView x, MatrixView y, void* out, const SimilarityOptions& options = {});

}  // namespace hpcml
