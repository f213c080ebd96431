// Reading and writing NumPy .npy files (format versions 1-3) for hpcml-similarity.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace hpcml::tools {

// A 2-D array read as float32, row-major (C order).
struct Matrix {
    std::vector<float> data;
    std::size_t rows = 0, cols = 0;
};

// Reads `path` (argument names it in errors). Float32 C-order is read as is; Fortran order is
// transposed; other little-endian real or integer dtypes are converted to float32 (float64
// rounds). Throws hpcml::Error (InvalidArgument) with a message naming `argument` otherwise.
Matrix read_npy(const std::string& path, const std::string& argument);

// The .npy header (padded to a multiple of 64 bytes) for a C-order array.
std::string npy_header(const std::string& descr, std::size_t rows, std::size_t cols);

}  // namespace hpcml::tools
