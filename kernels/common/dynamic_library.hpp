// Functions of a library opened at run time (dlopen): NVML, cuBLAS.
#pragma once

#include <dlfcn.h>

#include <string>

namespace hpcml::detail {

// function = the library's `symbol`; where it lacks it, false with why = lacking + symbol.
template <class F>
bool bind_symbol(void* library, const char* symbol, F& function, std::string& why, const char* lacking) {
    function = reinterpret_cast<F>(dlsym(library, symbol));
    if (!function) why = std::string(lacking) + symbol;
    return function != nullptr;
}

}  // namespace hpcml::detail
