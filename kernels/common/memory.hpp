// The tracked allocator's host side. Every temporary a kernel family allocates goes through a
// MemoryTracker owned by the call, so that the call can report its peak bytes (MemoryStats).
#pragma once

#include <hpcml/core.hpp>

#include <atomic>
#include <cstddef>
#include <string>
#include <type_traits>
#include <utility>

#include "error.hpp"

namespace hpcml::detail {

// Throws InvalidArgument naming `what` unless `pointer` is memory a kernel on `device` may
// read or write: device memory of that device, managed memory, or mapped pinned host memory.
// A plain host pointer would fault inside a kernel and leave the context unusable (for every
// library sharing it, torch included); a null pointer passes (sizes decide whether it is read).
// (CUDA side: cuda_support.cpp; a build without CUDA never reaches it, no_cuda.cpp.)
void require_device_pointer(const void* pointer, int device, const std::string& what);
// An output the device API may fill: memory of `device`, managed memory, or host memory (pageable
// or page-locked: the call copies the result there); device memory of another device is refused.
void require_output_pointer(const void* pointer, int device, const std::string& what);

// The CUDA calls behind the public DeviceMemory, DeviceMatrix and StreamTimer
// (hpcml/device_memory.hpp, common/device_memory.cpp), each checked and raising an Error that
// names `what`: cuda_support.cpp, or no_cuda.cpp (NoDevice) in a build without CUDA.
void* device_allocate(std::size_t bytes, int device, const std::string& what);  // zeroed
void device_free(void* pointer) noexcept;
// Host to device or device to host (either way: the pointers say which), waiting for the copy.
void device_copy(void* destination, const void* source, std::size_t bytes, const std::string& what);
// `rows` rows of `row_bytes` from host memory, `source_pitch` bytes apart, to device memory
// `destination_pitch` bytes apart.
void device_copy_rows(void* destination, std::size_t destination_pitch, const void* source, std::size_t source_pitch,
                      std::size_t row_bytes, std::size_t rows, const std::string& what);
void* event_create(int device);
void event_destroy(void* event) noexcept;
void event_record(void* event, void* stream);
double event_seconds(void* start, void* stop);  // waits for `stop`

class MemoryTracker {
public:
    void allocated_device(std::size_t bytes) noexcept { add(device_now_, device_peak_, bytes); }
    void freed_device(std::size_t bytes) noexcept { device_now_ -= bytes; }
    void allocated_host(std::size_t bytes) noexcept { add(host_now_, host_peak_, bytes); }
    void freed_host(std::size_t bytes) noexcept { host_now_ -= bytes; }

