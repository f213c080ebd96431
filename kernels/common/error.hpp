// Internal helpers for raising hpcml::Error with readable messages.
#pragma once

#include <hpcml/core.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace hpcml::detail {

[[noreturn]] void raise(ErrorKind kind, const std::string& message);

// Throws InvalidArgument with `message` unless `condition` holds.
inline void require(bool condition, const std::string& message) {
    if (!condition) raise(ErrorKind::InvalidArgument, message);
}

// Throws InvalidArgument naming `what` unless `pointer` is aligned for its elements
// (`alignment` bytes). The device entry points check their pointers with it before any CUDA call:
// a misaligned access in a kernel is cudaErrorMisalignedAddress, which is sticky (every later
// CUDA call in the process fails, torch's included).
inline void require_aligned(const void* pointer, std::size_t alignment, const std::string& what) {
    const auto offset = reinterpret_cast<std::uintptr_t>(pointer) % alignment;
    if (offset != 0)
        raise(ErrorKind::InvalidArgument, what + ": its elements need " + std::to_string(alignment) +
                                              "-byte alignment, but the pointer is " + std::to_string(offset) +
                                              " bytes past a multiple of " + std::to_string(alignment));
}
template <class T>
void require_aligned(const T* pointer, const std::string& what) {
    require_aligned(pointer, alignof(T), what);
}

// "7.63 GB (7629394944 bytes)": decimal units, as memory is quoted in the README.
std::string format_bytes(std::size_t bytes);

// a * b, or InvalidArgument naming `what` when the product overflows size_t.
std::size_t checked_mul(std::size_t a, std::size_t b, const char* what);

}  // namespace hpcml::detail
