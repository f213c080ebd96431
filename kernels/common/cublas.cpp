#include "cublas.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>

#include "dynamic_library.hpp"
#include "error.hpp"

namespace hpcml::detail {

namespace {

#define HPCML_STRINGIFY_(x) #x
#define HPCML_STRINGIFY(x) HPCML_STRINGIFY_(x)
constexpr const char* kSoname = "libcublas.so." HPCML_STRINGIFY(CUBLAS_VER_MAJOR);
constexpr const char* kPipFolder = "nvidia/cu" HPCML_STRINGIFY(CUBLAS_VER_MAJOR) "/lib";

// The folder of the file holding libhpcml's code (libhpcml.so, or the module or program it is
// linked into).
std::filesystem::path own_folder() {
    Dl_info info{};
    if (dladdr(reinterpret_cast<const void*>(&cublas_candidates), &info) == 0 || !info.dli_fname) return {};
    std::error_code error;
    const std::filesystem::path file = std::filesystem::canonical(info.dli_fname, error);
    return error ? std::filesystem::path{} : file.parent_path();
}

template <class F>
bool bind(void* library, const char* symbol, F& function, std::string& why) {
    return bind_symbol(library, symbol, function, why, "it lacks ");
}

}  // namespace

std::vector<std::string> cublas_candidates() {
    if (const char* path = std::getenv("HPCML_CUBLAS_LIBRARY"); path && *path) return {path};
    std::vector<std::string> candidates{kSoname};
    // The wheel's library is site-packages/hpcml/lib/libhpcml.so and its module
    // site-packages/hpcml/_hpcml*.so: nvidia-cublas lies two or one folders up.
    std::filesystem::path folder = own_folder();
    for (int up = 0; up < 3 && !folder.empty(); ++up, folder = folder.parent_path()) {
        const std::filesystem::path file = folder / kPipFolder / kSoname;
        if (std::filesystem::exists(file)) candidates.push_back(file.string());
    }
#ifdef HPCML_CUDA_TOOLKIT_LIBRARY_DIR
    candidates.push_back(std::string(HPCML_CUDA_TOOLKIT_LIBRARY_DIR) + "/" + kSoname);
#endif
    return candidates;
}

CublasLibrary load_cublas(const std::vector<std::string>& candidates) {
    std::string tried;
    for (const std::string& path : candidates) {
        std::string why;
        if (void* library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)) {
            CublasLibrary blas;
            blas.path = path;
            if (bind(library, "cublasCreate_v2", blas.create, why) &&
                bind(library, "cublasDestroy_v2", blas.destroy, why) &&
                bind(library, "cublasSetStream_v2", blas.set_stream, why) &&
                bind(library, "cublasSetPointerMode_v2", blas.set_pointer_mode, why) &&
                bind(library, "cublasSdot_v2", blas.sdot, why) && bind(library, "cublasSasum_v2", blas.sasum, why) &&
                bind(library, "cublasSgemv_v2", blas.sgemv, why))
                return blas;
            dlclose(library);
        } else {
            const char* error = dlerror();
            why = error ? error : "dlopen failed";
        }
        tried += "\n  " + path + ": " + why;
    }
    raise(ErrorKind::NoDevice,
          std::string("cuBLAS (") + kSoname + ") could not be loaded; hpcml needs it only for the naive regret " +
              "baseline on the GPU. Install it with `pip install nvidia-cublas` (the wheel's extra: " +
              "`pip install hpcml[cublas]`), put the CUDA toolkit's library folder on LD_LIBRARY_PATH, or name " +
              "the file in HPCML_CUBLAS_LIBRARY. Tried:" + tried);
}

const CublasLibrary& cublas() {
    static std::mutex mutex;
    static CublasLibrary* loaded = nullptr;  // never freed: cuBLAS stays loaded for the process
    const std::lock_guard<std::mutex> lock(mutex);
    if (!loaded) loaded = new CublasLibrary(load_cublas(cublas_candidates()));
    return *loaded;
}

}  // namespace hpcml::detail
