// CUDA-side helpers of the common layer (built only with the CUDA backend).
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "cuda_check.hpp"
#include "cuda_memory.hpp"

namespace hpcml::detail {

void raise_cuda(cudaError_t status, const char* call, const char* file, int line) {
    const ErrorKind kind = status == cudaErrorMemoryAllocation ? ErrorKind::OutOfMemory : ErrorKind::Cuda;
    raise(kind, std::string(call) + " failed: " + cudaGetErrorName(status) + " (" +
                    cudaGetErrorString(status) + ") at " + file + ":" + std::to_string(line));
}

void ensure_device_fits(std::size_t bytes, const std::string& what) {
    std::size_t free_bytes = 0, total_bytes = 0;
    HPCML_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    // Leave room for the runtime, cuBLAS workspaces and the allocator's granularity.
    const std::size_t reserve = std::size_t{256} << 20;
    const std::size_t usable = free_bytes > reserve ? free_bytes - reserve : 0;
    if (bytes > usable) {
        raise(ErrorKind::OutOfMemory, what + " needs " + format_bytes(bytes) + " of device memory; " +
                                          format_bytes(free_bytes) + " are free");
    }
}

cudaMemPool_t device_pool() {
    static std::mutex mutex;
    static std::map<int, cudaMemPool_t> pools;  // never destroyed: the driver may be gone at exit
    int device = 0;
    HPCML_CUDA_CHECK(cudaGetDevice(&device));
    const std::lock_guard<std::mutex> lock(mutex);
    if (const auto found = pools.find(device); found != pools.end()) return found->second;
    cudaMemPoolProps props{};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = device;
    cudaMemPool_t pool = nullptr;
    HPCML_CUDA_CHECK(cudaMemPoolCreate(&pool, &props));
    std::uint64_t threshold = std::uint64_t{1} << 30;
    HPCML_CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
    pools[device] = pool;
    return pool;
}

namespace {
struct PinnedCache {
    std::mutex mutex;
    std::multimap<std::size_t, void*> blocks;  // capacity -> block
    std::size_t bytes = 0;
};
PinnedCache& pinned_cache() {
    static PinnedCache* cache = new PinnedCache;  // never destroyed: blocks outlive static destructors
    return *cache;
}
constexpr std::size_t kPinnedCacheBytes = std::size_t{512} << 20;
}  // namespace

void* pinned_take(std::size_t bytes, std::size_t& capacity) {
    PinnedCache& cache = pinned_cache();
    {
        const std::lock_guard<std::mutex> lock(cache.mutex);
        if (const auto found = cache.blocks.lower_bound(bytes); found != cache.blocks.end()) {
            capacity = found->first;
            void* block = found->second;
            cache.bytes -= capacity;
            cache.blocks.erase(found);
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
    PinnedCache& cache = pinned_cache();
    {
        const std::lock_guard<std::mutex> lock(cache.mutex);
        if (cache.bytes + capacity <= kPinnedCacheBytes) {
            cache.blocks.emplace(capacity, block);
            cache.bytes += capacity;
            return;
        }
    }
    (void)cudaFreeHost(block);
}

void require_device_pointer(const void* pointer, int device, const std::string& what) {
    if (!pointer) return;
    cudaPointerAttributes attributes{};
    const cudaError_t status = cudaPointerGetAttributes(&attributes, pointer);
    if (status != cudaSuccess) {
        (void)cudaGetLastError();
        raise(ErrorKind::InvalidArgument, what + ": not a pointer CUDA knows (" + cudaGetErrorName(status) + ")");
    }
    switch (attributes.type) {
        case cudaMemoryTypeDevice:
            if (attributes.device != device)
                raise(ErrorKind::InvalidArgument, what + ": device memory of device " + std::to_string(attributes.device) +
                                                      ", but the call runs on device " + std::to_string(device));
            return;
        case cudaMemoryTypeManaged: return;
        case cudaMemoryTypeHost:
            if (attributes.devicePointer) return;  // mapped pinned memory
            [[fallthrough]];
        default:
            raise(ErrorKind::InvalidArgument, what + ": a host pointer where device memory is needed (use the host "
                                                     "entry point, or copy the data to the device first)");
    }
}

DeviceGuard::DeviceGuard(int device) {
    HPCML_CUDA_CHECK(cudaGetDevice(&previous_));
    if (device != previous_) HPCML_CUDA_CHECK(cudaSetDevice(device));
}

DeviceGuard::~DeviceGuard() { (void)cudaSetDevice(previous_); }

}  // namespace hpcml::detail
