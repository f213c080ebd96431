// CUDA-side helpers of the common layer (built only with the CUDA backend).
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "cuda_check.hpp"
#include "cuda_memory.hpp"
#include "hd.hpp"
#include "cuda_stream.hpp"
#include "pipeline.hpp"

namespace hpcml::detail {

void raise_cuda(cudaError_t status, const char* call, const char* file, int line) {
    const ErrorKind kind = status == cudaErrorMemoryAllocation ? ErrorKind::OutOfMemory : ErrorKind::Cuda;
    raise(kind, std::string(call) + " failed: " + cudaGetErrorName(status) + " (" + cudaGetErrorString(status) +
                    ") at " + file + ":" + std::to_string(line));
}

std::size_t resident_blocks(const void* kernel, int threads, std::size_t shared_bytes) {
    int device = 0;
    HPCML_CUDA_CHECK(cudaGetDevice(&device));
    using Key = std::tuple<int, const void*, int, std::size_t>;
    struct Cache {
        std::mutex mutex;
        std::map<Key, std::size_t> blocks;
    };
    static Cache* const cache = new Cache;  // never destroyed, as caches() below
    const Key key{device, kernel, threads, shared_bytes};
    const std::lock_guard<std::mutex> lock(cache->mutex);
    if (const auto it = cache->blocks.find(key); it != cache->blocks.end()) return it->second;
    int per_sm = 0, sms = 0;
    HPCML_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, shared_bytes));
    HPCML_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    const std::size_t blocks = static_cast<std::size_t>(per_sm) * static_cast<std::size_t>(sms);
    cache->blocks.emplace(key, blocks);
    return blocks;
}

void raise_device_out_of_memory(const std::string& what, std::size_t bytes) {
    (void)cudaGetLastError();
    std::size_t free_bytes = 0, total_bytes = 0;
    (void)cudaMemGetInfo(&free_bytes, &total_bytes);
    raise(ErrorKind::OutOfMemory, what + ": could not allocate " + format_bytes(bytes) + " of device memory (" +
                                      format_bytes(free_bytes) + " free)");
}

bool within_free_device_memory(std::size_t bytes, std::size_t share) {
    std::size_t free_bytes = 0, total_bytes = 0;
    HPCML_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    return bytes <= free_bytes / share;
}

void ensure_device_fits(std::size_t bytes, const std::string& what) {
    std::size_t free_bytes = 0, total_bytes = 0;
    HPCML_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    // What hpcml's own pool holds reserved but unused is free to hpcml too.
    std::uint64_t reserved = 0, used = 0;
    const cudaMemPool_t pool = device_pool();
    HPCML_CUDA_CHECK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &reserved));
    HPCML_CUDA_CHECK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used));
    if (reserved > used) free_bytes += static_cast<std::size_t>(reserved - used);
    // Leave room for the runtime, cuBLAS workspaces and the allocator's granularity.
    const std::size_t reserve = std::size_t{256} << 20;
    const std::size_t usable = free_bytes > reserve ? free_bytes - reserve : 0;
    if (bytes > usable) {
        raise(ErrorKind::OutOfMemory,
              what + " needs " + format_bytes(bytes) + " of device memory; " + format_bytes(free_bytes) + " are free");
    }
}

