/// @file
/// Device memory and device timing for programs that use the *_device entry points without CUDA
/// code of their own (hpcml's benchmarks and hpcml-similarity among them): hpcml allocates,
/// copies and times on the device, through its own CUDA runtime, and checks every CUDA call
/// (hpcml::Error naming the buffer or the timer). Without a usable device, or in a build without
/// the CUDA backend, constructing a DeviceMemory or DeviceMatrix raises NoDevice.
#pragma once

#include <hpcml/core.hpp>
#include <hpcml/similarity.hpp>

#include <chrono>
#include <cstddef>
#include <string>

namespace hpcml {

/// Bytes on one CUDA device, zeroed when allocated, freed when destroyed. Move-only.
class DeviceMemory {
public:
    DeviceMemory() = default;
    /// `bytes` on `device` (a usable device, as make_context checks it); OutOfMemory naming
    /// `what` where they do not fit.
    DeviceMemory(std::size_t bytes, int device, std::string what);
    DeviceMemory(DeviceMemory&& other) noexcept;  ///< takes other's buffer; other is left empty (null, 0 bytes)
    /// Frees this buffer and takes other's; other is left empty (null, 0 bytes).
    DeviceMemory& operator=(DeviceMemory&& other) noexcept;
    DeviceMemory(const DeviceMemory&) = delete;
    DeviceMemory& operator=(const DeviceMemory&) = delete;
    ~DeviceMemory();

    void* data() const noexcept { return data_; }  ///< the buffer's device address; null when empty
    /// data() as a `T*`.
    template <class T>
    T* data_as() const noexcept {
        return static_cast<T*>(data_);
    }
    std::size_t bytes() const noexcept { return bytes_; }  ///< the buffer's size in bytes
    int device() const noexcept { return device_; }        ///< the CUDA ordinal of the device that holds it

    /// Copies `bytes` from host memory to the buffer at `offset`, or from the buffer at `offset`
    /// to host memory, and waits for the copy; InvalidArgument where the range leaves the buffer.
    void upload(const void* host, std::size_t bytes, std::size_t offset = 0);
    /// Copies `bytes` from the buffer at `offset` to `host`: upload() the other way, with its check and wait.
    void download(void* host, std::size_t bytes, std::size_t offset = 0) const;

private:
    void check_range(std::size_t bytes, std::size_t offset, const char* what) const;
    void* data_ = nullptr;
    std::size_t bytes_ = 0;
    int device_ = 0;
    std::string what_;
};

/// A float matrix (samples are rows) uploaded once to a device, for similarity_device and
/// similarity_pairs_device across many calls: its rows are padded to a multiple of 4 floats
/// (zeros), so that every row starts on 16 bytes and the fused kernel reads it with vector loads
/// whatever its column count.
class DeviceMatrix {
public:
    DeviceMatrix() = default;
    /// Copies `host` to `device`, its rows padded, in a buffer that errors name `what`; InvalidArgument for
    /// null data or a leading dimension below the column count.
    DeviceMatrix(MatrixView host, int device, std::string what);

    /// The whole matrix on the device; its leading dimension is the padded row, a multiple of 4 floats.
    MatrixView view() const noexcept { return columns(0, cols_); }
    /// Columns [first, first + count) in place (InvalidArgument past the last column).
    MatrixView columns(std::size_t first, std::size_t count) const;

private:
    DeviceMemory memory_;
    std::size_t rows_ = 0, cols_ = 0, ld_ = 0;
};

/// Times the work queued on a context's stream between start() and stop() by the device's own
/// clock (CUDA events), and the wall time between them on the CPU backend. stop() waits for the
/// work and returns the seconds. For benchmarks: only the device's work counts, not the host's
/// queueing of it.
class StreamTimer {
public:
    /// Times `context`'s stream: creates its two CUDA events on the CUDA backend, none on the CPU backend.
    explicit StreamTimer(const Context& context);
    StreamTimer(const StreamTimer&) = delete;
    StreamTimer& operator=(const StreamTimer&) = delete;
    ~StreamTimer();

    void start();   ///< marks the start: records an event on the stream, or reads the CPU's clock
    double stop();  ///< marks the end, waits for the work queued since start() and returns its seconds

private:
    Context context_;
    void* start_event_ = nullptr;
    void* stop_event_ = nullptr;
    std::chrono::steady_clock::time_point started_;
};

}  // namespace hpcml
