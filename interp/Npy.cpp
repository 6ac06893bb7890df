#include "qopt/interp/Npy.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "ArrayOps.h"
#include "qopt/ir/Error.h"

namespace qopt::interp {

namespace {

constexpr std::string_view kMagic = "\x93NUMPY";

[[noreturn]] void bad(const std::string& file, const std::string& cause) {
  throw Error(ErrorKind::Input, file, {}, fmt::format("not a valid .npy file: {}", cause));
}

struct DtypeInfo {
  char kind;  // 'f', 'i', 'u', 'b'
  int bytes;
  DataType type;
};

constexpr DtypeInfo kDtypes[] = {
    {'f', 2, DataType::Float16}, {'f', 4, DataType::Float},  {'f', 8, DataType::Double},
    {'i', 1, DataType::Int8},    {'i', 2, DataType::Int16},  {'i', 4, DataType::Int32},
    {'i', 8, DataType::Int64},   {'u', 1, DataType::UInt8},  {'u', 2, DataType::UInt16},
    {'u', 4, DataType::UInt32},  {'u', 8, DataType::UInt64}, {'b', 1, DataType::Bool},
};

// Finds the value text following 'key': in the header dictionary.
std::string_view dictValue(std::string_view header, std::string_view key, const std::string& file) {
  for (char quote : {'\'', '"'}) {
    std::string pattern = fmt::format("{0}{1}{0}", quote, key);
    size_t at = header.find(pattern);
    if (at == std::string_view::npos) continue;
    size_t colon = header.find(':', at + pattern.size());
    if (colon == std::string_view::npos) break;
    size_t start = header.find_first_not_of(" \t", colon + 1);
    if (start == std::string_view::npos) break;
    return header.substr(start);
  }
  bad(file, fmt::format("the header has no '{}' entry", key));
}

}  // namespace

namespace {

// What a .npy header says, and where its data starts.
struct NpyHeader {
  const DtypeInfo* info = nullptr;
  std::string descr;
  Shape shape;
  bool fortran = false;
  bool swap = false;
  int size = 0;
  size_t dataStart = 0;
};

// Parses the header at the start of `bytes` (which may stop after it).
NpyHeader parseNpyHeader(std::string_view bytes, const std::string& file) {
  if (bytes.size() < 10 || bytes.substr(0, 6) != kMagic) bad(file, "missing the \\x93NUMPY magic");
  auto major = static_cast<uint8_t>(bytes[6]);
  size_t headerLength;
  size_t headerStart;
  if (major == 1) {
    headerLength =
        static_cast<uint8_t>(bytes[8]) | (static_cast<size_t>(static_cast<uint8_t>(bytes[9])) << 8);
    headerStart = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) bad(file, "truncated header");
    headerLength = 0;
    for (int i = 0; i < 4; ++i)
      headerLength |= static_cast<size_t>(static_cast<uint8_t>(bytes[8 + i])) << (8 * i);
    headerStart = 12;
  } else {
    bad(file, fmt::format("unsupported format version {}", major));
  }
  if (bytes.size() < headerStart + headerLength) bad(file, "truncated header");
  std::string_view header = bytes.substr(headerStart, headerLength);

  // descr: '<f4', '|b1', ...
  std::string_view descrText = dictValue(header, "descr", file);
  if (descrText.empty() || (descrText[0] != '\'' && descrText[0] != '"')) {
    bad(file, "'descr' is not a simple dtype string (structured arrays are not supported)");
  }
  size_t descrEnd = descrText.find(descrText[0], 1);
  if (descrEnd == std::string_view::npos) bad(file, "unterminated 'descr'");
  std::string descr(descrText.substr(1, descrEnd - 1));
  if (descr.size() < 3) bad(file, fmt::format("unsupported dtype '{}'", descr));
  char order = descr[0];
  char kind = descr[1];
  int size = std::atoi(descr.c_str() + 2);
  const DtypeInfo* info = nullptr;
  for (const DtypeInfo& d : kDtypes) {
    if (d.kind == kind && d.bytes == size) info = &d;
  }
  if (info == nullptr || (order != '<' && order != '>' && order != '|' && order != '=')) {
    bad(file, fmt::format("unsupported dtype '{}' (numeric and bool dtypes only)", descr));
  }
  bool swap = order == '>' && size > 1;

  std::string_view fortranText = dictValue(header, "fortran_order", file);
  bool fortran = fortranText.substr(0, 4) == "True";
  if (!fortran && fortranText.substr(0, 5) != "False") bad(file, "bad 'fortran_order'");

