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
    const auto* data = reinterpret_cast<const char*>(a.bytes());
    size_t left = a.byteSize();
    while (left > 0) {
      const ssize_t wrote = pwrite(fd, data, left, static_cast<off_t>(fileBytes_));
      if (wrote <= 0) throw fileError("writing");
      data += wrote;
      left -= static_cast<size_t>(wrote);
      fileBytes_ += static_cast<uint64_t>(wrote);
    }
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
    auto* data = reinterpret_cast<char*>(a.bytes());
    size_t left = a.byteSize();
    while (left > 0) {
      const ssize_t got = pread(fd, data, left, static_cast<off_t>(offset));
      if (got <= 0) throw fileError("reading back");
      data += got;
      left -= static_cast<size_t>(got);
      offset += static_cast<uint64_t>(got);
    }
    arrays.push_back(std::move(a));
  }
  return arrays;
}

}  // namespace qopt::analysis
