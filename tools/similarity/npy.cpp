#include "npy.hpp"

#include <hpcml/core.hpp>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <vector>

namespace hpcml::tools {

namespace {

[[noreturn]] void fail(const std::string& argument, const std::string& message) {
    throw Error(ErrorKind::InvalidArgument, argument + ": " + message);
}

template <class T>
void convert(const char* bytes, std::size_t count, std::vector<float>& out) {
    for (std::size_t i = 0; i < count; ++i) {
        T v;
        std::memcpy(&v, bytes + i * sizeof(T), sizeof(T));
        out[i] = static_cast<float>(v);
    }
}

struct HeaderFields {
    std::string descr, dims;  // dims: the shape's text, for messages
    bool fortran = false;
    std::vector<std::size_t> shape;
};

// Where the value of 'key' starts in the header's Python dict literal, or npos.
std::size_t value_of(const std::string& header, const std::string& key) {
    std::size_t i = header.find("'" + key + "'");
    if (i == std::string::npos) return i;
    i += key.size() + 2;
    while (i < header.size() && header[i] == ' ') ++i;
    if (i >= header.size() || header[i] != ':') return std::string::npos;
    ++i;
    while (i < header.size() && header[i] == ' ') ++i;
    return i < header.size() ? i : std::string::npos;
}

// The dict NumPy writes: {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }.
HeaderFields parse_header(const std::string& header, const std::string& argument) {
    HeaderFields f;
    std::size_t i = value_of(header, "descr");
    std::size_t end = i == std::string::npos || header[i] != '\'' ? std::string::npos : header.find('\'', i + 1);
    if (end == std::string::npos) fail(argument, "no dtype in the .npy header");
    f.descr = header.substr(i + 1, end - i - 1);
    i = value_of(header, "fortran_order");
    f.fortran = i != std::string::npos && header.compare(i, 4, "True") == 0;
    i = value_of(header, "shape");
    end = i == std::string::npos || header[i] != '(' ? std::string::npos : header.find(')', i);
    if (end == std::string::npos) fail(argument, "no shape in the .npy header");
    f.dims = header.substr(i + 1, end - i - 1);
    // Comma-separated non-negative integers, a trailing comma allowed: "3, 4", "7,".
    std::size_t start = 0;
    while (start < f.dims.size()) {
        std::size_t comma = f.dims.find(',', start);
        if (comma == std::string::npos) comma = f.dims.size();
        std::string item = f.dims.substr(start, comma - start);
        item.erase(0, item.find_first_not_of(' '));
        item.erase(item.find_last_not_of(' ') + 1);
        start = comma + 1;
        if (item.empty() && comma == f.dims.size()) break;
        if (item.empty() || item.find_first_not_of("0123456789") != std::string::npos)
            fail(argument, "shape (" + f.dims + ") is not a tuple of sizes");
        errno = 0;
        const unsigned long long d = std::strtoull(item.c_str(), nullptr, 10);
        if (errno == ERANGE || d > std::numeric_limits<std::size_t>::max())
            fail(argument, "shape (" + f.dims + ") is too large");
        f.shape.push_back(static_cast<std::size_t>(d));
    }
    return f;
}

}  // namespace

namespace {

// The header's dictionary text, after the magic string, the version and the header's length.
std::string read_header_text(std::ifstream& in, const std::string& path, const std::string& argument) {
    char magic[8];
    if (!in.read(magic, 8) || std::memcmp(magic, "\x93NUMPY", 6) != 0)
        fail(argument, "'" + path + "' is not a .npy file");
    const int major = static_cast<unsigned char>(magic[6]);
    std::uint32_t header_len = 0;
    if (major == 1) {
        unsigned char len[2];
        if (!in.read(reinterpret_cast<char*>(len), 2)) fail(argument, "truncated .npy header in '" + path + "'");
        header_len = len[0] | (len[1] << 8);
    } else if (major == 2 || major == 3) {
        unsigned char len[4];
        if (!in.read(reinterpret_cast<char*>(len), 4)) fail(argument, "truncated .npy header in '" + path + "'");
        header_len = len[0] | (len[1] << 8) | (len[2] << 16) | (static_cast<std::uint32_t>(len[3]) << 24);
    } else {
        fail(argument, "unsupported .npy format version " + std::to_string(major));
    }
    // NumPy itself refuses headers over 10000 bytes by default; a real 2-D array needs < 200.
    if (header_len > (1u << 20))
        fail(argument,
             "the .npy header of '" + path + "' is implausibly large (" + std::to_string(header_len) + " bytes)");
    std::string header(header_len, '\0');
    if (!in.read(header.data(), header_len)) fail(argument, "truncated .npy header in '" + path + "'");
    return header;
}

// Bytes per element of a real dtype `descr` ("<f4", "|u1", ...), or a failure naming it.
std::size_t element_bytes(const std::string& descr, const std::string& argument) {
    const std::string not_real =
        "dtype '" + descr + "' is not a real number type; expected float32 (or a real type to convert)";
    if (descr.size() < 2) fail(argument, not_real);
    if (descr[0] == '>' && descr.substr(1) != "u1" && descr.substr(1) != "i1" && descr.substr(1) != "b1")
        fail(argument, "big-endian dtype '" + descr + "' is not supported; convert with a.astype('<f4')");
    if (descr[0] != '<' && descr[0] != '>' && descr[0] != '|' && descr[0] != '=') fail(argument, not_real);
    const std::string kind = descr.substr(1);
    if (kind == "f4" || kind == "i4" || kind == "u4") return 4;
    if (kind == "f8" || kind == "i8" || kind == "u8") return 8;
    if (kind == "i2" || kind == "u2") return 2;
    if (kind == "i1" || kind == "u1" || kind == "b1") return 1;
    fail(argument, not_real);
}

// `count` elements of `kind` ("f4", "i2", ...; `item` bytes each) as float32.
std::vector<float> to_float32(const std::vector<char>& raw, const std::string& kind, std::size_t item,
                              std::size_t count) {
    std::vector<float> values(count);
    const char k = kind[0];
    if (kind == "f4")
        convert<float>(raw.data(), count, values);
    else if (kind == "f8")
        convert<double>(raw.data(), count, values);
    else if (k == 'i' && item == 4)
        convert<std::int32_t>(raw.data(), count, values);
    else if (k == 'i' && item == 8)
        convert<std::int64_t>(raw.data(), count, values);
    else if (k == 'i' && item == 2)
        convert<std::int16_t>(raw.data(), count, values);
    else if (k == 'i')
        convert<std::int8_t>(raw.data(), count, values);
    else if (k == 'u' && item == 4)
        convert<std::uint32_t>(raw.data(), count, values);
    else if (k == 'u' && item == 8)
        convert<std::uint64_t>(raw.data(), count, values);
    else if (k == 'u' && item == 2)
        convert<std::uint16_t>(raw.data(), count, values);
    else
        convert<std::uint8_t>(raw.data(), count, values);  // u1, b1
    return values;
}

}  // namespace

Matrix read_npy(const std::string& path, const std::string& argument) {
    std::ifstream in(path, std::ios::binary);
    if (!in) fail(argument, "cannot open '" + path + "': " + std::strerror(errno));
    const HeaderFields fields = parse_header(read_header_text(in, path, argument), argument);
    const std::vector<std::size_t>& shape = fields.shape;
    if (shape.size() != 2)
        fail(argument, "expected a 2-D (samples, features) array, got " + std::to_string(shape.size()) + " dimensions");
    const std::size_t item = element_bytes(fields.descr, argument);

    Matrix out;
    out.rows = shape[0];
    out.cols = shape[1];
    // Checked before allocating: a corrupt or hostile header must not overflow or allocate
    // what the file does not hold.
    const std::size_t limit = std::numeric_limits<std::size_t>::max() / item;
    if (out.cols != 0 && out.rows > limit / out.cols) fail(argument, "shape (" + fields.dims + ") is too large");
    const std::size_t count = out.rows * out.cols;
    const auto data_start = in.tellg();
    in.seekg(0, std::ios::end);
    const auto file_end = in.tellg();
    in.seekg(data_start);
    if (data_start < 0 || file_end < data_start ||
        static_cast<unsigned long long>(file_end - data_start) < count * item)
        fail(argument, "'" + path + "' is shorter than its header says (" + std::to_string(count) + " elements)");
    std::vector<char> raw(count * item);
    if (!in.read(raw.data(), static_cast<std::streamsize>(raw.size())))
        fail(argument, "'" + path + "' is shorter than its header says (" + std::to_string(count) + " elements)");
    std::vector<float> values = to_float32(raw, fields.descr.substr(1), item, count);
    if (fields.fortran &&
        count != 0) {  // column-major on disk: transpose into rows (no loop over an empty shape's rows)
        out.data.resize(count);
        for (std::size_t r = 0; r < out.rows; ++r)
            for (std::size_t c = 0; c < out.cols; ++c) out.data[r * out.cols + c] = values[c * out.rows + r];
    } else {
        out.data = std::move(values);
    }
    return out;
}

std::string npy_header(const std::string& descr, std::size_t rows, std::size_t cols) {
    std::string dict = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (" + std::to_string(rows) + ", " +
                       std::to_string(cols) + "), }";
    // Version 1.0: magic (6) + version (2) + length (2) + dict + padding + '\n', a multiple of 64.
    const std::size_t unpadded = 10 + dict.size() + 1;
    dict.append((64 - unpadded % 64) % 64, ' ');
    dict += '\n';
    std::string header = "\x93NUMPY";
    header += '\x01';
    header += '\x00';
    header += static_cast<char>(dict.size() & 0xff);
    header += static_cast<char>((dict.size() >> 8) & 0xff);
    return header + dict;
}

}  // namespace hpcml::tools
