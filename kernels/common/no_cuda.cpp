// A build without CUDA: the CUDA backend's entry points, declared in every build (each family's
// backends.hpp, device.hpp, memory.hpp), defined here. make_context never chooses CUDA in such a
// build (it raises NoDevice for backend Cuda first), so the family entry points are never
// reached; they raise NoDevice all the same. The device query answers NotCompiled.
#include <hpcml/device.hpp>

#include <string>

#include "common/error.hpp"
#include "common/memory.hpp"
#include "invgauss/backends.hpp"
#include "regret/backends.hpp"
#include "similarity/backends.hpp"

namespace hpcml {

namespace {

[[noreturn]] void no_cuda(const char* what) {
    detail::raise(ErrorKind::NoDevice, std::string(what) + ": this build of hpcml has no CUDA backend");
}

}  // namespace

std::string cuda_architectures() { return ""; }
void release_cached_memory() noexcept {}

DeviceQuery query_devices() {
    DeviceQuery query;
    query.status = CudaStatus::NotCompiled;
    query.message =
        "this build of hpcml has no CUDA backend: it was configured without a CUDA compiler. "
        "Install the CUDA toolkit (nvcc) and rebuild to use a GPU; the CPU backend works meanwhile.";
    return query;
}

namespace detail {

void require_device_pointer(const void*, int, const std::string&) { no_cuda("require_device_pointer"); }
void* device_allocate(std::size_t, int, const std::string& what) { no_cuda(what.c_str()); }
void device_free(void*) noexcept {}
void device_copy(void*, const void*, std::size_t, const std::string& what) { no_cuda(what.c_str()); }
void device_copy_rows(void*, std::size_t, const void*, std::size_t, std::size_t, std::size_t, const std::string& what) {
    no_cuda(what.c_str());
}
void* event_create(int) { no_cuda("a CUDA event"); }
void event_destroy(void*) noexcept {}
void event_record(void*, void*) { no_cuda("a CUDA event"); }
double event_seconds(void*, void*) { no_cuda("a CUDA event"); }

namespace similarity {
void cuda_run_host(const Problem&, const TilePlan&, Method, const SimilarityTileSink&, const Context&, MemoryTracker&) {
    no_cuda("similarity");
}
void cuda_run_device(const Problem&, const TilePlan&, Method, void*, const Context&, MemoryTracker&) {
    no_cuda("similarity_device");
}
void cuda_run_pairs(const Problem&, bool, const TilePlan&, Method, std::int32_t, const PassingSink&, const Context&,
                    MemoryTracker&) {
    no_cuda("similarity_pairs");
}
}  // namespace similarity

namespace regret {
std::vector<GameSolution> cuda_solve(const float*, std::size_t, std::size_t, std::size_t, const RegretOptions&,
                                     const Context&, MemoryTracker&) {
    no_cuda("solve_matrix_games");
}
std::size_t cuda_device_workspace(std::size_t, std::size_t, std::size_t, const Context&) {
    no_cuda("solve_matrix_games_device_workspace");
}
void cuda_solve_device(const float*, std::size_t, std::size_t, std::size_t, const DeviceGameResults&, void*,
                       const RegretOptions&, const Context&) {
    no_cuda("solve_matrix_games_device");
}
}  // namespace regret

namespace invgauss {
template <class T>
void cuda_evaluate_host(Function, const Elementwise<T>&, const Context&, MemoryTracker&) {
    no_cuda("evaluate");
}
template <class T>
void cuda_sample_host(const Elementwise<T>&, std::uint64_t, const Context&, MemoryTracker&) {
    no_cuda("sample");
}
template <class T>
void cuda_evaluate_device(Function, const Elementwise<T>&, const Context&) {
    no_cuda("evaluate_device");
}
template <class T>
void cuda_sample_device(const Elementwise<T>&, std::uint64_t, const Context&) {
    no_cuda("sample_device");
}
void cuda_distances(const DistanceProblem&, Method, const Context&, MemoryTracker&) { no_cuda("distance_to_normal"); }

#define HPCML_INSTANTIATE(T)                                                                                 \
    template void cuda_evaluate_host<T>(Function, const Elementwise<T>&, const Context&, MemoryTracker&);    \
    template void cuda_sample_host<T>(const Elementwise<T>&, std::uint64_t, const Context&, MemoryTracker&); \
    template void cuda_evaluate_device<T>(Function, const Elementwise<T>&, const Context&);                  \
    template void cuda_sample_device<T>(const Elementwise<T>&, std::uint64_t, const Context&);
HPCML_INSTANTIATE(float)
HPCML_INSTANTIATE(double)
#undef HPCML_INSTANTIATE
}  // namespace invgauss

}  // namespace detail

}  // namespace hpcml
