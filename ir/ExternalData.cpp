// Where external data may live, and the three ways saving places tensor bytes (see
// SaveOptions::ExternalLayout). Every data file is written atomically inside the output's folder.
#include "ExternalData.h"

#include <algorithm>
#include <map>
#include <system_error>

#include <fmt/format.h>

#include "AtomicFile.h"
#include "qopt/ir/Error.h"

namespace qopt::detail {

namespace fs = std::filesystem;

namespace {

// Tensors from this size on start at a page boundary, so that readers can map them directly.
constexpr uint64_t kPageAlignFrom = uint64_t{64} << 10;
constexpr uint64_t kPage = 4096;
constexpr uint64_t kSmallAlign = 64;

uint64_t alignUp(uint64_t value, uint64_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

std::vector<std::pair<std::string, std::string>> entriesOf(const ExternalData& ext) {
  if (!ext.entries.empty()) return ext.entries;
  std::vector<std::pair<std::string, std::string>> entries{{"location", ext.location}};
  if (ext.offset) entries.emplace_back("offset", std::to_string(*ext.offset));
  if (ext.length) entries.emplace_back("length", std::to_string(*ext.length));
  return entries;
}

class InlinePlacer final : public TensorPlacer {
 public:
  std::optional<std::vector<std::pair<std::string, std::string>>> place(const Tensor&,
                                                                        const Subject&) override {
    return std::nullopt;
  }
};

// Tensors read from external data go back to the same file names and offsets. Saving into the
// folder they came from writes nothing; saving elsewhere copies the data files there.
class KeepLayoutPlacer final : public TensorPlacer {
 public:
  KeepLayoutPlacer(fs::path outputDir, std::string where)
      : outputDir_(std::move(outputDir)), where_(std::move(where)) {}

  std::optional<std::vector<std::pair<std::string, std::string>>> place(
      const Tensor& tensor, const Subject& subjectOf) override {
    const std::optional<ExternalData>& ext = tensor.externalData();
    if (tensor.encoding() != TensorEncoding::External || !ext) return std::nullopt;
    std::string subject = subjectOf.str();
    fs::path target = resolveExternalLocation(outputDir_, ext->location, where_, subject);
    fs::path source = resolveExternalLocation(ext->baseDir, ext->location, where_, subject);
    auto [it, inserted] = copies_.emplace(target, source);
    if (!inserted && it->second != source) {
      throw Error(ErrorKind::Input, where_, subject,
                  fmt::format("two different external data files would both be written to '{}'",
                              ext->location));
    }
    return entriesOf(*ext);
  }

  std::vector<fs::path> dataFiles() const override {
    std::vector<fs::path> files;
    for (const auto& [target, source] : copies_) files.push_back(target);
    return files;
  }

  void writeDataFiles() override {
    for (const auto& [target, source] : copies_) {
      std::error_code ec;
      if (target == source || fs::equivalent(target, source, ec)) continue;  // next to its data
      fs::create_directories(target.parent_path(), ec);
      copyFileAtomically(source, target);
    }
  }

 private:
  fs::path outputDir_;
  std::string where_;
  std::map<fs::path, fs::path> copies_;  // target -> source, in a fixed order
};

// Every tensor from the threshold up goes to one data file, in export order.
class SingleFilePlacer final : public TensorPlacer {
 public:
  SingleFilePlacer(fs::path outputDir, std::string fileName, uint64_t threshold, std::string where,
                   bool allowOverwriteSource)
      : fileName_(std::move(fileName)),
        threshold_(threshold),
        where_(std::move(where)),
        allowOverwriteSource_(allowOverwriteSource) {
    target_ = resolveExternalLocation(outputDir, fileName_, where_, "external data file");
  }

  std::optional<std::vector<std::pair<std::string, std::string>>> place(
      const Tensor& tensor, const Subject& subject) override {
    if (tensor.dataType() == DataType::String || tensor.dataType() == DataType::Undefined) {
      return std::nullopt;
    }
    std::shared_ptr<const Buffer> buffer = tensor.buffer();  // maps external data, reads nothing
    uint64_t size = buffer ? buffer->size() : 0;
    if (size == 0 || size < threshold_) return std::nullopt;
    if (const auto& ext = tensor.externalData()) {
      sources_.push_back(
          resolveExternalLocation(ext->baseDir, ext->location, where_, subject.str()));
    }
    uint64_t offset = alignUp(end_, size >= kPageAlignFrom ? kPage : kSmallAlign);
    end_ = offset + size;
    pieces_.push_back({std::move(buffer), offset});
    return std::vector<std::pair<std::string, std::string>>{{"location", fileName_},
                                                            {"offset", std::to_string(offset)},
                                                            {"length", std::to_string(size)}};
  }

  std::vector<fs::path> dataFiles() const override {
    if (pieces_.empty()) return {};
    return {target_};
  }

  void writeDataFiles() override {
    if (pieces_.empty()) return;
    if (!allowOverwriteSource_) {
      for (const fs::path& source : sources_) {
        std::error_code ec;
        if (fs::equivalent(source, target_, ec)) {
          throw Error(ErrorKind::Input, where_, {},
                      fmt::format("refusing to overwrite external data file '{}' that the model "
                                  "was read from; choose another data file name",
                                  fileName_));
        }
      }
    }
    AtomicFile file(target_);
    for (const Piece& piece : pieces_) {
      file.padTo(piece.offset);
      file.write(piece.buffer->data(), piece.buffer->size());
    }
    file.commit();
  }

 private:
  struct Piece {
    std::shared_ptr<const Buffer> buffer;
    uint64_t offset;
  };
  std::string fileName_;
  uint64_t threshold_;
  std::string where_;
  bool allowOverwriteSource_;
  fs::path target_;
  std::vector<Piece> pieces_;
  std::vector<fs::path> sources_;
  uint64_t end_ = 0;
};

}  // namespace

fs::path resolveExternalLocation(const fs::path& baseDir, const std::string& location,
                                 const std::string& where, const std::string& subject) {
  auto refuse = [&](const std::string& why) {
    throw Error(ErrorKind::Input, where, subject,
                fmt::format("path traversal: external data location '{}' {}", location, why));
  };
  if (location.empty())
    throw Error(ErrorKind::Input, where, subject, "external data location is empty");
  if (location.find('\0') != std::string::npos) refuse("contains a NUL character");
  fs::path relative(location);
  if (relative.is_absolute() || relative.has_root_directory() || relative.has_root_name()) {
    refuse("is an absolute path");
  }
  for (const fs::path& part : relative) {
    if (part == "..") refuse("leads out of the model's folder");
  }
  std::error_code ec;
  fs::path base = fs::weakly_canonical(baseDir.empty() ? fs::current_path() : baseDir, ec);
  fs::path full = ec ? fs::path() : fs::weakly_canonical(base / relative, ec);
  if (ec) {
    throw Error(
        ErrorKind::Input, where, subject,
        fmt::format("cannot resolve external data location '{}': {}", location, ec.message()));
  }
  // A symbolic link inside the folder may still point elsewhere: compare resolved paths.
  auto [baseEnd, fullPos] = std::mismatch(base.begin(), base.end(), full.begin(), full.end());
  bool inside = baseEnd == base.end() || (std::next(baseEnd) == base.end() && baseEnd->empty());
  if (!inside) refuse("leads out of the model's folder through a symbolic link");
  return full;
}

std::unique_ptr<TensorPlacer> makeInlinePlacer() {
  return std::make_unique<InlinePlacer>();
}

std::unique_ptr<TensorPlacer> makeTensorPlacer(const SaveOptions& options,
                                               const fs::path& outputPath) {
  fs::path outputDir = outputPath.parent_path();
  std::string where = outputPath.string();
  switch (options.layout) {
    case SaveOptions::ExternalLayout::Keep:
      return std::make_unique<KeepLayoutPlacer>(outputDir, where);
    case SaveOptions::ExternalLayout::SingleFile: {
      std::string fileName = options.externalFileName.empty()
                                 ? outputPath.filename().string() + ".data"
                                 : options.externalFileName;
      return std::make_unique<SingleFilePlacer>(outputDir, fileName, options.externalThreshold,
                                                where, options.allowOverwriteSource);
    }
    case SaveOptions::ExternalLayout::Inline:
      break;
  }
  return std::make_unique<InlinePlacer>();
}

}  // namespace qopt::detail
