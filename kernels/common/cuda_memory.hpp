// The tracked allocator's CUDA side: device memory (stream-ordered), pinned host memory, and a
// free-memory check for naive baselines that would otherwise exhaust the device.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <string>
#include <utility>

#include <hpcml/device.hpp>

#include "cuda_check.hpp"
#include "memory.hpp"

namespace hpcml::detail {

// Throws OutOfMemory ("`what` needs X of device memory, Y are free") unless `bytes` fit in the
// current device's free memory, less a small reserve for the runtime.
void ensure_device_fits(std::size_t bytes, const std::string& what);

// Whether `bytes` are at most 1 / `share` of the current device's free memory now: for what a
// call may keep on the device beside its other buffers and the caller's work.
bool within_free_device_memory(std::size_t bytes, std::size_t share);

// After an allocation of `bytes` failed with cudaErrorMemoryAllocation: clears it and throws
// OutOfMemory ("`what`: could not allocate X of device memory (Y free)").
[[noreturn]] void raise_device_out_of_memory(const std::string& what, std::size_t bytes);

// require_device_pointer: memory.hpp (declared for every build).

// cudaPointerGetAttributes with its error cleared (pageable host memory is a success, of type
// cudaMemoryTypeUnregistered): where each call that must know a pointer's memory asks.
cudaError_t query_pointer(const void* pointer, cudaPointerAttributes& attributes);
// Whether [data, data + bytes) is page-locked host memory the runtime knows (cudaHostAlloc,
// cudaHostRegister, a pinned torch tensor), at both ends, so that a buffer registered in part
// counts as pageable: a copy engine may read or write it directly.
bool page_locked(const void* data, std::size_t bytes);

// hpcml's stream-ordered memory pool on the current device. Unlike the default pool, which
// returns its memory to the driver at every synchronisation (so each call maps it again), it
// keeps up to 1 GiB reserved between calls; more than that goes back at the next
// synchronisation, so that a naive baseline's gigabytes are not withheld from other libraries.
cudaMemPool_t device_pool();

// Pinned host blocks outlive the calls that use them: cudaMallocHost is a slow driver call and
// cudaFreeHost synchronises the whole device. take() returns a block of at least `bytes`
// (its capacity in `capacity`), give() keeps it for the next call while the kept blocks total
// at most 512 MiB, and frees it otherwise.
void* pinned_take(std::size_t bytes, std::size_t& capacity);
void pinned_give(void* block, std::size_t capacity) noexcept;
// hpcml::release_cached_memory (device.hpp) frees both caches.

// `bytes` from host memory `src` to device memory `dst`, queued on `stream`. Page-locked memory
// and copies under 32 MiB go to cudaMemcpyAsync as they are; a large pageable source goes
// through two pinned 16 MiB chunks, each filled by several threads (host_copy_rows) while the
// other's copy runs, where the driver would stage it with one thread. Returns once `src` may
// change (the driver's rule for a pageable source), the last copies still queued on `stream`.
void upload_to_device(void* dst, const void* src, std::size_t bytes, cudaStream_t stream);

// For a process about to reset its devices (the test programs, so that compute-sanitizer's leak
// check sees only real leaks): frees both caches and destroys the pools and the cached streams
// and events (cuda_stream.hpp), which the next call would create afresh. Not for use while other threads may be in a
// call.
void destroy_device_pools() noexcept;

// cudaGetDeviceCount as the library's own code reaches it: a process holds one CUDA runtime when
// its other code reaches the same function (a test checks this of its own program).
const void* library_cuda_runtime_entry() noexcept;

// Makes `device` current for a scope and restores the previous device on exit.
class DeviceGuard {
public:
    explicit DeviceGuard(int device);
    ~DeviceGuard();
    DeviceGuard(const DeviceGuard&) = delete;
    DeviceGuard& operator=(const DeviceGuard&) = delete;

private:
    int previous_ = 0;
};

// A device array for the GPU tests (programs outside the library use the public DeviceMemory):
// uninitialised, cudaMalloc'd on the current device and freed on scope exit, every call checked
// (OutOfMemory naming `what` where it does not fit, an Error naming the CUDA call otherwise).
// The library's own temporaries are DeviceBuffers: tracked, and ordered on a stream.
template <class T>
class DeviceArray {
public:
    DeviceArray() = default;
    DeviceArray(std::size_t count, const std::string& what) : count_(count) {
        void* pointer = nullptr;
        const cudaError_t status =
            cudaMalloc(&pointer, std::max<std::size_t>(checked_mul(count, sizeof(T), what.c_str()), 1));
        if (status == cudaErrorMemoryAllocation) raise_device_out_of_memory(what, bytes());
        HPCML_CUDA_CHECK(status);
        data_ = static_cast<T*>(pointer);
    }
    // A copy of `count` host elements.
    DeviceArray(const T* host, std::size_t count, const std::string& what) : DeviceArray(count, what) { upload(host); }
    DeviceArray(DeviceArray&& other) noexcept
        : data_(std::exchange(other.data_, nullptr)), count_(std::exchange(other.count_, 0)) {}
    DeviceArray& operator=(DeviceArray&& other) noexcept {
        std::swap(data_, other.data_);
        std::swap(count_, other.count_);
        return *this;
    }
    DeviceArray(const DeviceArray&) = delete;
    DeviceArray& operator=(const DeviceArray&) = delete;
    ~DeviceArray() {
        if (data_) (void)cudaFree(data_);
    }