namespace {

// hpcml's pools and pinned blocks, one set per process. Never destroyed (a call may come late,
// from a thread still running at exit); what they hold is handed back at exit by
// release_cached_memory, which runs before the CUDA runtime's own teardown.
struct Caches {
    std::mutex mutex;
    std::map<int, cudaMemPool_t> pools;
    std::multimap<std::size_t, void*> pinned;  // capacity -> block
    std::size_t pinned_bytes = 0;
    std::map<int, std::vector<cudaStream_t>> streams;  // by device (cuda_stream.hpp)
    std::map<int, std::vector<cudaEvent_t>> events;
};
Caches& caches() {
    static Caches* all = [] {
        std::atexit([] { ::hpcml::release_cached_memory(); });
        return new Caches;
    }();
    return *all;
}

// A handle of `device` from `cache`, or a new one made by `make`.
template <class Handle, class Make>
Handle take_cached(std::map<int, std::vector<Handle>>& cache, int device, Make make) {
    {
        Caches& c = caches();
        const std::lock_guard<std::mutex> lock(c.mutex);
        std::vector<Handle>& kept = cache[device];
        if (!kept.empty()) {
            const Handle handle = kept.back();
            kept.pop_back();
            return handle;
        }
    }
    Handle handle = nullptr;
    HPCML_CUDA_CHECK(make(&handle));
    return handle;
}

template <class Handle, class Destroy>
void give_cached(std::map<int, std::vector<Handle>>& cache, int device, Handle handle, Destroy destroy) noexcept {
    try {
        Caches& c = caches();
        const std::lock_guard<std::mutex> lock(c.mutex);
        std::vector<Handle>& kept = cache[device];
        if (kept.size() < kMemory.cached_per_device) {
            kept.push_back(handle);
            return;
        }
    } catch (...) {  // no memory to keep it: destroy it instead
    }
    (void)destroy(handle);
}

}  // namespace

cudaStream_t stream_take(int device) {
    return take_cached(caches().streams, device,
                       [](cudaStream_t* s) { return cudaStreamCreateWithFlags(s, cudaStreamNonBlocking); });
}
void stream_give(int device, cudaStream_t stream) noexcept {
    give_cached(caches().streams, device, stream, cudaStreamDestroy);
}
cudaEvent_t event_take(int device) {
    return take_cached(caches().events, device,
                       [](cudaEvent_t* e) { return cudaEventCreateWithFlags(e, cudaEventDisableTiming); });
}
void event_give(int device, cudaEvent_t event) noexcept {
    give_cached(caches().events, device, event, cudaEventDestroy);
}

cudaMemPool_t device_pool() {
    int device = 0;
    HPCML_CUDA_CHECK(cudaGetDevice(&device));
    Caches& c = caches();
    const std::lock_guard<std::mutex> lock(c.mutex);
    if (const auto found = c.pools.find(device); found != c.pools.end()) return found->second;
    cudaMemPoolProps props{};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = device;
    cudaMemPool_t pool = nullptr;
    HPCML_CUDA_CHECK(cudaMemPoolCreate(&pool, &props));
    std::uint64_t threshold = std::uint64_t{1} << 30;
    HPCML_CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
    c.pools[device] = pool;
    return pool;
}

void* pinned_take(std::size_t bytes, std::size_t& capacity) {
    Caches& c = caches();
    {
        const std::lock_guard<std::mutex> lock(c.mutex);
        if (const auto found = c.pinned.lower_bound(bytes); found != c.pinned.end()) {
            capacity = found->first;
            void* block = found->second;
            c.pinned_bytes -= capacity;
            c.pinned.erase(found);
            return block;
        }
    }
    void* block = nullptr;
    const cudaError_t status = cudaMallocHost(&block, bytes);
    if (status == cudaErrorMemoryAllocation) {
        (void)cudaGetLastError();
        raise(ErrorKind::OutOfMemory, "could not allocate " + format_bytes(bytes) + " of pinned host memory");
    }
    HPCML_CUDA_CHECK(status);
    capacity = bytes;
    return block;
}

void pinned_give(void* block, std::size_t capacity) noexcept {
    Caches& c = caches();
    try {
        const std::lock_guard<std::mutex> lock(c.mutex);
        if (c.pinned_bytes + capacity <= kMemory.pinned_cache_bytes) {
            c.pinned.emplace(capacity, block);
            c.pinned_bytes += capacity;
            return;
        }
    } catch (...) {  // no memory to keep it: free it instead
    }
    (void)cudaFreeHost(block);
}

