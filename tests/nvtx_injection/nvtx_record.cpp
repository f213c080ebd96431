// An NVTX injection library, as Nsight Systems is one: NVTX loads the library named by
// NVTX_INJECTION64_PATH at the first range and calls its InitializeInjectionNvtx2, which points
// NVTX's range functions here. Each push and pop is appended to the file named by
// HPCML_NVTX_RECORD ("push NAME", "pop"), for the tests to read.
#include <nvtx3/nvToolsExt.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>

namespace {

std::mutex file_mutex;

void record(const char* what, const char* name) {
    const char* path = std::getenv("HPCML_NVTX_RECORD");
    if (!path || !*path) return;
    const std::lock_guard<std::mutex> lock(file_mutex);
    if (std::FILE* f = std::fopen(path, "a")) {
        std::fprintf(f, "%s%s%s\n", what, name ? " " : "", name ? name : "");
        std::fclose(f);
    }
}

int NVTX_API push_a(const char* message) {
    record("push", message);
    return 0;
}
int NVTX_API push_ex(const nvtxEventAttributes_t* attributes) {
    const bool ascii = attributes && attributes->messageType == NVTX_MESSAGE_TYPE_ASCII;
    record("push", ascii ? attributes->message.ascii : "(not ascii)");
    return 0;
}
int NVTX_API pop() {
    record("pop", nullptr);
    return 0;
}

}  // namespace

extern "C" NVTX_DYNAMIC_EXPORT int NVTX_API InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_export_table) {
    const auto* callbacks = static_cast<const NvtxExportTableCallbacks*>(get_export_table(NVTX_ETID_CALLBACKS));
    NvtxFunctionTable table = nullptr;
    unsigned int size = 0;
    if (!callbacks || !callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &table, &size) || !table) return 0;
    *table[NVTX_CBID_CORE_RangePushA] = reinterpret_cast<NvtxFunctionPointer>(&push_a);
    *table[NVTX_CBID_CORE_RangePushEx] = reinterpret_cast<NvtxFunctionPointer>(&push_ex);
    *table[NVTX_CBID_CORE_RangePop] = reinterpret_cast<NvtxFunctionPointer>(&pop);
    return 1;
}