    void upload(const T* host) {
        if (count_) HPCML_CUDA_CHECK(cudaMemcpy(data_, host, bytes(), cudaMemcpyHostToDevice));
    }
    void download(T* host) const {
        if (count_) HPCML_CUDA_CHECK(cudaMemcpy(host, data_, bytes(), cudaMemcpyDeviceToHost));
    }
    T* data() const noexcept { return data_; }
    std::size_t size() const noexcept { return count_; }
    std::size_t bytes() const noexcept { return count_ * sizeof(T); }

private:
    T* data_ = nullptr;
    std::size_t count_ = 0;
};

// A tracked, uninitialised device array, allocated and freed in order on `stream`.
template <class T>
class DeviceBuffer {
public:
    DeviceBuffer() = default;
    DeviceBuffer(MemoryTracker& tracker, std::size_t count, cudaStream_t stream, const std::string& what)
        : tracker_(&tracker), count_(count), stream_(stream) {
        const std::size_t bytes = checked_mul(count, sizeof(T), what.c_str());
        if (bytes == 0) return;
        void* pointer = nullptr;
        const cudaError_t status = cudaMallocFromPoolAsync(&pointer, bytes, device_pool(), stream);
        if (status == cudaErrorMemoryAllocation) raise_device_out_of_memory(what, bytes);
        HPCML_CUDA_CHECK(status);
        data_ = static_cast<T*>(pointer);
        tracker_->allocated_device(bytes);
    }
    DeviceBuffer(DeviceBuffer&& other) noexcept { swap(other); }
    DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
        DeviceBuffer(std::move(other)).swap(*this);
        return *this;
    }
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;
    ~DeviceBuffer() {
        if (data_) {
            (void)cudaFreeAsync(data_, stream_);
            tracker_->freed_device(count_ * sizeof(T));
        }
    }

    T* data() noexcept { return data_; }
    const T* data() const noexcept { return data_; }
    std::size_t size() const noexcept { return count_; }
    std::size_t bytes() const noexcept { return count_ * sizeof(T); }

private:
    void swap(DeviceBuffer& other) noexcept {
        std::swap(tracker_, other.tracker_);
        std::swap(count_, other.count_);
        std::swap(stream_, other.stream_);
        std::swap(data_, other.data_);
    }
    MemoryTracker* tracker_ = nullptr;
    std::size_t count_ = 0;
    cudaStream_t stream_ = nullptr;
    T* data_ = nullptr;
};

// A tracked, uninitialised page-locked host array: the staging buffer for copies that overlap
// compute (pageable memory makes cudaMemcpyAsync synchronous), from the cache of pinned_take.
template <class T>
class PinnedBuffer {
public:
    PinnedBuffer() = default;
    PinnedBuffer(MemoryTracker& tracker, std::size_t count, const std::string& what)
        : tracker_(&tracker), count_(count) {
        const std::size_t bytes = checked_mul(count, sizeof(T), what.c_str());
        if (bytes == 0) return;
        try {
            data_ = static_cast<T*>(pinned_take(bytes, capacity_));
        } catch (const Error& e) {
            raise(e.kind(), what + ": " + e.what());
        }
        tracker_->allocated_host(bytes);
    }
    PinnedBuffer(PinnedBuffer&& other) noexcept { swap(other); }
    PinnedBuffer& operator=(PinnedBuffer&& other) noexcept {
        PinnedBuffer(std::move(other)).swap(*this);
        return *this;
    }
    PinnedBuffer(const PinnedBuffer&) = delete;
    PinnedBuffer& operator=(const PinnedBuffer&) = delete;
    ~PinnedBuffer() {
        if (data_) {
            pinned_give(data_, capacity_);
            tracker_->freed_host(count_ * sizeof(T));
        }
    }

    T* data() noexcept { return data_; }
    std::size_t size() const noexcept { return count_; }

private:
    void swap(PinnedBuffer& other) noexcept {
        std::swap(tracker_, other.tracker_);
        std::swap(count_, other.count_);
        std::swap(capacity_, other.capacity_);
        std::swap(data_, other.data_);
    }
    MemoryTracker* tracker_ = nullptr;
    std::size_t count_ = 0, capacity_ = 0;
    T* data_ = nullptr;
};

}  // namespace hpcml::detail
