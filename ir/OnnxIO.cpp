// The public entry points for reading and writing ONNX files.
#include "qopt/ir/OnnxIO.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>

#include <fmt/format.h>
#include <google/protobuf/arena.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include "AtomicFile.h"
#include "ExternalData.h"
#include "ProtoConvert.h"
#include "qopt/ir/Error.h"

namespace qopt {

namespace fs = std::filesystem;

namespace {

// The whole input file, mapped read-only: parsing reads it in place.
class MappedInput {
 public:
  explicit MappedInput(const fs::path& path) : name_(path.string()) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) fail(fmt::format("cannot open: {}", std::strerror(errno)));
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
      int error = errno;
      ::close(fd);
      fail(fmt::format("cannot open: {}", std::strerror(error)));
    }
    if (S_ISDIR(st.st_mode)) {
      ::close(fd);
      fail("is a folder, not a file");
    }
    size_ = static_cast<size_t>(st.st_size);
    if (size_ > 0) {
      data_ = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
      if (data_ == MAP_FAILED) {
        int error = errno;
        data_ = nullptr;
        ::close(fd);
        fail(fmt::format("cannot read: {}", std::strerror(error)));
      }
      ::madvise(data_, size_, MADV_SEQUENTIAL);
    }
    ::close(fd);
  }
  MappedInput(const MappedInput&) = delete;
  MappedInput& operator=(const MappedInput&) = delete;
  ~MappedInput() {
    if (data_) ::munmap(data_, size_);
  }
  std::string_view bytes() const { return {static_cast<const char*>(data_), size_}; }

 private:
  [[noreturn]] void fail(const std::string& cause) const {
    throw Error(ErrorKind::Input, name_, {}, cause);
  }
  std::string name_;
  void* data_ = nullptr;
  size_t size_ = 0;
};

fs::path folderOf(const fs::path& file) {
  return fs::absolute(file).parent_path();
}

void checkNotSource(const Model& model, const fs::path& path, const SaveOptions& options) {
  if (options.allowOverwriteSource || model.sourcePath.empty()) return;
  std::error_code ec;
  if (fs::equivalent(path, model.sourcePath, ec)) {
    throw Error(ErrorKind::Input, path.string(), {},
                "refusing to overwrite the file the model was read from");
  }
}

void checkSize(const detail::SplicedSerializer& serializer, const std::string& where) {
  if (serializer.size() > static_cast<uint64_t>(INT_MAX)) {
    throw Error(ErrorKind::Input, where, {},
                fmt::format("the model would take {} bytes, over protobuf's 2 GiB limit; save its "
                            "large tensors as external data (the SingleFile layout)",
                            serializer.size()));
  }
}

}  // namespace

std::unique_ptr<Model> loadModelFromBytes(std::string_view bytes, std::string_view displayName,
                                          const fs::path& baseDir, const LoadOptions& options) {
  detail::ImportContext context{std::string(displayName),
                                baseDir.empty() ? fs::current_path() : fs::absolute(baseDir),
                                options};
  google::protobuf::Arena arena;
  onnx::ModelProto& proto = detail::parseModelBytes(bytes, context, arena);
  return detail::importModelProto(std::move(proto), context);
}

std::unique_ptr<Model> loadModel(const fs::path& path, const LoadOptions& options) {
  MappedInput input(path);
  if (options.maxFileBytes != 0 && input.bytes().size() > options.maxFileBytes) {
    throw Error(ErrorKind::Input, path.string(), {},
                fmt::format("the file holds {} bytes, over the limit of {} (--max-model-bytes)",
                            input.bytes().size(), options.maxFileBytes));
  }
  return loadModelFromBytes(input.bytes(), path.string(), folderOf(path), options);
}

std::string serializeModel(const Model& model) {
  google::protobuf::Arena arena;
  auto& proto = *google::protobuf::Arena::CreateMessage<onnx::ModelProto>(&arena);
  detail::ProtoLoan loan;
  auto placer = detail::makeInlinePlacer();
  detail::ExportContext context{loan, *placer};
  detail::exportModelProto(model, proto, context);
  detail::SplicedSerializer serializer(proto, loan);
  checkSize(serializer, model.sourcePath);
  std::string bytes(static_cast<size_t>(serializer.size()), '\0');
  google::protobuf::io::ArrayOutputStream stream(bytes.data(), static_cast<int>(bytes.size()));
  if (!serializer.write(stream) || static_cast<uint64_t>(stream.ByteCount()) != serializer.size()) {
    throw Error(ErrorKind::Internal, model.sourcePath, {},
                "serialization wrote an unexpected size");
  }
  return bytes;
}

void saveModel(const Model& model, const fs::path& path, const SaveOptions& options) {
  const std::string where = path.string();
  checkNotSource(model, path, options);
  fs::path target = fs::absolute(path);
  std::error_code ec;
  if (!fs::is_directory(target.parent_path(), ec)) {
    throw Error(ErrorKind::Input, where, {},
                fmt::format("the folder '{}' does not exist", target.parent_path().string()));
  }
  if (fs::is_directory(target, ec)) throw Error(ErrorKind::Input, where, {}, "is a folder");

  // Build and size everything before the first byte is written: a model that cannot be saved
  // leaves no file behind.
  google::protobuf::Arena arena;
  auto& proto = *google::protobuf::Arena::CreateMessage<onnx::ModelProto>(&arena);
  detail::ProtoLoan loan;
  auto placer = detail::makeTensorPlacer(options, target);
  detail::ExportContext context{loan, *placer};
  try {
    detail::exportModelProto(model, proto, context);
  } catch (const Error& e) {
    throw e.withFile(where);
  }
  detail::SplicedSerializer serializer(proto, loan);
  checkSize(serializer, where);
  fs::path canonicalTarget = fs::weakly_canonical(target, ec);
  for (const fs::path& dataFile : placer->dataFiles()) {
    if (dataFile == canonicalTarget) {
      throw Error(ErrorKind::Input, where, {},
                  "the model file would replace one of its own external data files");
    }
  }

  placer->writeDataFiles();
  detail::AtomicFile file(target);
  if (!serializer.write(file.stream())) file.checkStream();
  file.checkStream();
  file.commit();
}

Tensor loadTensorProtoFromBytes(std::string_view bytes, std::string_view displayName,
                                const fs::path& baseDir) {
  detail::ImportContext context{
      std::string(displayName), baseDir.empty() ? fs::current_path() : fs::absolute(baseDir), {}};
  google::protobuf::Arena arena;
  onnx::TensorProto& proto = detail::parseTensorBytes(bytes, context, arena);
  return detail::importTensorProto(std::move(proto), context);
}

Tensor loadTensorProtoFile(const fs::path& path) {
  MappedInput input(path);
  return loadTensorProtoFromBytes(input.bytes(), path.string(), folderOf(path));
}

void saveTensorProtoFile(const Tensor& tensor, const fs::path& path) {
  onnx::TensorProto proto;
  detail::exportTensorProto(tensor, proto);
  if (proto.ByteSizeLong() > static_cast<size_t>(INT_MAX)) {
    throw Error(ErrorKind::Input, path.string(), fmt::format("tensor '{}'", tensor.name()),
                "over protobuf's 2 GiB limit");
  }
  writeFileAtomically(path, proto.SerializeAsString());
}

}  // namespace qopt
