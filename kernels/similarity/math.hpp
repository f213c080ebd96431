// The similarity predicate, the output layout and the output encodings, shared by every
// backend: written once, so that the CPU tests check the GPU's results too.
#pragma once

#include <hpcml/similarity.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "common/hd.hpp"

namespace hpcml::detail::similarity {

// |x - y| < t with the difference rounded to float32 once, as NumPy computes it. NaN (and
// inf - inf) compares false. Callers must not be compiled with fast math.
HPCML_HD inline bool within_threshold(float x, float y, float threshold) { return fabsf(x - y) < threshold; }

// Bytes of `cols` packed elements of type `output`: a row of the output, or the offset of
// column `cols` within one (a multiple of 8 for Bitmask).
HPCML_HD inline std::size_t row_bytes(std::size_t cols, SimilarityOutput output) {
    switch (output) {
        case SimilarityOutput::Int32:
            return cols * 4;
        case SimilarityOutput::UInt16:
            return cols * 2;
        case SimilarityOutput::Bitmask:
            return (cols + 7) / 8;
        default:
            return cols;  // UInt8, Bool
    }
}

// Int32, UInt16 and UInt8 hold the count itself (the API checked that `samples` fits).
template <class T, class Count>
HPCML_HD inline T encode_count(Count count) {
    return static_cast<T>(count);
}

// Mode All: a pair passes when every one of `samples` samples passed (true for zero samples,
// as NumPy's empty all() is).
HPCML_HD inline bool all_within(std::uint32_t count, std::uint32_t samples) { return count == samples; }

// Bool holds a pass as 1, a fail as 0 (NumPy's bool).
HPCML_HD inline std::uint8_t encode_bool(bool pass) { return pass ? 1 : 0; }

// Bitmask: the pass of column j is bit j % 8 of byte j / 8 (little bit order). One byte from
// pass(b) of its columns b < valid (valid may exceed 8); the bits past them are 0.
template <class Pass>
HPCML_HD inline std::uint8_t encode_bitmask_byte(const Pass& pass, unsigned valid) {
    unsigned byte = 0;
    for (unsigned b = 0; b < 8; ++b)
        if (b < valid) byte |= static_cast<unsigned>(pass(b)) << b;
    return static_cast<std::uint8_t>(byte);
}

}  // namespace hpcml::detail::similarity
