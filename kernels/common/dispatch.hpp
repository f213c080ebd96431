// The one dispatch every entry point ends in, once its arguments are checked: the backend
// resolved (make_context), the work done there, and the call's time and peak memory returned
// as RunStats. A family's api.cpp keeps its validation and one call of dispatch():
//
//   return detail::dispatch(options.backend, options.device, options.stream, options.method,
//       [&](MemoryTracker& tracker) { ...the CPU backend... },
//       [&](const auto& context, auto& tracker) { HPCML_IF_CUDA(...the CUDA backend...); });
//
// The CUDA work is written inside HPCML_IF_CUDA so that a build without CUDA compiles it away;
// there make_context has already chosen the CPU or thrown NoDevice, and the generic lambda is
// never instantiated.
#pragma once

#include <hpcml/core.hpp>

#include <chrono>

#include "memory.hpp"

#if HPCML_WITH_CUDA
#define HPCML_IF_CUDA(...) __VA_ARGS__
#else
#define HPCML_IF_CUDA(...)
#endif

namespace hpcml::detail {

template <class OnCpu, class OnCuda>
RunStats dispatch(Backend backend, int device, void* stream, Method method, OnCpu&& on_cpu,
                  [[maybe_unused]] OnCuda&& on_cuda) {
    const auto start = std::chrono::steady_clock::now();
    const Context context = make_context(backend, device, stream);
    MemoryTracker tracker;
#if HPCML_WITH_CUDA
    if (context.backend == Backend::Cuda) {
        on_cuda(context, tracker);
    } else
#endif
    {
        on_cpu(tracker);
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return RunStats{context.backend, method, seconds, tracker.stats()};
}

}  // namespace hpcml::detail
