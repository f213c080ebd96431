// A build without CUDA: the inverse Gaussian's CUDA entry points (backends.hpp), raising
// NoDevice. The public API never reaches them there (make_context refuses backend Cuda first).
#include "backends.hpp"
#include "common/no_cuda.hpp"

namespace hpcml::detail::invgauss {

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

}  // namespace hpcml::detail::invgauss