  std::string_view shapeText = dictValue(header, "shape", file);
  if (shapeText.empty() || shapeText[0] != '(') bad(file, "'shape' is not a tuple");
  size_t close = shapeText.find(')');
  if (close == std::string_view::npos) bad(file, "unterminated 'shape'");
  Shape shape;
  std::string_view dims = shapeText.substr(1, close - 1);
  size_t pos = 0;
  while (pos < dims.size()) {
    size_t next = dims.find(',', pos);
    std::string_view item =
        dims.substr(pos, next == std::string_view::npos ? dims.size() - pos : next - pos);
    size_t b = item.find_first_not_of(" L");
    size_t e = item.find_last_not_of(" L");
    if (b != std::string_view::npos) {
      std::string digits(item.substr(b, e - b + 1));
      char* end = nullptr;
      long long v = std::strtoll(digits.c_str(), &end, 10);
      if (end == digits.c_str() || *end != '\0' || v < 0)
        bad(file, fmt::format("bad dimension '{}'", digits));
      shape.push_back(v);
    }
    if (next == std::string_view::npos) break;
    pos = next + 1;
  }

  NpyHeader parsed;
  parsed.info = info;
  parsed.descr = descr;
  parsed.shape = std::move(shape);
  parsed.fortran = fortran;
  parsed.swap = swap;
  parsed.size = size;
  parsed.dataStart = headerStart + headerLength;
  return parsed;
}

// Byte order and bool normalisation of data read as stored.
void fixStored(Array& array, const NpyHeader& h) {
  if (h.swap) {
    std::byte* p = array.bytes();
    for (int64_t i = 0; i < array.numel(); ++i, p += h.size) std::reverse(p, p + h.size);
  }
  if (h.info->type == DataType::Bool) {
    auto* p = array.data<uint8_t>();
    for (int64_t i = 0; i < array.numel(); ++i) p[i] = p[i] != 0;
  }
}

}  // namespace

Array parseNpy(std::string_view bytes, const std::string& file) {
  NpyHeader h = parseNpyHeader(bytes, file);
  const DtypeInfo* info = h.info;
  const std::string& descr = h.descr;
  const Shape& shape = h.shape;
  const bool fortran = h.fortran;
  const size_t dataStart = h.dataStart;
  // Check the data length against the header before allocating: a header may declare any shape.
  uint64_t expected = static_cast<uint64_t>(dataTypeBits(info->type) / 8);
  bool empty = std::find(shape.begin(), shape.end(), 0) != shape.end();
  for (int64_t d : empty ? Shape{} : shape) {
    if (expected > (bytes.size() - dataStart) / static_cast<uint64_t>(d)) {
      bad(file, fmt::format("{} bytes of data for dtype '{}' and shape [{}], expected more",
                            bytes.size() - dataStart, descr, fmt::join(shape, ",")));
    }
    expected *= static_cast<uint64_t>(d);
  }
  Shape storedShape = shape;
  if (fortran) std::reverse(storedShape.begin(), storedShape.end());
  Array array;
  try {
    array = Array(info->type, storedShape);
  } catch (const Error& e) {
    throw Error(ErrorKind::Input, file, {}, e.cause());
  }
  if (bytes.size() - dataStart != array.byteSize()) {
    bad(file,
        fmt::format("{} bytes of data for dtype '{}' and shape [{}], expected {}",
                    bytes.size() - dataStart, descr, fmt::join(shape, ","), array.byteSize()));
  }
  if (array.byteSize() > 0) std::memcpy(array.bytes(), bytes.data() + dataStart, array.byteSize());
  fixStored(array, h);
  if (fortran && array.rank() > 1) {
    std::vector<int64_t> perm(static_cast<size_t>(array.rank()));
    for (size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<int64_t>(perm.size() - 1 - i);
    array = transposeArray(array, perm);
  }
  return array;
}

Array readNpy(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorKind::Input, path.string(), {}, "cannot open the file");
  std::ostringstream content;
  content << in.rdbuf();
  if (in.bad()) throw Error(ErrorKind::Input, path.string(), {}, "cannot read the file");
  return parseNpy(content.str(), path.string());
}

namespace {

// The header of a stored .npy (its first bytes only).
NpyHeader readHeader(const NpyReader& read, uint64_t size, const std::string& name) {
  std::string head(static_cast<size_t>(std::min<uint64_t>(size, 1 << 16)), '\0');
  read(0, head.data(), head.size());
  return parseNpyHeader(head, name);
}

NpyReader fileReader(std::ifstream& in, const std::filesystem::path& path) {
  return [&in, path](uint64_t offset, char* out, size_t count) {
    in.seekg(static_cast<std::streamoff>(offset));
    in.read(out, static_cast<std::streamsize>(count));
    if (!in) throw Error(ErrorKind::Input, path.string(), {}, "cannot read the file");
  };
}

uint64_t fileSizeOf(std::ifstream& in, const std::filesystem::path& path) {
  if (!in) throw Error(ErrorKind::Input, path.string(), {}, "cannot open the file");
  in.seekg(0, std::ios::end);
  return static_cast<uint64_t>(in.tellg());
}

}  // namespace

