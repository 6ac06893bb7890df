// NumPy .npy files (format versions 1 to 3) for interpreter inputs and outputs. Every numeric
// element type numpy has (float16/32/64, int8..64, uint8..64, bool) is read and written;
// bfloat16 and float8 have no numpy dtype and are refused with a clear error.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>

#include "qopt/interp/Array.h"

namespace qopt::interp {

/// Reads a .npy file; throws qopt::Error naming the file on any malformed content.
Array readNpy(const std::filesystem::path& path);
/// Parses .npy bytes; `displayName` names the source in errors.
Array parseNpy(std::string_view bytes, const std::string& displayName);

/// The shape a .npy file declares (only its header is read).
Shape readNpyShape(const std::filesystem::path& path);
/// Rows [first, first + count) along axis 0 of a .npy file, reading only them (a calibration
/// set stacked in one file is read a sample at a time). Throws qopt::Error naming the file.
Array readNpyRows(const std::filesystem::path& path, int64_t first, int64_t count);

/// Reads `count` bytes at `offset` of a stored .npy (a file, or a member of a .npz archive);
/// throws qopt::Error when it cannot.
using NpyReader = std::function<void(uint64_t offset, char* out, size_t count)>;
/// The same as readNpyShape and readNpyRows for a stored .npy of `size` bytes read through
/// `read`; `name` names it in errors.
Shape readNpyShape(const NpyReader& read, uint64_t size, const std::string& name);
Array readNpyRows(const NpyReader& read, uint64_t size, const std::string& name, int64_t first,
                  int64_t count);

/// The .npy bytes of `array` (version 1.0, C order, little-endian).
std::string serializeNpy(const Array& array);
/// Writes `array` to `path` (replaced whole: written to a temporary file, then renamed).
void writeNpy(const std::filesystem::path& path, const Array& array);

}  // namespace qopt::interp
