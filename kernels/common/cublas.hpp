// cuBLAS, loaded with dlopen when first needed rather than linked: it is about 570 MB with
// cuBLASLt, and only the naive regret baseline uses it, so a wheel need not carry it and every
// other call works on a machine without it. Searched, in order: the dynamic loader's path (also
// a copy already loaded, torch's for one), the registry's nvidia-cublas package beside the
// installed hpcml (site-packages/nvidia/cu<major>/lib), and the toolkit hpcml was built with.
#pragma once

#include <cublas_v2.h>

#include <string>
#include <vector>

namespace hpcml::detail {

struct CublasLibrary {
    std::string path;  // the file that was loaded
    decltype(&cublasCreate_v2) create = nullptr;
    decltype(&cublasDestroy_v2) destroy = nullptr;
    decltype(&cublasSetStream_v2) set_stream = nullptr;
    decltype(&cublasSetPointerMode_v2) set_pointer_mode = nullptr;
    decltype(&cublasSdot_v2) sdot = nullptr;
    decltype(&cublasSasum_v2) sasum = nullptr;
    decltype(&cublasSgemv_v2) sgemv = nullptr;
};

// The files tried, in order (HPCML_CUBLAS_LIBRARY, when set, alone).
std::vector<std::string> cublas_candidates();
// Loads the first candidate that opens and has every function; raises NoDevice naming each file
// tried and why, and how to install cuBLAS.
CublasLibrary load_cublas(const std::vector<std::string>& candidates);
// The process's cuBLAS, loaded on the first call (a failure is retried on the next call).
const CublasLibrary& cublas();

}  // namespace hpcml::detail
