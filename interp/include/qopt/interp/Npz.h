// NumPy .npz archives (numpy.savez and numpy.savez_compressed): a zip archive of .npy members,
// one per array, read with libzip. Members are read a row range at a time, so a calibration set
// stacked into one archive is never held whole: a stored member is read where the rows lie, a
// compressed one is inflated forward from where the last read stopped (samples are read in order).
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "qopt/interp/Array.h"

namespace qopt::interp {

class NpzArchive {
 public:
  /// Opens the archive and lists its .npy members. Throws qopt::Error (Input) naming the file
  /// when it is not a zip archive, is damaged, or holds a member that is not a .npy file.
  explicit NpzArchive(const std::filesystem::path& path);
  ~NpzArchive();
  NpzArchive(NpzArchive&&) noexcept;
  NpzArchive& operator=(NpzArchive&&) noexcept;

  const std::filesystem::path& path() const { return path_; }
  /// The arrays' names (member names without ".npy"), in archive order.
  const std::vector<std::string>& names() const { return names_; }
  bool contains(const std::string& name) const;

  /// The shape array `name` declares (its header only is read).
  Shape shape(const std::string& name) const;
  /// The whole array `name`.
  Array read(const std::string& name) const;
  /// Rows [first, first + count) along axis 0 of array `name`.
  Array readRows(const std::string& name, int64_t first, int64_t count) const;

 private:
  struct State;
  std::filesystem::path path_;
  std::vector<std::string> names_;
  std::unique_ptr<State> state_;
};

}  // namespace qopt::interp
