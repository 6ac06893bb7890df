#include "AtomicFile.h"

#include <fcntl.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "qopt/ir/Error.h"
#include "qopt/ir/OnnxIO.h"

namespace qopt {

namespace detail {

// Buffers small writes; large aliased writes (tensor bytes) go to the file directly.
class FileOutputStream final : public google::protobuf::io::ZeroCopyOutputStream {
 public:
  explicit FileOutputStream(int fd) : fd_(fd), buffer_(new char[kBufferSize]) {}

  bool Next(void** data, int* size) override {
    if (used_ == kBufferSize && !flush()) return false;
    *data = buffer_.get() + used_;
    *size = static_cast<int>(kBufferSize - used_);
    used_ = kBufferSize;
    return true;
  }
  void BackUp(int count) override { used_ -= static_cast<size_t>(count); }
  int64_t ByteCount() const override { return static_cast<int64_t>(written_ + used_); }
  bool WriteAliasedRaw(const void* data, int size) override {
    return flush() && writeAll(data, static_cast<size_t>(size));
  }
  bool AllowsAliasing() const override { return true; }

  bool flush() {
    size_t pending = used_;
    used_ = 0;
    return writeAll(buffer_.get(), pending);
  }

  bool writeAll(const void* data, size_t size) {
    if (error_) return false;
    const char* p = static_cast<const char*>(data);
    while (size > 0) {
      // Linux writes at most about 2 GiB per call.
      size_t chunk = std::min<size_t>(size, size_t{1} << 30);
      ssize_t n = ::write(fd_, p, chunk);
      if (n < 0) {
        if (errno == EINTR) continue;
        error_ = errno;
        return false;
      }
      p += n;
      size -= static_cast<size_t>(n);
      written_ += static_cast<uint64_t>(n);
    }
    return true;
  }

  // Bytes written past the stream (kernel-side copies) still count for ByteCount.
  void addWritten(uint64_t bytes) { written_ += bytes; }
  int error() const { return error_; }
  void setError(int error) { error_ = error; }

 private:
  static constexpr size_t kBufferSize = size_t{1} << 20;
  int fd_;
  std::unique_ptr<char[]> buffer_;
  size_t used_ = 0;
  uint64_t written_ = 0;
  int error_ = 0;
};

namespace {

std::atomic<uint64_t> tempCounter{0};

std::filesystem::path folderOf(const std::filesystem::path& path) {
  std::filesystem::path folder = path.parent_path();
  return folder.empty() ? std::filesystem::path(".") : folder;
}

}  // namespace

AtomicFile::AtomicFile(std::filesystem::path target) : target_(std::move(target)) {
  std::filesystem::path folder = folderOf(target_);
  for (int attempt = 0; attempt < 100; ++attempt) {
    temp_ = folder / fmt::format(".{}.tmp-{}-{}", target_.filename().string(), ::getpid(),
                                 tempCounter.fetch_add(1));
    // 0666 lets the umask decide, as for any file the user creates.
    fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd_ >= 0) break;
    if (errno != EEXIST) {
      int error = errno;
      throw Error(
          ErrorKind::Input, target_.string(), {},
          fmt::format("cannot create a file in '{}': {}", folder.string(), std::strerror(error)));
    }
  }
  if (fd_ < 0) {
    throw Error(ErrorKind::Input, target_.string(), {}, "cannot create a temporary file");
  }
  stream_ = std::make_unique<FileOutputStream>(fd_);
}

AtomicFile::~AtomicFile() {
  if (committed_) return;
  if (fd_ >= 0) ::close(fd_);
  ::unlink(temp_.c_str());
}

void AtomicFile::fail(const std::string& what, int error) const {
  throw Error(ErrorKind::Input, target_.string(), {},
              fmt::format("{}: {}", what, std::strerror(error)));
}

void AtomicFile::write(const void* data, size_t size) {
  if (!stream_->flush() || !stream_->writeAll(data, size)) fail("cannot write", stream_->error());
}

void AtomicFile::padTo(uint64_t offset) {
  static const char zeros[4096] = {};
  while (size() < offset) {
    write(zeros, static_cast<size_t>(std::min<uint64_t>(offset - size(), sizeof(zeros))));
  }
}

uint64_t AtomicFile::size() const {
  return static_cast<uint64_t>(stream_->ByteCount());
}

void AtomicFile::appendFrom(int sourceFd, uint64_t length,
                            const std::filesystem::path& sourceName) {
  if (!stream_->flush()) fail("cannot write", stream_->error());
  bool kernelCopy = true;
  while (length > 0) {
    size_t chunk = static_cast<size_t>(std::min<uint64_t>(length, uint64_t{1} << 30));
    ssize_t n = -1;
    if (kernelCopy) {
      n = ::copy_file_range(sourceFd, nullptr, fd_, nullptr, chunk, 0);
      if (n < 0 && (errno == EXDEV || errno == ENOSYS || errno == EINVAL || errno == EOPNOTSUPP)) {
        kernelCopy = false;
        continue;
      }
    } else {
      n = ::sendfile(fd_, sourceFd, nullptr, chunk);
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int error = errno;
      throw Error(ErrorKind::Input, target_.string(), {},
                  fmt::format("cannot copy '{}': {}", sourceName.string(), std::strerror(error)));
    }
    if (n == 0) {
      throw Error(ErrorKind::Input, target_.string(), {},
                  fmt::format("cannot copy '{}': the file became shorter while being copied",
                              sourceName.string()));
    }
    length -= static_cast<uint64_t>(n);
    stream_->addWritten(static_cast<uint64_t>(n));
  }
}

google::protobuf::io::ZeroCopyOutputStream& AtomicFile::stream() {
  return *stream_;
}

void AtomicFile::checkStream() const {
  if (stream_->error()) fail("cannot write", stream_->error());
}

void AtomicFile::commit() {
  if (!stream_->flush()) fail("cannot write", stream_->error());
  if (::fsync(fd_) != 0) fail("cannot write", errno);
  int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) fail("cannot write", errno);
  if (::rename(temp_.c_str(), target_.c_str()) != 0) fail("cannot replace the file", errno);
  committed_ = true;
  // The rename is durable only once the folder is synced too.
  int folder = ::open(folderOf(target_).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (folder >= 0) {
    ::fsync(folder);
    ::close(folder);
  }
}

void copyFileAtomically(const std::filesystem::path& source, const std::filesystem::path& target) {
  int in = ::open(source.c_str(), O_RDONLY | O_CLOEXEC);
  if (in < 0) {
    int error = errno;
    throw Error(ErrorKind::Input, source.string(), {},
                fmt::format("cannot read external data file: {}", std::strerror(error)));
  }
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{in};
  struct stat st {};
  if (::fstat(in, &st) != 0 || !S_ISREG(st.st_mode)) {
    throw Error(ErrorKind::Input, source.string(), {}, "external data is not a regular file");
  }
  AtomicFile out(target);
  out.appendFrom(in, static_cast<uint64_t>(st.st_size), source);
  out.commit();
}

}  // namespace detail

void writeFileAtomically(const std::filesystem::path& path, std::string_view bytes) {
  detail::AtomicFile file(path);
  file.write(bytes.data(), bytes.size());
  file.commit();
}

}  // namespace qopt
