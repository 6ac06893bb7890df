// Files that appear complete or not at all: written under a temporary name in the target's
// folder, flushed to disk, then renamed over the target. Private to libqopt.
#pragma once

#include <cstddef>
#include <filesystem>
#include <memory>
#include <string>

#include <google/protobuf/io/zero_copy_stream.h>

namespace qopt::detail {

class FileOutputStream;

class AtomicFile {
 public:
  /// Creates the temporary file next to `target`. Throws qopt::Error when that is impossible.
  explicit AtomicFile(std::filesystem::path target);
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  /// Removes the temporary file unless commit() succeeded.
  ~AtomicFile();

  void write(const void* data, size_t size);
  /// Zero bytes up to `offset` (the file must be shorter).
  void padTo(uint64_t offset);
  uint64_t size() const;
  /// Appends `length` bytes read from the open file `sourceFd` (kernel-side copy when possible).
  void appendFrom(int sourceFd, uint64_t length, const std::filesystem::path& sourceName);
  /// For protobuf serialization; large aliased writes go to the file without a copy.
  google::protobuf::io::ZeroCopyOutputStream& stream();
  /// Throws the error a failed write through stream() left.
  void checkStream() const;

  /// Flushes, syncs, renames over the target and syncs the folder.
  void commit();
  const std::filesystem::path& target() const { return target_; }

 private:
  [[noreturn]] void fail(const std::string& what, int error) const;

  std::filesystem::path target_;
  std::filesystem::path temp_;
  int fd_ = -1;
  std::unique_ptr<FileOutputStream> stream_;
  bool committed_ = false;
};

/// Copies `source` to `target` atomically (kernel-side copy where the system allows).
void copyFileAtomically(const std::filesystem::path& source, const std::filesystem::path& target);

}  // namespace qopt::detail
