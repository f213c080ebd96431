// What the binding files of hpcml._hpcml share: module.cpp makes the module and calls each
// family's bind_* (similarity.cpp, regret.cpp, invgauss.cpp, telemetry.cpp).
#pragma once

#include <hpcml/hpcml.hpp>

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace nb = nanobind;

namespace hpcml_python {

nb::dict stats_dict(const hpcml::RunStats& stats);

// A call's options as they cross the binding: by name (keyword arguments built once in Python),
// so that no two can trade places. Each binding takes the names it knows (take, take_or,
// take_optional, and execution(), which takes the ExecutionOptions every call has) and ends with
// done(), which refuses any name not taken: a misspelt option is an error naming it, never a
// value in the wrong field. Values are converted as positional arguments were (a wrong type is a
// TypeError naming the option); a required option missing is the binding's caller's bug (Internal).
class Options {
public:
    explicit Options(nb::kwargs kwargs) : kwargs_(std::move(kwargs)) {}

    template <class T>
    T take(const char* name) {
        if (!kwargs_.contains(name)) missing(name);
        return as<T>(name);
    }
    template <class T>
    T take_or(const char* name, T fallback) {
        return kwargs_.contains(name) ? as<T>(name) : fallback;
    }
    template <class T>
    std::optional<T> take_optional(const char* name) {  // absent or None: nullopt
        if (!kwargs_.contains(name) || kwargs_[name].is_none()) return seen(name), std::nullopt;
        return as<T>(name);
    }
    // ExecutionOptions by name: backend, method, device, stream (an address), progress (a
    // callable or None, held by handle: the caller's keyword arguments keep it alive) and
    // progress_interval, each where given.
    void execution(hpcml::ExecutionOptions& o);
    void done() const;

private:
    template <class T>
    T as(const char* name) {
        seen(name);
        try {
            return nb::cast<T>(kwargs_[name]);
        } catch (const nb::cast_error&) {
            throw nb::type_error((std::string(name) + ": an option of the wrong type").c_str());
        }
    }
    void seen(const char* name) { taken_.emplace_back(name); }
    // A required option not given: named, with the names given that no call has taken yet (a
    // misspelling among them).
    [[noreturn]] void missing(const char* name) const;
    nb::kwargs kwargs_;
    std::vector<std::string> taken_;
};

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
