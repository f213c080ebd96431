// NVTX ranges around hpcml's calls and their phases, so that Nsight Systems shows them. A range
// is opened only while a tool listens (NVTX loads the one named by NVTX_INJECTION64_PATH, which
// Nsight Systems sets, and so do the tests), so no name is built otherwise; without the CUDA
// toolkit's NVTX3 headers (CPU-only and Arm builds) it compiles to nothing.
#pragma once

#include <cstdlib>
#include <string>

#if HPCML_WITH_NVTX
#include <nvtx3/nvToolsExt.h>
#endif

namespace hpcml::detail {

inline bool nvtx_listening() noexcept {
    static const bool listening = [] {
        const char* tool = std::getenv("NVTX_INJECTION64_PATH");
        return tool != nullptr && *tool != '\0';
    }();
    return listening;
}

// NvtxRange range([&] { return std::string("name"); }): pushed here, popped at the scope's end.
class NvtxRange {
public:
    template <class Name>
    explicit NvtxRange([[maybe_unused]] Name&& name) {
#if HPCML_WITH_NVTX
        if (nvtx_listening()) {
            nvtxRangePushA(std::string(name()).c_str());
            open_ = true;
        }
#endif
    }
    ~NvtxRange() {
#if HPCML_WITH_NVTX
        if (open_) nvtxRangePop();
#endif
    }
    NvtxRange(const NvtxRange&) = delete;
    NvtxRange& operator=(const NvtxRange&) = delete;

private:
    [[maybe_unused]] bool open_ = false;
};

}  // namespace hpcml::detail
