// What the binding files of hpcml._hpcml share: module.cpp makes the module and calls each
// family's bind_* (similarity.cpp, regret.cpp, invgauss.cpp, telemetry.cpp).
#pragma once

#include <hpcml/hpcml.hpp>

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <cstddef>
#include <cstdint>
#include <initializer_list>

namespace nb = nanobind;

namespace hpcml_python {

nb::dict stats_dict(const hpcml::RunStats& stats);

// A Python callable (or None) as ExecutionOptions::progress. It is called with the interpreter's
// lock taken, since the calls run with it released; held by handle (the caller's argument keeps
// it alive), since options are copied where the lock is not held.
void set_progress(hpcml::ExecutionOptions& o, nb::handle callback, double interval);

// A new NumPy array of `shape` owning its memory.
template <class T>
nb::ndarray<nb::numpy, T> new_array(std::initializer_list<std::size_t> shape) {
    std::size_t count = 1;
    for (std::size_t n : shape) count *= n;
    T* data = new T[count]();
    nb::capsule owner(data, [](void* p) noexcept { delete[] static_cast<T*>(p); });
    return nb::ndarray<nb::numpy, T>(data, shape.size(), shape.begin(), owner);
}

void bind_similarity(nb::module_& m);
void bind_regret(nb::module_& m);
void bind_invgauss(nb::module_& m);
void bind_telemetry(nb::module_& m);

}  // namespace hpcml_python
