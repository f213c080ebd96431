// A build without CUDA: the common layer's CUDA side, declared in every build (device.hpp,
// memory.hpp), defined here; each family defines its own cuda_* entry points in its no_cuda.cpp.
// make_context never chooses CUDA in such a build (it raises NoDevice for backend Cuda first), so
// they are never reached; they raise NoDevice all the same. The device query answers NotCompiled.
#include <hpcml/device.hpp>

#include <string>

#include "common/error.hpp"
#include "common/memory.hpp"
#include "common/no_cuda.hpp"

namespace hpcml {

std::string cuda_architectures() { return ""; }
void release_cached_memory() noexcept { detail::release_host_cache(); }

DeviceQuery query_devices() {
    DeviceQuery query;
    query.status = CudaStatus::NotCompiled;
    query.message =
        "this build of hpcml has no CUDA backend: it was configured without a CUDA compiler. "
        "Install the CUDA toolkit (nvcc) and rebuild to use a GPU; the CPU backend works meanwhile.";
    return query;
}

namespace detail {

void no_cuda(const char* what) {
    raise(ErrorKind::NoDevice, std::string(what) + ": this build of hpcml has no CUDA backend");
}

void require_device_pointer(const void*, int, const std::string&) { no_cuda("require_device_pointer"); }
void require_output_pointer(const void*, int, const std::string&) { no_cuda("require_output_pointer"); }
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

}  // namespace detail

}  // namespace hpcml
