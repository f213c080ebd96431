// ExecutionOptions::progress for one call: work done is added from any thread, and reported
// from the calling thread only (a Python callback needs the thread that holds the interpreter),
// after progress_interval seconds and then at most once per interval, so that short calls never
// call back. An exception from the callback is kept and rethrown by finish(): thrown inside an
// OpenMP region it would end the process.
#pragma once

#include <hpcml/core.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <string>
#include <thread>

#include "error.hpp"

namespace hpcml::detail {

class Progress {
public:
    Progress(const ExecutionOptions& options, std::uint64_t total)
        : callback_(options.progress ? &options.progress : nullptr),
          total_(total),
          interval_(std::chrono::duration_cast<Clock::duration>(
              std::chrono::duration<double>(std::min(options.progress_interval, 1e6)))),  // no overflow
          next_(Clock::now() + interval_) {}

    // Work done since the last add, by any thread.
    void add(std::uint64_t done) {
        const std::uint64_t so_far = done_.fetch_add(done, std::memory_order_relaxed) + done;
        if (!callback_ || std::this_thread::get_id() != owner_) return;
        const Clock::time_point now = Clock::now();
        if (now < next_) return;
        next_ = now + interval_;
        call(so_far < total_ ? so_far : total_);
    }

    // After the work, on the calling thread: the last report, where there was one before, or
    // the callback's exception. The work added must be the total: a call that reports
    // progress checks its own accounting.
    void finish() {
        if (callback_ && done_.load() != total_)
            raise(ErrorKind::Internal, "progress: " + std::to_string(done_.load()) + " of " + std::to_string(total_) +
                                           " units accounted for");
        if (reported_ && last_ < total_) call(total_);
        if (failure_) std::rethrow_exception(failure_);
    }

private:
    using Clock = std::chrono::steady_clock;

    void call(std::uint64_t done) {
        if (failure_) return;
        reported_ = true;
        last_ = done;
        try {
            (*callback_)(done, total_);
        } catch (...) {
            failure_ = std::current_exception();
        }
    }

    const ProgressCallback* callback_;
    std::uint64_t total_;
    Clock::duration interval_;
    Clock::time_point next_;
    std::atomic<std::uint64_t> done_{0};
    const std::thread::id owner_ = std::this_thread::get_id();
    bool reported_ = false;
    std::uint64_t last_ = 0;  // the done of the last report
    std::exception_ptr failure_;
};

}  // namespace hpcml::detail
