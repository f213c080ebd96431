// The similarity predicate and the output encodings, shared by every backend.
#pragma once

#include <cmath>
#include <cstdint>

#include "common/hd.hpp"

namespace hpcml::detail::similarity {

// |x - y| < t with the difference rounded to float32 once, as NumPy computes it. NaN (and
// inf - inf) compares false. Callers must not be compiled with fast math.
HPCML_HD inline bool within_threshold(float x, float y, float threshold) {
    return fabsf(x - y) < threshold;
}

// `all` is true when every one of `samples` samples passed (true for zero samples, as
// NumPy's empty all() is).
HPCML_HD inline std::uint8_t all_within(std::uint32_t count, std::uint32_t samples) {
    return count == samples ? 1 : 0;
}

}  // namespace hpcml::detail::similarity
