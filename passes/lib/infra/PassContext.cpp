#include "qopt/pass/PassContext.h"

#include <algorithm>
#include <charconv>

#include <fmt/format.h>

#include "qopt/ir/Error.h"
#include "qopt/ir/Graph.h"

namespace qopt {

PassContext::PassContext() = default;
PassContext::~PassContext() = default;

void PassContext::setOriginalModel(std::unique_ptr<Model> model) {
  original_ = std::move(model);
}

void PassContext::invalidateModelAnalyses(const std::vector<std::string>& preserved) {
  std::erase_if(analyses_, [&](const auto& entry) {
    if (entry.second.scope != AnalysisScope::Model) return false;
    for (const std::string& key : preserved) {
      if (key == entry.first) return false;
    }
    return true;
  });
}

const std::vector<int64_t>* DataSettings::shapeFor(std::string_view name) const {
  for (const InputShape& shape : inputShapes) {
    if (shape.name == name) return &shape.dims;
  }
  return nullptr;
}

std::vector<InputShape> parseInputShapes(std::string_view text) {
  std::vector<InputShape> shapes;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find(',', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view entry = text.substr(pos, end - pos);
    pos = end + 1;
    auto bad = [&](const std::string& why) {
      return Error(ErrorKind::Usage, "", "",
                   fmt::format("--input-shapes: bad entry '{}': {} (expected name:1x3x224x224)",
                               entry, why));
    };
    size_t colon = entry.rfind(':');
    if (colon == std::string_view::npos || colon == 0) throw bad("no input name");
    InputShape shape{std::string(entry.substr(0, colon)), {}};
    std::string_view dims = entry.substr(colon + 1);
    size_t dpos = 0;
    while (true) {
      size_t x = dims.find('x', dpos);
      if (x == std::string_view::npos) x = dims.size();
      std::string_view piece = dims.substr(dpos, x - dpos);
      int64_t value = 0;
      auto [ptr, ec] = std::from_chars(piece.data(), piece.data() + piece.size(), value);
      if (piece.empty() || ec != std::errc() || ptr != piece.data() + piece.size() || value < 0) {
        throw bad(fmt::format("'{}' is not a dimension", piece));
      }
      shape.dims.push_back(value);
      if (x == dims.size()) break;
      dpos = x + 1;
    }
    for (const InputShape& other : shapes) {
      if (other.name == shape.name) throw bad("input given twice");
    }
    shapes.push_back(std::move(shape));
  }
  return shapes;
}

}  // namespace qopt
