#include "flags.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace hpcml::cli {

namespace {

[[noreturn]] void invalid(const std::string& message) { throw Error(ErrorKind::InvalidArgument, message); }

}  // namespace

void Flags::add(const std::string& name, const std::string& default_value, const std::string& help,
                const std::string& value_name) {
    if (!entries_.count(name)) order_.push_back(name);
    entries_[name] = {default_value, default_value, help, value_name, false, false};
}

void Flags::add_switch(const std::string& name, const std::string& help) {
    if (!entries_.count(name)) order_.push_back(name);
    entries_[name] = {"", "", help, "", true, false};
}

void Flags::parse(int& argc, char** argv, Unknown unknown) {
    int kept = 1;
    for (int i = 1; i < argc; ++i) {
        const char* arg = argv[i];
        if (std::strcmp(arg, "--") == 0) {
            rest_.assign(argv + i + 1, argv + argc);
            rest_.push_back(nullptr);
            break;
        }
        if (std::strcmp(arg, "--help") == 0 || std::strcmp(arg, "-h") == 0) {
            help_ = true;
            continue;
        }
        if (std::strncmp(arg, "--", 2) != 0) {
            if (unknown == Unknown::Keep)
                argv[kept++] = argv[i];
            else
                positionals_.emplace_back(arg);
            continue;
        }
        std::string key = arg + 2, value;
        const std::size_t eq = key.find('=');
        if (eq != std::string::npos) {
            value = key.substr(eq + 1);
            key.resize(eq);
        }
        const auto it = entries_.find(key);
        if (it == entries_.end()) {
            if (unknown == Unknown::Reject) invalid("unknown option '" + std::string(arg) + "'");
            argv[kept++] = argv[i];
            continue;
        }
        Entry& e = it->second;
        if (e.is_switch) {
            if (eq != std::string::npos) invalid("--" + key + ": takes no value");
        } else if (eq == std::string::npos) {
            if (i + 1 >= argc) invalid("--" + key + ": missing value");
            value = argv[++i];
        }
        e.value = value;
        e.given = true;
    }
    argc = kept;
    argv[argc] = nullptr;
}

const Flags::Entry& Flags::entry(const std::string& name) const {
    const auto it = entries_.find(name);
    if (it == entries_.end()) throw Error(ErrorKind::Internal, "flag --" + name + " was not declared");
    return it->second;
}

const std::string& Flags::str(const std::string& name) const { return entry(name).value; }

bool Flags::given(const std::string& name) const { return entry(name).given; }

bool Flags::on(const std::string& name) const { return entry(name).is_switch && entry(name).given; }

long long Flags::integer(const std::string& name, long long minimum) const {
    const std::string& text = str(name);
    char* end = nullptr;
    errno = 0;
    const long long value = std::strtoll(text.c_str(), &end, 10);
    if (text.empty() || *end != '\0' || errno != 0 || value < minimum)
        invalid("--" + name + ": expected an integer >= " + std::to_string(minimum) + ", got '" + text + "'");
    return value;
}

double Flags::real(const std::string& name) const {
    const std::string& text = str(name);
    char* end = nullptr;
    const double value = std::strtod(text.c_str(), &end);
    if (text.empty() || *end != '\0') invalid("--" + name + ": expected a number, got '" + text + "'");
    return value;
}

const std::string& Flags::choice(const std::string& name, const std::vector<std::string>& choices) const {
    const std::string& text = str(name);
    std::string list;
    for (const std::string& c : choices) {
        if (c == text) return text;
        list += (list.empty() ? "" : "|") + c;
    }
    invalid("--" + name + ": expected " + list + ", got '" + text + "'");
}

Backend Flags::backend(const std::string& name) const { return parse_backend(str(name), "--" + name); }

void Flags::print(std::FILE* out) const {
    // Each flag's text wrapped at spaces to kHelpColumns, continued under its first word.
    constexpr std::size_t kIndent = 23;
    for (const std::string& name : order_) {
        const Entry& e = entries_.at(name);
        const std::string flag = "--" + name + (e.is_switch ? "" : " " + e.value_name);
        std::string text = e.help;
        // '\x01': a space that does not break "(default: V)".
        if (!e.is_switch && !e.default_value.empty()) text += " (default:\x01" + e.default_value + ")";
        std::string line = "  " + flag;
        line.resize(std::max(line.size() + 1, kIndent), ' ');
        std::size_t column = line.size();
        bool first = true;
        for (std::size_t at = 0; at < text.size();) {
            const std::size_t end = std::min(text.find(' ', at), text.size());
            const std::string_view word = std::string_view(text).substr(at, end - at);
            at = end + 1;
            if (!first && column + 1 + word.size() > kHelpColumns) {
                line += "\n" + std::string(kIndent, ' ');
                column = kIndent;
            } else if (!first) {
                line += ' ';
                ++column;
            }
            for (const char c : word) line += c == '\x01' ? ' ' : c;
            column += word.size();
            first = false;
        }
        std::fprintf(out, "%s\n", line.c_str());
    }
}

std::string one_of(const std::vector<std::string_view>& names, std::string_view separator) {
    std::string joined;
    for (const std::string_view name : names) {
        if (!joined.empty()) joined += separator;
        joined += name;
    }
    return joined;
}

}  // namespace hpcml::cli