void upload_to_device(void* dst, const void* src, std::size_t bytes, cudaStream_t stream) {
    constexpr std::size_t kStagedFrom = kMemory.staged_upload_from, kChunk = kMemory.upload_chunk_bytes;
    cudaPointerAttributes attributes;
    const bool pageable = query_pointer(src, attributes) != cudaSuccess ||
                          attributes.type == cudaMemoryTypeUnregistered ||
                          (attributes.type == cudaMemoryTypeHost && !page_locked(src, bytes));  // pinned in part
    if (bytes < kStagedFrom || !pageable) {
        HPCML_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream));
        return;
    }
    const int device = current_device();
    struct Slot {
        void* block = nullptr;
        std::size_t capacity = 0;
        cudaEvent_t copied = nullptr;
    };
    std::array<Slot, 2> slots;
    // On every exit: the copies out of the chunks finish before the chunks go back.
    struct Release {
        std::array<Slot, 2>& slots;
        int device;
        ~Release() {
            for (Slot& s : slots) {
                if (s.copied) {
                    (void)cudaEventSynchronize(s.copied);
                    event_give(device, s.copied);
                }
                if (s.block) pinned_give(s.block, s.capacity);
            }
        }
    } release{slots, device};
    for (Slot& s : slots) {
        s.block = pinned_take(kChunk, s.capacity);
        s.copied = event_take(device);
    }
    const auto* from = static_cast<const unsigned char*>(src);
    auto* to = static_cast<unsigned char*>(dst);
    two_slot_pipeline(
        ceil_div(bytes, kChunk),
        [&](std::size_t k, int slot) {  // chunk k into pinned memory by several threads, then on its way
            const std::size_t at = k * kChunk, n = std::min(kChunk, bytes - at);
            host_copy(slots[slot].block, from + at, n);
            HPCML_CUDA_CHECK(cudaMemcpyAsync(to + at, slots[slot].block, n, cudaMemcpyHostToDevice, stream));
            HPCML_CUDA_CHECK(cudaEventRecord(slots[slot].copied, stream));
        },
        [&](std::size_t, int slot) { HPCML_CUDA_CHECK(cudaEventSynchronize(slots[slot].copied)); });
}

cudaError_t query_pointer(const void* pointer, cudaPointerAttributes& attributes) {
    attributes = {};
    const cudaError_t status = cudaPointerGetAttributes(&attributes, pointer);
    if (status != cudaSuccess) (void)cudaGetLastError();
    return status;
}

bool page_locked(const void* data, std::size_t bytes) {
    if (bytes == 0) return false;
    for (const void* at : {data, static_cast<const void*>(static_cast<const unsigned char*>(data) + bytes - 1)}) {
        cudaPointerAttributes attributes;
        if (query_pointer(at, attributes) != cudaSuccess || attributes.type != cudaMemoryTypeHost) return false;
    }
    return true;
}

void require_device_pointer(const void* pointer, int device, const std::string& what) {
    if (!pointer) return;
    cudaPointerAttributes attributes;
    const cudaError_t status = query_pointer(pointer, attributes);
    if (status != cudaSuccess) {
        raise(ErrorKind::InvalidArgument, what + ": not a pointer CUDA knows (" + cudaGetErrorName(status) + ")");
    }
    switch (attributes.type) {
        case cudaMemoryTypeDevice:
            if (attributes.device != device)
                raise(ErrorKind::InvalidArgument, what + ": device memory of device " +
                                                      std::to_string(attributes.device) +
                                                      ", but the call runs on device " + std::to_string(device));
            return;
        case cudaMemoryTypeManaged:
            return;
        case cudaMemoryTypeHost:
            if (attributes.devicePointer) return;  // mapped pinned memory
            [[fallthrough]];
        default:
            raise(ErrorKind::InvalidArgument, what +
                                                  ": a host pointer where device memory is needed (use the host "
                                                  "entry point, or copy the data to the device first)");
    }
}

void require_output_pointer(const void* pointer, int device, const std::string& what) {
    if (!pointer) return;
    cudaPointerAttributes attributes;
    const cudaError_t status = query_pointer(pointer, attributes);
    if (status != cudaSuccess) {  // pageable memory is cudaMemoryTypeUnregistered, not an error
        raise(ErrorKind::InvalidArgument, what + ": not a pointer CUDA can place (" + cudaGetErrorName(status) + ")");
    }
    if (attributes.type == cudaMemoryTypeDevice) require_device_pointer(pointer, device, what);
}

DeviceGuard::DeviceGuard(int device) {
    HPCML_CUDA_CHECK(cudaGetDevice(&previous_));
    if (device != previous_) HPCML_CUDA_CHECK(cudaSetDevice(device));
}

