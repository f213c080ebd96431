// A stream left busy on purpose (CUDA builds only): a call that claims to run on the stream
// but does not wait for it reads stale data, and the test comparing its result fails.
#pragma once

#include <cuda_runtime.h>

#include <chrono>
#include <cstddef>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>

namespace hpcml_test {

// Fills `device` with 0xFF bytes (NaN as floats) at once, then queues on `stream` a 200 ms
// wait followed by the upload of `host`: only work ordered after it on `stream` sees `host`.
class LateUpload {
public:
    LateUpload(cudaStream_t stream, void* device, const void* host, std::size_t bytes) : stream_(stream) {
        void* pinned = nullptr;
        check(cudaMallocHost(&pinned, bytes));  // pageable memory would make the copy synchronous
        pinned_.reset(pinned);
        std::memcpy(pinned, host, bytes);
        check(cudaMemsetAsync(device, 0xFF, bytes, stream));
        check(cudaStreamSynchronize(stream));  // the stale bytes are in place before the wait
        check(cudaLaunchHostFunc(
            stream, [](void*) { std::this_thread::sleep_for(std::chrono::milliseconds(200)); }, nullptr));
        check(cudaMemcpyAsync(device, pinned, bytes, cudaMemcpyHostToDevice, stream));
    }
    ~LateUpload() { (void)cudaStreamSynchronize(stream_); }  // before the pinned block is freed
    LateUpload(const LateUpload&) = delete;
    LateUpload& operator=(const LateUpload&) = delete;

private:
    static void check(cudaError_t e) {
        if (e != cudaSuccess) throw std::runtime_error(std::string("LateUpload: ") + cudaGetErrorString(e));
    }
    struct FreeHost {
        void operator()(void* p) const { (void)cudaFreeHost(p); }
    };
    cudaStream_t stream_;
    std::unique_ptr<void, FreeHost> pinned_;
};

}  // namespace hpcml_test
