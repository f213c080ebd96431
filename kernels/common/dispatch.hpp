// The one dispatch every entry point ends in, once its arguments are checked: the execution
// options checked against what the entry point accepts, the backend resolved (make_context),
// the work done there inside an NVTX range named after the call and its shape (nvtx.hpp), and
// the call's time and peak memory returned as RunStats. A family's
// api.cpp keeps its validation and one call of dispatch():
//
//   return detail::dispatch(options, {"similarity"},
//       [&](MemoryTracker& tracker) { ...the CPU backend... },
//       [&](const Context& context, MemoryTracker& tracker) { ...the CUDA backend (cuda_*)... });
//
// The cuda_* entry points are declared in every build; a build without CUDA links no_cuda.cpp,
// where they raise NoDevice (make_context has already chosen the CPU or raised, so they are
// never reached).
#pragma once

#include <hpcml/core.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <functional>
#include <span>
#include <string>
#include <string_view>

#include "error.hpp"
#include "memory.hpp"
#include "nvtx.hpp"

namespace hpcml::detail {

// What an entry point accepts of ExecutionOptions; a field it cannot honour is refused
// (InvalidArgument naming the field), never silently ignored.
struct EntryPoint {
    std::string_view name;
    bool takes_stream = false;           // queues its work on options.stream (else it must be null)
    // Its methods beside Auto, what Auto runs first (where the fields below do not say): its
    // family's list; any other is refused.
    std::span<const Method> methods;
    bool device_memory = false;          // takes device pointers: runs on CUDA (backend Auto or Cuda)
    bool reports_progress = false;       // calls options.progress (progress.hpp; else it must be empty)
    std::array<std::size_t, 3> shape{};  // the call's sizes, for its profiler range (trailing zeros: fewer)
    Method auto_on_cpu = Method::Auto;   // what Auto runs on the CPU (a family's cost model); Auto: methods' first
    // What a CUDA device runs for the asked method, having checked that it can (similarity's
    // sorted block does not fit every GPU, nor count every sample); empty: the asked method, Auto
    // being methods' first.
    std::function<Method(Method requested, int device)> on_cuda_method = nullptr;
};

// "hpcml::similarity cuda 256x2000x2000": the name of a call's NVTX range.
inline std::string range_name(const EntryPoint& entry, Backend backend) {
    std::string name = "hpcml::";
    name.append(entry.name).append(" ").append(to_string(backend));
    for (std::size_t k = 0; k < entry.shape.size() && entry.shape[k] > 0; ++k)
        name.append(k ? "x" : " ").append(std::to_string(entry.shape[k]));
    return name;
}

template <class OnCpu, class OnCuda>
RunStats dispatch(const ExecutionOptions& options, const EntryPoint& entry, OnCpu&& on_cpu, OnCuda&& on_cuda) {
    // Messages are built only on failure: small calls are measured by their overhead.
    const auto refuse = [&](const char* field, std::string_view why) {
        raise(ErrorKind::InvalidArgument, std::string(field) + ": " + std::string(entry.name) + std::string(why));
    };
    if (!entry.takes_stream && options.stream)
        refuse("stream", " does not queue its work on a caller's stream (it returns when done); leave it null");
    if (options.method != Method::Auto &&
        std::find(entry.methods.begin(), entry.methods.end(), options.method) == entry.methods.end()) {
        std::string methods = "auto";
        for (const Method m : entry.methods) methods.append(", ").append(to_string(m));
        refuse("method",
               " has no " + std::string(to_string(options.method)) + " method (its methods: " + methods + ")");
    }
    if (entry.device_memory && options.backend == Backend::Cpu)
        refuse("backend", " takes device pointers; use backend cuda or auto");
    if (!entry.reports_progress && options.progress) refuse("progress", " does not report progress; leave it empty");
    if (!(options.progress_interval >= 0.0 && options.progress_interval < INFINITY))
        refuse("progress_interval", " takes a finite number of seconds >= 0");
    const auto start = std::chrono::steady_clock::now();
    const Context context = make_context(entry.device_memory ? Backend::Cuda : options.backend, options.device,
                                         entry.takes_stream ? options.stream : nullptr);
    const Method first = entry.methods.empty() ? Method::Auto : entry.methods.front();
    const Method method = context.backend == Backend::Cuda && entry.on_cuda_method
                              ? entry.on_cuda_method(options.method, context.device)
                          : options.method != Method::Auto                                       ? options.method
                          : context.backend == Backend::Cpu && entry.auto_on_cpu != Method::Auto ? entry.auto_on_cpu
                                                                                                 : first;
    MemoryTracker tracker;
    const NvtxRange range([&] { return range_name(entry, context.backend); });
    if (context.backend == Backend::Cuda) {
        on_cuda(context, tracker);
    } else {
        on_cpu(tracker);
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return RunStats{context.backend, method, seconds, tracker.stats()};
}

}  // namespace hpcml::detail
