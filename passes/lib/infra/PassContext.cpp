#include "qopt/pass/PassContext.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <string>
#include <thread>

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

uint64_t Resources::defaultMaxMemoryBytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long pageSize = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || pageSize <= 0) return uint64_t{4} << 30;
  return static_cast<uint64_t>(pages) * static_cast<uint64_t>(pageSize) / 2;
}

size_t Resources::threadCount() const {
  if (threads > 0) return threads;
  return std::max<size_t>(1, std::thread::hardware_concurrency());
}

uint64_t parseMemorySize(std::string_view text, std::string_view flag) {
  auto bad = [&](std::string_view why) {
    return Error(ErrorKind::Usage, "", "",
                 fmt::format("{}: bad size '{}': {} (expected e.g. 512M, 8G or a number of bytes)",
                             flag, text, why));
  };
  double number = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), number);
  if (ec != std::errc() || ptr == text.data()) throw bad("no number");
  std::string unit(ptr, text.data() + text.size());
  std::transform(unit.begin(), unit.end(), unit.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  if (unit.size() > 1 && unit.back() == 'B') unit.pop_back();  // "GB", "GiB" -> "G", "GI"
  if (unit.size() == 2 && unit[1] == 'I') unit.pop_back();
  double scale = 1;
  if (unit == "K") {
    scale = 1024.0;
  } else if (unit == "M") {
    scale = 1024.0 * 1024;
  } else if (unit == "G") {
    scale = 1024.0 * 1024 * 1024;
  } else if (unit == "T") {
    scale = 1024.0 * 1024 * 1024 * 1024;
  } else if (!unit.empty() && unit != "B") {
    throw bad(fmt::format("unknown unit '{}'", std::string(ptr, text.data() + text.size())));
  }
  const double bytes = number * scale;
  if (!(bytes >= 1) || !std::isfinite(bytes) || bytes > 1.8e19) throw bad("out of range");
  return static_cast<uint64_t>(bytes);
}

std::string formatBytes(uint64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  size_t unit = 0;
  while (value >= 1024 && unit + 1 < std::size(kUnits)) {
    value /= 1024;
    ++unit;
  }
  return unit == 0 ? fmt::format("{} B", bytes) : fmt::format("{:.3g} {}", value, kUnits[unit]);
}

const std::vector<int64_t>* DataSettings::shapeFor(std::string_view name) const {
  for (const InputShape& shape : inputShapes) {
    if (shape.name == name) return &shape.dims;
  }
  return nullptr;
}

namespace {

// Appends an entry of a per-input flag; naming an input twice is `bad`'s error.
template <class Entry, class Bad>
void appendOnce(std::vector<Entry>& entries, Entry entry, const Bad& bad) {
  for (const Entry& other : entries) {
    if (other.name == entry.name) throw bad("input given twice");
  }
  entries.push_back(std::move(entry));
}

}  // namespace

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
    appendOnce(shapes, std::move(shape), bad);
  }
  return shapes;
}

std::vector<InputValue> parseInputValues(std::string_view text) {
  std::vector<InputValue> out;
  // Entries split at commas outside brackets.
  std::vector<std::string_view> entries;
  size_t start = 0;
  int depth = 0;
  for (size_t i = 0; i <= text.size(); ++i) {
    if (i == text.size() || (text[i] == ',' && depth == 0)) {
      if (i > start) entries.push_back(text.substr(start, i - start));
      start = i + 1;
    } else if (text[i] == '[') {
      ++depth;
    } else if (text[i] == ']') {
      --depth;
    }
  }
  for (std::string_view entry : entries) {
    auto bad = [&](const std::string& why) {
      return Error(ErrorKind::Usage, "", "",
                   fmt::format("--input-values: bad entry '{}': {} (expected name=16000 or "
                               "name=[1,2,3])",
                               entry, why));
    };
    const size_t eq = entry.rfind('=');
    if (eq == std::string_view::npos || eq == 0) throw bad("no input name");
    InputValue value{std::string(entry.substr(0, eq)), {}};
    std::string_view list = entry.substr(eq + 1);
    const bool bracketed = list.size() >= 2 && list.front() == '[' && list.back() == ']';
    if (bracketed) list = list.substr(1, list.size() - 2);
    size_t pos = 0;
    while (true) {
      size_t comma = bracketed ? list.find(',', pos) : std::string_view::npos;
      if (comma == std::string_view::npos) comma = list.size();
      std::string piece(list.substr(pos, comma - pos));
      size_t used = 0;
      double number = 0;
      try {
        number = std::stod(piece, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (piece.empty() || used != piece.size()) {
        throw bad(fmt::format("'{}' is not a number", piece));
      }
      value.values.push_back(number);
      if (comma == list.size()) break;
      pos = comma + 1;
    }
    appendOnce(out, std::move(value), bad);
  }
  return out;
}

}  // namespace qopt
