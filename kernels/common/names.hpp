// One table per kind of variant: the values of a public enum with their names, read by its
// to_string and its parse_* alike, so a value is named once. A kind whose variants also carry
// behaviour (a similarity output's encoding, an inverse-Gaussian function's formula) lists them
// as entry types in a VariantTable, whose names() is such a table and whose visit() turns a
// run-time value into its entry's type.
#pragma once

#include <hpcml/core.hpp>

#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "error.hpp"

namespace hpcml::detail {

template <class Enum>
struct Named {
    Enum value;
    std::string_view name;
};

template <class Enum, std::size_t N>
constexpr std::string_view name_in(const std::array<Named<Enum>, N>& table, Enum value) noexcept {
    for (const Named<Enum>& entry : table)
        if (entry.value == value) return entry.name;
    return "?";
}

template <class Enum, std::size_t N>
constexpr bool contains(const std::array<Named<Enum>, N>& table, Enum value) noexcept {
    return name_in(table, value) != "?";
}

// The value named `text`, or InvalidArgument naming `argument`: "--mode: expected count or all,
// got 'x'".
template <class Enum, std::size_t N>
Enum parse_in(const std::array<Named<Enum>, N>& table, std::string_view text, std::string_view argument) {
    std::string expected;
    for (std::size_t i = 0; i < N; ++i) {
        if (text == table[i].name) return table[i].value;
        expected += (i == 0 ? "" : i + 1 == N ? " or " : ", ");
        expected += table[i].name;
    }
    raise(ErrorKind::InvalidArgument,
          std::string(argument) + ": expected " + expected + ", got '" + std::string(text) + "'");
}

// The table's names in its order (help texts list them from here).
template <class Enum, std::size_t N>
std::vector<std::string_view> names_in(const std::array<Named<Enum>, N>& table) {
    std::vector<std::string_view> names;
    for (const Named<Enum>& entry : table) names.push_back(entry.name);
    return names;
}

// Entries: types each with `static constexpr Enum value` and `static constexpr std::string_view
// name`, and whatever else the backends read of them.
template <class... Entries>
struct VariantTable {
    using Enum = std::common_type_t<decltype(Entries::value)...>;
    static constexpr std::array<Named<Enum>, sizeof...(Entries)> names{{{Entries::value, Entries::name}...}};

    // Calls visit(Entry{}) for the entry of `value`; false where there is none.
    template <class Visit>
    static bool visit(Enum value, Visit&& visit) {
        return ((value == Entries::value && (visit(Entries{}), true)) || ...);
    }

    // Calls visit(Entry{}) for every entry, in the table's order.
    template <class Visit>
    static void for_each(Visit&& visit) {
        (visit(Entries{}), ...);
    }
};

}  // namespace hpcml::detail
