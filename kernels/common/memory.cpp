#include "memory.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>
#include <new>

namespace hpcml::detail {

void host_copy_rows(void* dst, std::size_t dst_stride, const void* src, std::size_t src_stride, std::size_t row_bytes,
                    std::size_t rows) {
    if (rows == 0 || row_bytes == 0) return;
    auto* d = static_cast<unsigned char*>(dst);
    const auto* s = static_cast<const unsigned char*>(src);
    // A thread per kMemory.copy_bytes_per_thread or more, each a range of the rows' bytes (whole
    // rows, or parts of a few long ones), as one memcpy per row it touches.
    const std::size_t total = row_bytes * rows;
    const auto pieces = static_cast<std::ptrdiff_t>(std::max<std::size_t>(total / kMemory.copy_bytes_per_thread, 1));
#pragma omp parallel for schedule(static) if (pieces > 1)
    for (std::ptrdiff_t k = 0; k < pieces; ++k) {
        const auto piece = static_cast<std::size_t>(k), count = static_cast<std::size_t>(pieces);
        const std::size_t end = total / count * (piece + 1) + total % count * (piece + 1) / count;
        for (std::size_t at = total / count * piece + total % count * piece / count; at < end;) {
            const std::size_t row = at / row_bytes, offset = at % row_bytes;
            const std::size_t n = std::min(row_bytes - offset, end - at);
            std::memcpy(d + row * dst_stride + offset, s + row * src_stride + offset, n);
            at += n;
        }
    }
}

namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kKeepHostBlocks = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kKeepHostBlocks = false;
#else
constexpr bool kKeepHostBlocks = true;
#endif
#else
constexpr bool kKeepHostBlocks = true;
#endif

constexpr std::align_val_t kHostAlignment{64};

// The kept blocks, one set per process, never destroyed (a call may come late, from a thread
// still running at exit).
struct HostCache {
    std::mutex mutex;
    std::multimap<std::size_t, void*> blocks;  // capacity -> block
    std::size_t bytes = 0;
};
HostCache& host_cache() {
    static HostCache* cache = new HostCache;
    return *cache;
}

bool kept(std::size_t bytes, HostBlock kind) {
    return kKeepHostBlocks && kind == HostBlock::Kept && bytes >= kMemory.smallest_kept_bytes;
}

}  // namespace

void* host_take(std::size_t bytes, std::size_t& capacity, HostBlock kind) noexcept {
    if (kept(bytes, kind)) {
        HostCache& c = host_cache();
        const std::lock_guard<std::mutex> lock(c.mutex);
        const auto found = c.blocks.lower_bound(bytes);
        if (found != c.blocks.end() && found->first / 2 <= bytes) {
            capacity = found->first;
            void* block = found->second;
            c.bytes -= capacity;
            c.blocks.erase(found);
            return block;
        }
        // A miss: the kept blocks too small for it are of a shape the calls have left behind.
        for (auto small = c.blocks.begin(); small != found; small = c.blocks.erase(small)) {
            ::operator delete(small->second, kHostAlignment);
            c.bytes -= small->first;
        }
    }
    capacity = bytes;
    if (bytes < kMemory.smallest_kept_bytes) return ::operator new(bytes, std::nothrow);  // malloc's own, as fast
    return ::operator new(bytes, kHostAlignment, std::nothrow);
}

void host_give(void* block, std::size_t capacity, HostBlock kind) noexcept {
    if (kept(capacity, kind)) {
        HostCache& c = host_cache();
        try {
            const std::lock_guard<std::mutex> lock(c.mutex);
            if (c.bytes + capacity <= kMemory.host_cache_bytes) {
                c.blocks.emplace(capacity, block);
                c.bytes += capacity;
                return;
            }
        } catch (...) {  // no memory to keep it: free it instead
        }
    }
    if (capacity < kMemory.smallest_kept_bytes) {
        ::operator delete(block);
    } else {
        ::operator delete(block, kHostAlignment);
    }
}

void release_host_cache() noexcept {
    HostCache& c = host_cache();
    const std::lock_guard<std::mutex> lock(c.mutex);
    for (const auto& [capacity, block] : c.blocks) ::operator delete(block, kHostAlignment);
    c.blocks.clear();
    c.bytes = 0;
}

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
