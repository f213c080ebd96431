// libFuzzer target: hpcml-similarity's .npy reader on arbitrary bytes. It must return a matrix
// whose size matches its shape, or throw hpcml::Error; never crash, hang or over-allocate.
#include <hpcml/core.hpp>

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <string>

#include "similarity/npy.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static const int fd = memfd_create("fuzz.npy", 0);
    if (ftruncate(fd, 0) != 0 || pwrite(fd, data, size, 0) != static_cast<ssize_t>(size)) std::abort();
    try {
        const hpcml::tools::Matrix m = hpcml::tools::read_npy("/proc/self/fd/" + std::to_string(fd), "INPUT.npy");
        if (m.data.size() != m.rows * m.cols) std::abort();
    } catch (const hpcml::Error& e) {
        if (e.kind() != hpcml::ErrorKind::InvalidArgument) std::abort();
    }
    return 0;
}
