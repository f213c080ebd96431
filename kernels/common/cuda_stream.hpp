// Owned CUDA streams and events (created non-blocking / without timing, destroyed on scope exit).
#pragma once

#include <cuda_runtime.h>

#include "cuda_check.hpp"

namespace hpcml::detail {

class Stream {
public:
    Stream() { HPCML_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking)); }
    ~Stream() { (void)cudaStreamDestroy(stream_); }
    Stream(const Stream&) = delete;
    Stream& operator=(const Stream&) = delete;
    cudaStream_t get() const { return stream_; }

private:
    cudaStream_t stream_ = nullptr;
};

class Event {
public:
    Event() { HPCML_CUDA_CHECK(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming)); }
    ~Event() { (void)cudaEventDestroy(event_); }
    Event(const Event&) = delete;
    Event& operator=(const Event&) = delete;
    cudaEvent_t get() const { return event_; }

private:
    cudaEvent_t event_ = nullptr;
};

}  // namespace hpcml::detail
