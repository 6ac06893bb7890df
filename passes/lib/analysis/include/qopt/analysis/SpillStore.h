// What a pass must keep of every sample (the float model's outputs that several candidates are
// compared with): held in memory up to a budget, the rest written to an unnamed temporary file
// and read back when asked for. A reference output is then computed once per sample however
// large the data set, and memory stays bounded.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <vector>

#include "qopt/interp/Array.h"

namespace qopt::analysis {

class SpillStore {
 public:
  /// Keeps up to `memoryBytes` of arrays in memory.
  explicit SpillStore(uint64_t memoryBytes);
  ~SpillStore();
  SpillStore(SpillStore&&) noexcept;
  SpillStore& operator=(SpillStore&&) noexcept;

  /// Stores the arrays of the next entry (tensors of fixed-size types; anything else stays in
  /// memory whatever the budget). Throws qopt::Error when the temporary file cannot be written.
  void push(std::vector<interp::Array> arrays);
  /// The arrays of entry `index` (shared with the store when held in memory).
  std::vector<interp::Array> get(size_t index) const;
  size_t size() const { return entries_.size(); }
  /// Bytes written to the temporary file.
  uint64_t spilledBytes() const { return fileBytes_; }

 private:
  struct Entry {
    std::vector<interp::Array> held;  // in memory, or empty when spilled
    bool spilled = false;
    uint64_t offset = 0;
    std::vector<DataType> types;
    std::vector<interp::Shape> shapes;
  };
  uint64_t budget_;
  uint64_t heldBytes_ = 0;
  uint64_t fileBytes_ = 0;
  std::vector<Entry> entries_;
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file_{nullptr, &std::fclose};
};

}  // namespace qopt::analysis
