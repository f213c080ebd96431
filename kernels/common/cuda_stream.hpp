// CUDA streams (non-blocking) and events (without timing) for the length of a call, taken from
// a cache per device and handed back at scope exit: creating two of each per call cost the small
// calls their time. The cache (cuda_support.cpp) is safe under concurrent calls and several
// devices; a stream handed back may still hold queued work, which a later call's work simply
// follows (hpcml drains its streams before it returns).
#pragma once

#include <cuda_runtime.h>

#include "cuda_check.hpp"

namespace hpcml::detail {

// The current device's cached stream or event, or a new one; give hands it back (or destroys it
// where the cache is full).
cudaStream_t stream_take(int device);
void stream_give(int device, cudaStream_t stream) noexcept;
cudaEvent_t event_take(int device);
void event_give(int device, cudaEvent_t event) noexcept;

inline int current_device() {
    int device = 0;
    HPCML_CUDA_CHECK(cudaGetDevice(&device));
    return device;
}

class Stream {
public:
    Stream() : device_(current_device()), stream_(stream_take(device_)) {}
    ~Stream() { stream_give(device_, stream_); }
    Stream(const Stream&) = delete;
    Stream& operator=(const Stream&) = delete;
    cudaStream_t get() const { return stream_; }

private:
    int device_;
    cudaStream_t stream_;
};

class Event {
public:
    Event() : device_(current_device()), event_(event_take(device_)) {}
    ~Event() { event_give(device_, event_); }
    Event(const Event&) = delete;
    Event& operator=(const Event&) = delete;
    cudaEvent_t get() const { return event_; }

private:
    int device_;
    cudaEvent_t event_;
};

}  // namespace hpcml::detail
