// The public device memory and stream timer (hpcml/device_memory.hpp), in every build: the CUDA
// calls behind them are common/memory.hpp's device_* and event_* (NoDevice without CUDA).
#include <hpcml/device_memory.hpp>

#include <string>
#include <utility>

#include "common/error.hpp"
#include "common/hd.hpp"
#include "common/memory.hpp"

namespace hpcml {

DeviceMemory::DeviceMemory(std::size_t bytes, int device, std::string what) : device_(device), what_(std::move(what)) {
    (void)make_context(Backend::Cuda, device);  // NoDevice, or InvalidArgument for the ordinal, saying why
    data_ = detail::device_allocate(bytes, device, what_);
    bytes_ = bytes;
}

DeviceMemory::DeviceMemory(DeviceMemory&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)),
      device_(other.device_),
      what_(std::move(other.what_)) {}

DeviceMemory& DeviceMemory::operator=(DeviceMemory&& other) noexcept {
    if (this != &other) {
        detail::device_free(data_);
        data_ = std::exchange(other.data_, nullptr);
        bytes_ = std::exchange(other.bytes_, 0);
        device_ = other.device_;
        what_ = std::move(other.what_);
    }
    return *this;
}

DeviceMemory::~DeviceMemory() { detail::device_free(data_); }

void DeviceMemory::check_range(std::size_t bytes, std::size_t offset, const char* what) const {
    detail::require(offset <= bytes_ && bytes <= bytes_ - offset,
                    std::string(what) + ": " + std::to_string(bytes) + " bytes at offset " + std::to_string(offset) +
                        " leave " + what_ + " (" + std::to_string(bytes_) + " bytes)");
}

void DeviceMemory::upload(const void* host, std::size_t bytes, std::size_t offset) {
    check_range(bytes, offset, "upload");
    detail::device_copy(static_cast<unsigned char*>(data_) + offset, host, bytes, what_);
}

void DeviceMemory::download(void* host, std::size_t bytes, std::size_t offset) const {
    check_range(bytes, offset, "download");
    detail::device_copy(host, static_cast<const unsigned char*>(data_) + offset, bytes, what_);
}

DeviceMatrix::DeviceMatrix(MatrixView host, int device, std::string what)
    : rows_(host.rows), cols_(host.cols), ld_(detail::round_up(host.cols, 4)) {
    detail::require(host.data || rows_ == 0 || cols_ == 0, what + ": null data pointer");
    detail::require(host.ld == 0 || host.ld >= cols_, what + ": leading dimension " + std::to_string(host.ld) +
                                                          " is smaller than its " + std::to_string(cols_) + " columns");
    const std::size_t row_bytes = detail::checked_mul(ld_, sizeof(float), what.c_str());
    memory_ = DeviceMemory(detail::checked_mul(rows_, row_bytes, what.c_str()), device, what);  // zeroed: the padding
    detail::device_copy_rows(memory_.data(), row_bytes, host.data, (host.ld ? host.ld : cols_) * sizeof(float),
                             cols_ * sizeof(float), rows_, what);
}

MatrixView DeviceMatrix::columns(std::size_t first, std::size_t count) const {
    detail::require(
        first <= cols_ && count <= cols_ - first,
        "columns: " + std::to_string(count) + " from column " + std::to_string(first) + " of " + std::to_string(cols_));
    const float* base = memory_.data_as<const float>();
    return MatrixView{rows_ && base ? base + first : nullptr, rows_, count, ld_};
}

StreamTimer::StreamTimer(const Context& context) : context_(context) {
    if (context_.backend != Backend::Cuda) return;
    start_event_ = detail::event_create(context_.device);
    try {
        stop_event_ = detail::event_create(context_.device);
    } catch (...) {
        detail::event_destroy(start_event_);
        throw;
    }
}

StreamTimer::~StreamTimer() {
    detail::event_destroy(start_event_);
    detail::event_destroy(stop_event_);
}

void StreamTimer::start() {
    if (start_event_) {
        detail::event_record(start_event_, context_.stream);
    } else {
        started_ = std::chrono::steady_clock::now();
    }
}

double StreamTimer::stop() {
    if (!stop_event_) return std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
    detail::event_record(stop_event_, context_.stream);
    return detail::event_seconds(start_event_, stop_event_);
}

}  // namespace hpcml
