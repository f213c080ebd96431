// Internal helpers for raising hpcml::Error with readable messages.
#pragma once

#include <hpcml/core.hpp>

#include <cstddef>
#include <string>
#include <string_view>

namespace hpcml::detail {

[[noreturn]] void raise(ErrorKind kind, const std::string& message);

// Throws InvalidArgument with `message` unless `condition` holds.
inline void require(bool condition, const std::string& message) {
    if (!condition) raise(ErrorKind::InvalidArgument, message);
}

// "7.63 GB (7629394944 bytes)": decimal units, as memory is quoted in the README.
std::string format_bytes(std::size_t bytes);

// a * b, or InvalidArgument naming `what` when the product overflows size_t.
std::size_t checked_mul(std::size_t a, std::size_t b, const char* what);

}  // namespace hpcml::detail
