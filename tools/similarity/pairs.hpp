// hpcml-similarity --pairs: the pairs that pass instead of a dense S. Each block's pairs go to a
// part file of their own in the journal (written whole, then renamed into place); a finished run
// gathers the parts into one .npy of int64 rows (i, j) in mode all or (i, j, count) in mode
// count, in row-major order. Memory grows with the pairs, never with n x m.
#pragma once

#include <hpcml/similarity.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "blocks.hpp"

namespace hpcml::tools {

// A mirrored block's mirror (mirror_of(block)) from the block's own pairs, already in `pairs`
// (rows of `width`): (j, i[, count]) for each (i, j[, count]) with j past the block's rows.
void append_mirror_pairs(const Block& block, std::size_t width, std::vector<std::int64_t>& pairs);

// A part file: written to a temporary name and renamed, so that it exists only whole. Throws Exit.
void write_part(const std::string& path, const std::vector<std::int64_t>& pairs);
// Reads a part; false when it is missing or unreadable.
bool read_part(const std::string& path, std::vector<std::int64_t>& pairs);

// Writes the .npy of the parts' pairs, row-major (sorted in place where the blocks did not come
// in that order), to file descriptor `fd` from offset 0; returns the number of pairs. Holds
// every pair once (width x 8 bytes each) and one part at a time. Throws Exit.
std::size_t write_pairs_npy(int fd, const std::vector<std::string>& parts, std::size_t width, const std::string& path);

}  // namespace hpcml::tools
