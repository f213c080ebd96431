// Internal helpers for raising hpcml::Error with readable messages.
#pragma once

#include <hpcml/core.hpp>

#include <cstddef>
#include <initializer_list>
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

// The value of `values` whose to_string is `text`, or InvalidArgument naming `argument`:
// "--mode: expected count or all, got 'x'".
template <class Enum>
Enum parse_named(std::string_view text, std::string_view argument, std::initializer_list<Enum> values) {
    std::string expected;
    std::size_t i = 0;
    for (Enum value : values) {
        if (text == to_string(value)) return value;
        expected += (i == 0 ? "" : i + 1 == values.size() ? " or " : ", ");
        expected += to_string(value);
        ++i;
    }
    raise(ErrorKind::InvalidArgument,
          std::string(argument) + ": expected " + expected + ", got '" + std::string(text) + "'");
}

}  // namespace hpcml::detail
