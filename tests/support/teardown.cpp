// Linked into every test program: at its end, hpcml's cached memory (pinned staging blocks,
// device pools) is handed back and, in a CUDA build, every device's context is destroyed, so
// that compute-sanitizer's leak check (which reports what a context still holds when it is torn
// down) sees only real leaks.
#include <gtest/gtest.h>
#include <hpcml/device.hpp>

#if HPCML_WITH_CUDA
#include <cuda_runtime_api.h>

#include "common/cuda_memory.hpp"
#endif

namespace {

class ReleaseDevicesAtEnd : public ::testing::Environment {
public:
    void TearDown() override {
#if HPCML_WITH_CUDA
        hpcml::detail::destroy_device_pools();
        int count = 0;
        if (cudaGetDeviceCount(&count) != cudaSuccess) count = 0;  // no driver or no device: nothing to reset
        for (int device = 0; device < count; ++device)
            if (cudaSetDevice(device) == cudaSuccess) (void)cudaDeviceReset();
        (void)cudaGetLastError();
#else
        hpcml::release_cached_memory();
#endif
    }
};

[[maybe_unused]] const ::testing::Environment* const registered =
    ::testing::AddGlobalTestEnvironment(new ReleaseDevicesAtEnd);

}  // namespace
