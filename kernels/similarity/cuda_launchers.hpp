// The similarity family's launchers beside the methods' (methods.hpp): the mirror (mirror.cu) and
// the pair lists' selection (select.cu), which cuda_driver.cpp and cuda_pairs.cpp call; problem
// pointers are device pointers here, and `out` is device memory.
#pragma once

#include <cuda_runtime.h>

#include "methods.hpp"

namespace hpcml::detail::similarity {

// out(a, b) = out(b, a) for every element of rows a in [row_begin, row_end) whose 128-block row
// a / 128 is below its block column b / 128, in the n x n output `out` (device memory,
// problem.output, rows of out_row_bytes): the symmetric paths' mirror of the blocks they
// computed. row_begin is a multiple of 128, row_end one too or n; rows [0, row_end) on and above
// the diagonal blocks must be written.
void launch_mirror_lower(const Problem& problem, void* out, std::size_t out_row_bytes, std::size_t row_begin,
                         std::size_t row_end, cudaStream_t stream);

// The elements of a region's output (rows x cols packed, Int32 or Bool) whose count reaches
// min_count (Bool: 1), in row-major order, into `selected`, and their number into
// *selected_count (device memory both); with temp == nullptr, only the temporary bytes the
// selection needs are returned (CUB's convention), else temp_bytes.
std::size_t select_passing(const unsigned char* out, SimilarityOutput output, std::size_t elements,
                           std::int32_t min_count, PassingElement* selected, unsigned long long* selected_count,
                           void* temp, std::size_t temp_bytes, cudaStream_t stream);

// Pairs left on the device (similarity_pairs_on_device): a region's `count` selected elements
// as keys (row * m + column) and counts (null in mode All) from keys[0] and counts[0];
// sort_pair_keys orders `count` keys (with their counts) by their low `bits` bits, stable, using
// keys_alt and counts_alt, and says which of each pair holds the result (CUB's DoubleBuffer; with
// temp == nullptr, only the temporary bytes needed); split_pair_keys writes the rows, columns
// and counts of `count` keys.
void append_pair_keys(const PassingElement* selected, std::size_t count, const Region& region, std::size_t m,
                      std::uint64_t* keys, std::int32_t* counts, cudaStream_t stream);
std::size_t sort_pair_keys(std::uint64_t* keys, std::uint64_t* keys_alt, std::int32_t* counts, std::int32_t* counts_alt,
                           std::size_t count, int bits, bool& sorted_in_alt, void* temp, std::size_t temp_bytes,
                           cudaStream_t stream);
void split_pair_keys(const std::uint64_t* keys, const std::int32_t* counts, std::size_t count, std::size_t m,
                     std::int64_t* i, std::int64_t* j, std::int32_t* counts_out, cudaStream_t stream);

}  // namespace hpcml::detail::similarity