DeviceGuard::~DeviceGuard() { (void)cudaSetDevice(previous_); }

void* device_allocate(std::size_t bytes, int device, const std::string& what) {
    const DeviceGuard guard(device);
    void* pointer = nullptr;
    const cudaError_t status = cudaMalloc(&pointer, std::max<std::size_t>(bytes, 1));
    if (status == cudaErrorMemoryAllocation) raise_device_out_of_memory(what, bytes);
    HPCML_CUDA_CHECK(status);
    const cudaError_t cleared = cudaMemset(pointer, 0, bytes);
    if (cleared != cudaSuccess) {
        (void)cudaFree(pointer);
        raise_cuda(cleared, ("cudaMemset of " + what).c_str(), __FILE__, __LINE__);
    }
    return pointer;
}

void device_free(void* pointer) noexcept {
    if (pointer) (void)cudaFree(pointer);
}

void device_copy(void* destination, const void* source, std::size_t bytes, const std::string& what) {
    if (bytes == 0) return;
    const cudaError_t status = cudaMemcpy(destination, source, bytes, cudaMemcpyDefault);
    if (status != cudaSuccess) raise_cuda(status, ("cudaMemcpy of " + what).c_str(), __FILE__, __LINE__);
}

void device_copy_rows(void* destination, std::size_t destination_pitch, const void* source, std::size_t source_pitch,
                      std::size_t row_bytes, std::size_t rows, const std::string& what) {
    if (row_bytes == 0 || rows == 0) return;
    const cudaError_t status =
        cudaMemcpy2D(destination, destination_pitch, source, source_pitch, row_bytes, rows, cudaMemcpyHostToDevice);
    if (status != cudaSuccess) raise_cuda(status, ("cudaMemcpy2D of " + what).c_str(), __FILE__, __LINE__);
}

void* event_create(int device) {
    const DeviceGuard guard(device);
    cudaEvent_t event = nullptr;
    HPCML_CUDA_CHECK(cudaEventCreate(&event));
    return event;
}

void event_destroy(void* event) noexcept {
    if (event) (void)cudaEventDestroy(static_cast<cudaEvent_t>(event));
}

void event_record(void* event, void* stream) {
    HPCML_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(event), static_cast<cudaStream_t>(stream)));
}

double event_seconds(void* start, void* stop) {
    HPCML_CUDA_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(stop)));
    float milliseconds = 0.0f;
    HPCML_CUDA_CHECK(
        cudaEventElapsedTime(&milliseconds, static_cast<cudaEvent_t>(start), static_cast<cudaEvent_t>(stop)));
    return milliseconds / 1e3;
}

const void* library_cuda_runtime_entry() noexcept { return reinterpret_cast<const void*>(&cudaGetDeviceCount); }

void destroy_device_pools() noexcept {
    ::hpcml::release_cached_memory();
    Caches& c = caches();
    const std::lock_guard<std::mutex> lock(c.mutex);
    for (const auto& [device, pool] : c.pools) (void)cudaMemPoolDestroy(pool);
    c.pools.clear();
    // Streams and events die with their devices' contexts (the tests reset the devices next).
    for (const auto& [device, kept] : c.streams)
        for (const cudaStream_t stream : kept) (void)cudaStreamDestroy(stream);
    for (const auto& [device, kept] : c.events)
        for (const cudaEvent_t event : kept) (void)cudaEventDestroy(event);
    c.streams.clear();
    c.events.clear();
    (void)cudaGetLastError();
}

}  // namespace hpcml::detail

namespace hpcml {

void release_cached_memory() noexcept {
    detail::release_host_cache();
    detail::Caches& c = detail::caches();
    const std::lock_guard<std::mutex> lock(c.mutex);
    for (const auto& [capacity, block] : c.pinned) (void)cudaFreeHost(block);
    c.pinned.clear();
    c.pinned_bytes = 0;
    for (const auto& [device, pool] : c.pools) (void)cudaMemPoolTrimTo(pool, 0);
    (void)cudaGetLastError();
}

}  // namespace hpcml