Shape readNpyShape(const NpyReader& read, uint64_t size, const std::string& name) {
  return readHeader(read, size, name).shape;
}

Shape readNpyShape(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  const uint64_t size = fileSizeOf(in, path);
  return readNpyShape(fileReader(in, path), size, path.string());
}

Array readNpyRows(const NpyReader& read, uint64_t size, const std::string& name, int64_t first,
                  int64_t count) {
  const NpyHeader h = readHeader(read, size, name);
  if (h.shape.empty() || first < 0 || count < 0 || first + count > h.shape[0]) {
    bad(name, fmt::format("rows {} to {} are outside its shape [{}]", first, first + count,
                          fmt::join(h.shape, ",")));
  }
  if (h.fortran && h.shape.size() > 1) {  // rows are not contiguous: read it whole
    std::string bytes(static_cast<size_t>(size), '\0');
    read(0, bytes.data(), bytes.size());
    Array whole = parseNpy(bytes, name);
    Shape shape = whole.shape();
    shape[0] = count;
    Array part(whole.dataType(), shape);
    const size_t rowBytes = whole.byteSize() / static_cast<size_t>(whole.dim(0));
    std::memcpy(part.bytes(), whole.bytes() + static_cast<size_t>(first) * rowBytes,
                part.byteSize());
    return part;
  }
  Shape shape = h.shape;
  shape[0] = count;
  // The row size, checked against the data before anything is allocated: a header may declare
  // any shape.
  const uint64_t dataBytes = size - h.dataStart;
  uint64_t rowBytes = static_cast<uint64_t>(h.size);
  bool fits = true;
  for (size_t d = 1; d < h.shape.size() && fits; ++d) {
    const auto dim = static_cast<uint64_t>(h.shape[d]);
    fits = dim == 0 || rowBytes <= dataBytes / dim;
    rowBytes *= dim;
  }
  const auto rows = static_cast<uint64_t>(h.shape[0]);
  fits = fits && (rowBytes == 0 ? dataBytes == 0
                                : dataBytes % rowBytes == 0 && dataBytes / rowBytes == rows);
  if (!fits) {
    bad(name, fmt::format("{} bytes of data for dtype '{}' and shape [{}]", dataBytes, h.descr,
                          fmt::join(h.shape, ",")));
  }
  Array part(h.info->type, shape);
  if (part.byteSize() > 0) {
    read(h.dataStart + static_cast<uint64_t>(first) * rowBytes,
         reinterpret_cast<char*>(part.bytes()), part.byteSize());
  }
  fixStored(part, h);
  return part;
}

Array readNpyRows(const std::filesystem::path& path, int64_t first, int64_t count) {
  std::ifstream in(path, std::ios::binary);
  const uint64_t size = fileSizeOf(in, path);
  return readNpyRows(fileReader(in, path), size, path.string(), first, count);
}

std::string serializeNpy(const Array& array) {
  std::string descr;
  for (const DtypeInfo& d : kDtypes) {
    if (d.type == array.dataType()) {
      descr = fmt::format("{}{}{}", d.bytes == 1 ? '|' : '<', d.kind, d.bytes);
    }
  }
  if (descr.empty()) {
    throw Error(fmt::format("element type {} has no .npy dtype", dataTypeName(array.dataType())));
  }
  std::string shape = fmt::format("{}", fmt::join(array.shape(), ", "));
  if (array.rank() == 1) shape += ",";  // a one-element tuple: "(5,)"
  std::string header =
      fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': ({}), }}", descr, shape);
  // Pad so the data starts on a 64-byte boundary, as numpy does.
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header.push_back('\n');
  std::string out(kMagic);
  out.push_back('\x01');
  out.push_back('\x00');
  out.push_back(static_cast<char>(header.size() & 0xFF));
  out.push_back(static_cast<char>((header.size() >> 8) & 0xFF));
  out += header;
  out.append(reinterpret_cast<const char*>(array.bytes()), array.byteSize());
  return out;
}

void writeNpy(const std::filesystem::path& path, const Array& array) {
  std::string bytes = serializeNpy(array);
  std::filesystem::path temporary = path;
  temporary += ".tmp";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (!out) throw Error(ErrorKind::Input, path.string(), {}, "cannot create the file");
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out.flush()) throw Error(ErrorKind::Input, path.string(), {}, "cannot write the file");
  }
  std::error_code ec;
  std::filesystem::rename(temporary, path, ec);
  if (ec) {
    std::filesystem::remove(temporary, ec);
    throw Error(ErrorKind::Input, path.string(), {}, "cannot replace the file");
  }
}

}  // namespace qopt::interp
