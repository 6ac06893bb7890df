#include "qopt/analysis/SpillStore.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "qopt/ir/Error.h"

namespace qopt::analysis {

namespace {

bool spillable(const interp::Array& array) {
  return array.isTensor() && array.valid() && array.dataType() != DataType::String;
}

Error fileError(const char* doing) {
  return Error(ErrorKind::Input, "temporary file", {},
               fmt::format("{} the samples' spilled data failed: {} (set TMPDIR to a folder with "
                           "room, or raise --max-memory)",
                           doing, std::strerror(errno)));
}

// Moves `bytes` bytes between `data` and the file at `offset` with pwrite or pread (`io`), which
// may move fewer than asked at a time.
template <class Data, class Io>
void transfer(int fd, Data* data, size_t bytes, uint64_t offset, Io io, const char* doing) {
  while (bytes > 0) {
    const ssize_t moved = io(fd, data, bytes, static_cast<off_t>(offset));
    if (moved <= 0) throw fileError(doing);
    data += moved;
    bytes -= static_cast<size_t>(moved);
    offset += static_cast<uint64_t>(moved);
  }
}

}  // namespace

SpillStore::SpillStore(uint64_t memoryBytes) : budget_(memoryBytes) {}
SpillStore::~SpillStore() = default;
SpillStore::SpillStore(SpillStore&&) noexcept = default;
SpillStore& SpillStore::operator=(SpillStore&&) noexcept = default;

void SpillStore::push(std::vector<interp::Array> arrays) {
  Entry entry;
  uint64_t bytes = 0;
  bool canSpill = true;
  for (const interp::Array& a : arrays) {
    bytes += a.valid() && a.isTensor() ? a.byteSize() : 0;
    canSpill = canSpill && spillable(a);
  }
  if (!canSpill || heldBytes_ + bytes <= budget_) {
    heldBytes_ += bytes;
    entry.held = std::move(arrays);
    entries_.push_back(std::move(entry));
    return;
  }
  if (!file_) {
    file_.reset(std::tmpfile());
    if (!file_) throw fileError("creating a temporary file for");
  }
  const int fd = fileno(file_.get());
  entry.spilled = true;
  entry.offset = fileBytes_;
  for (const interp::Array& a : arrays) {
    entry.types.push_back(a.dataType());
    entry.shapes.push_back(a.shape());
    transfer(fd, reinterpret_cast<const char*>(a.bytes()), a.byteSize(), fileBytes_, pwrite,
             "writing");
    fileBytes_ += a.byteSize();
  }
  entries_.push_back(std::move(entry));
}

std::vector<interp::Array> SpillStore::get(size_t index) const {
  const Entry& entry = entries_.at(index);
  if (!entry.spilled) return entry.held;
  const int fd = fileno(file_.get());
  std::vector<interp::Array> arrays;
  uint64_t offset = entry.offset;
  for (size_t i = 0; i < entry.types.size(); ++i) {
    interp::Array a(entry.types[i], entry.shapes[i]);
    transfer(fd, reinterpret_cast<char*>(a.bytes()), a.byteSize(), offset, pread, "reading back");
    offset += a.byteSize();
    arrays.push_back(std::move(a));
  }
  return arrays;
}

}  // namespace qopt::analysis
