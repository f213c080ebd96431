// The similarity predicate, the output layout and the output encodings, shared by every
// backend: written once, so that the CPU tests check the GPU's results too.
#pragma once

#include <hpcml/similarity.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "common/hd.hpp"
#include "common/names.hpp"

namespace hpcml::detail::similarity {

// |x - y| < t with the difference rounded to float32 once, as NumPy computes it. NaN (and
// inf - inf) compares false. Callers must not be compiled with fast math.
HPCML_HD inline bool within_threshold(float x, float y, float threshold) { return fabsf(x - y) < threshold; }

// Mode All: a pair passes when every one of `samples` samples passed (true for zero samples,
// as NumPy's empty all() is).
HPCML_HD inline bool all_within(std::uint32_t count, std::uint32_t samples) { return count == samples; }

// The output types, one entry each: the public value, its name, NumPy's dtype and the .npy
// header's descr, the mode it belongs to, the element the backends store, whether a pair is a
// bit of it (Bitmask: 8 pairs per byte) rather than a whole element, the largest count it holds,
// and how a pair's count (of `samples`) becomes what is stored. Every backend, the API, the
// tool and Python read this table (through similarity_output_info); adding an output type is an
// entry here and in Outputs, plus kernel code only where its encoding is not an element.
template <class E, SimilarityOutput Value, SimilarityMode Mode>
struct OutputEntry {
    using Element = E;
    static constexpr SimilarityOutput value = Value;
    static constexpr SimilarityMode mode = Mode;
    static constexpr bool bits = false;
    static constexpr std::size_t columns_per_element = 1;  // Bitmask: 8 (a row of m is ceil(m / 8) bytes)
    // Count: the count itself (the API checked that `samples` fits); All: 1 or 0 (NumPy's bool).
    HPCML_HD static Element encode(std::uint32_t count, std::uint32_t samples) {
        if constexpr (Mode == SimilarityMode::Count) {
            return static_cast<Element>(count);
        } else {
            return all_within(count, samples) ? 1 : 0;
        }
    }
};
struct Int32Output : OutputEntry<std::int32_t, SimilarityOutput::Int32, SimilarityMode::Count> {
    static constexpr std::string_view name = "int32", numpy = "int32", npy_descr = "<i4";
    static constexpr std::uint64_t largest = 2147483647;
};
struct UInt16Output : OutputEntry<std::uint16_t, SimilarityOutput::UInt16, SimilarityMode::Count> {
    static constexpr std::string_view name = "uint16", numpy = "uint16", npy_descr = "<u2";
    static constexpr std::uint64_t largest = 65535;
};
struct UInt8Output : OutputEntry<std::uint8_t, SimilarityOutput::UInt8, SimilarityMode::Count> {
    static constexpr std::string_view name = "uint8", numpy = "uint8", npy_descr = "|u1";
    static constexpr std::uint64_t largest = 255;
};
// Mode All's outputs count in the kernels' 32-bit counters: as many samples as int32 holds.
struct BoolOutput : OutputEntry<std::uint8_t, SimilarityOutput::Bool, SimilarityMode::All> {
    static constexpr std::string_view name = "bool", numpy = "bool", npy_descr = "|b1";
    static constexpr std::uint64_t largest = 2147483647;
};
struct BitmaskOutput : OutputEntry<std::uint8_t, SimilarityOutput::Bitmask, SimilarityMode::All> {
    static constexpr std::string_view name = "bitmask", numpy = "uint8", npy_descr = "|u1";
    static constexpr std::uint64_t largest = 2147483647;
    static constexpr bool bits = true;  // pair j of a row is bit j % 8 of byte j / 8 (encode_bitmask_byte)
    static constexpr std::size_t columns_per_element = 8;
};
using Outputs = VariantTable<Int32Output, UInt16Output, UInt8Output, BoolOutput, BitmaskOutput>;

// Bytes of `cols` packed elements of type `output`: a row of the output, or the offset of
// column `cols` within one (a multiple of 8 for Bitmask).
template <class... Entries>
HPCML_HD inline std::size_t row_bytes_in(std::size_t cols, SimilarityOutput output, VariantTable<Entries...>*) {
    std::size_t bytes = cols;
    ((output == Entries::value
          ? (void)(bytes = ceil_div(cols, Entries::columns_per_element) * sizeof(typename Entries::Element))
          : (void)0),
     ...);
    return bytes;
}
HPCML_HD inline std::size_t row_bytes(std::size_t cols, SimilarityOutput output) {
    return row_bytes_in(cols, output, static_cast<Outputs*>(nullptr));
}

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
