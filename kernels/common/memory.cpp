#include "memory.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <limits>

namespace hpcml::detail {

std::size_t host_available_bytes() {
    // MemAvailable counts reclaimable page cache, unlike sysconf(_SC_AVPHYS_PAGES).
    if (std::FILE* file = std::fopen("/proc/meminfo", "r")) {
        char line[256];
        while (std::fgets(line, sizeof line, file)) {
            unsigned long long kib = 0;
            if (std::sscanf(line, "MemAvailable: %llu kB", &kib) == 1) {
                std::fclose(file);
                return static_cast<std::size_t>(kib) * 1024;
            }
        }
        std::fclose(file);
    }
    const long pages = sysconf(_SC_AVPHYS_PAGES);
    const long page_size = sysconf(_SC_PAGESIZE);
    if (pages > 0 && page_size > 0) return static_cast<std::size_t>(pages) * static_cast<std::size_t>(page_size);
    return std::numeric_limits<std::size_t>::max();
}

void ensure_host_fits(std::size_t bytes, const std::string& what) {
    const std::size_t available = host_available_bytes();
    if (bytes > available) {
        raise(ErrorKind::OutOfMemory, what + " needs " + format_bytes(bytes) + " of host memory; " +
                                          format_bytes(available) + " are available");
    }
}

}  // namespace hpcml::detail