    MemoryStats stats() const noexcept { return {device_peak_.load(), host_peak_.load()}; }

private:
    static void add(std::atomic<std::size_t>& now, std::atomic<std::size_t>& peak, std::size_t bytes) noexcept {
        const std::size_t value = now += bytes;
        std::size_t old_peak = peak.load();
        while (value > old_peak && !peak.compare_exchange_weak(old_peak, value)) {}
    }
    std::atomic<std::size_t> device_now_{0}, device_peak_{0}, host_now_{0}, host_peak_{0};
};

// rows of row_bytes from src (rows src_stride bytes apart) to dst (dst_stride apart), by several
// threads where there are megabytes to copy: one thread's memcpy reaches a fraction of the
// memory bandwidth, and a GPU result staged in pinned memory must reach the caller's pageable
// buffer at the host link's rate (the CUDA host path's copy-out).
void host_copy_rows(void* dst, std::size_t dst_stride, const void* src, std::size_t src_stride, std::size_t row_bytes,
                    std::size_t rows);
inline void host_copy(void* dst, const void* src, std::size_t bytes) {
    host_copy_rows(dst, bytes, src, bytes, bytes, 1);
}

// Physical memory the kernel reports available (MemAvailable), in bytes.
std::size_t host_available_bytes();

// Throws OutOfMemory ("`what` needs X of host memory, Y are available") unless `bytes` fit in
// available host memory. Linux overcommits, so malloc alone would succeed and the process be
// killed later; naive baselines call this before materialising their intermediates.
void ensure_host_fits(std::size_t bytes, const std::string& what);

// Host blocks for HostBuffer, kept between calls (64-byte aligned; smaller than
// kMemory.smallest_kept_bytes, malloc's alignment): a freed block of at least
// kMemory.smallest_kept_bytes (smaller ones are malloc's, which keeps them per thread at less cost than a
// shared cache; a batch of small games allocates millions) and up to kMemory.host_cache_bytes in all
// serves the next request it fits, at most twice its size, so that a
// call made block after block (hpcml-similarity's) reuses its pages instead of mapping and
// faulting them in again. take() returns a block of at least `bytes` and its capacity (null where
// the memory is not there); give() keeps or frees it; release_host_cache() frees every kept block
// (release_cached_memory calls it). Builds with AddressSanitizer keep nothing, so that a use
// after free is still caught. A Fresh block is allocated and freed each time, as NumPy's arrays
// are: the naive baselines' intermediates.
//
// The caches' and copies' tuning, every family's (as CUB's tuning policies): it changes speed and
// memory, never results; Zen 4 is the AMD EPYC machine of bench/results/, 2 cores.
struct MemoryPolicy {
    std::size_t host_cache_bytes;       // host blocks kept in all
    std::size_t smallest_kept_bytes;    // host blocks below it go to malloc, unkept
    std::size_t copy_bytes_per_thread;  // host_copy_rows: a thread per this many bytes
    std::size_t pinned_cache_bytes;     // pinned blocks kept in all (cuda_support.cpp)
    std::size_t cached_per_device;      // streams, and events, kept per device
    std::size_t staged_upload_from;     // upload_to_device stages pageable sources from this size
    std::size_t upload_chunk_bytes;     // its pinned chunks, two in flight
};
inline constexpr MemoryPolicy kMemory{
    .host_cache_bytes =
        std::size_t{64} << 20,  // real case 256 x 270725: 65.4 s, 1.08 GB; 1 GiB 67.1 s, 1.29 GB (Zen 4)
    .smallest_kept_bytes = std::size_t{64} << 10,  // keeping every block cost 1.08x on 1e5 games of 3 x 3 (831aa4b)
    .copy_bytes_per_thread = std::size_t{1}
                             << 20,  // one thread took 2.17 ms against 0.16 of kernels (H200); threads untimed
    .pinned_cache_bytes = std::size_t{512} << 20,  // pinned allocation is slow, its free synchronises: not timed
    .cached_per_device = 16,                       // not timed
    .staged_upload_from = std::size_t{32} << 20,   // not timed yet (docs/regret.md)
    .upload_chunk_bytes = std::size_t{16} << 20,   // not timed yet (docs/regret.md)
};
enum class HostBlock { Kept, Fresh };
void* host_take(std::size_t bytes, std::size_t& capacity, HostBlock kind) noexcept;
void host_give(void* block, std::size_t capacity, HostBlock kind) noexcept;
void release_host_cache() noexcept;

// A tracked, uninitialised host array of trivially copyable T (host_take's blocks).
template <class T>
class HostBuffer {
    static_assert(std::is_trivially_copyable_v<T> && alignof(T) <= alignof(std::max_align_t));

public:
    HostBuffer() = default;
    HostBuffer(MemoryTracker& tracker, std::size_t count, const std::string& what, HostBlock kind = HostBlock::Kept)
        : tracker_(&tracker), count_(count), kind_(kind) {
        const std::size_t bytes = checked_mul(count, sizeof(T), what.c_str());
        if (bytes == 0) return;
        data_ = static_cast<T*>(host_take(bytes, capacity_, kind));
        if (!data_) {
            raise(ErrorKind::OutOfMemory, what + ": could not allocate " + format_bytes(bytes) + " of host memory");
        }
        tracker_->allocated_host(bytes);
    }
    HostBuffer(HostBuffer&& other) noexcept
        : tracker_(other.tracker_),
          count_(std::exchange(other.count_, 0)),
          capacity_(std::exchange(other.capacity_, 0)),
          kind_(other.kind_),
          data_(std::exchange(other.data_, nullptr)) {}
    HostBuffer& operator=(HostBuffer&& other) noexcept {
        release();
        tracker_ = other.tracker_;
        kind_ = other.kind_;
        count_ = std::exchange(other.count_, 0);
        capacity_ = std::exchange(other.capacity_, 0);
        data_ = std::exchange(other.data_, nullptr);
        return *this;
    }
    HostBuffer(const HostBuffer&) = delete;
    HostBuffer& operator=(const HostBuffer&) = delete;
    ~HostBuffer() { release(); }

    T* data() noexcept { return data_; }
    const T* data() const noexcept { return data_; }
    std::size_t size() const noexcept { return count_; }
    T& operator[](std::size_t i) noexcept { return data_[i]; }
    const T& operator[](std::size_t i) const noexcept { return data_[i]; }

private:
    void release() noexcept {
        if (!data_) return;
        tracker_->freed_host(count_ * sizeof(T));
        host_give(data_, capacity_, kind_);
        data_ = nullptr;
    }
    MemoryTracker* tracker_ = nullptr;
    std::size_t count_ = 0, capacity_ = 0;
    HostBlock kind_ = HostBlock::Kept;
    T* data_ = nullptr;
};

}  // namespace hpcml::detail
