// Which value became which: maps the tensor names of the input model to the names of the values
// that now stand for them, so that verification and reports can match tensors across passes.
//
// The pass manager installs the map as a ModelObserver on the model while a pipeline runs, so
// passes need not record anything: Value::replaceAllUsesWith moves every original name that
// followed the replaced value to its replacement, Value::setName follows renames, and erasing a
// node marks the originals that followed its outputs as removed. Only changes are stored: a name
// never touched maps to itself. While passes run, a change costs one append to a log; the log is
// folded into the map when someone asks (verify, reports), so passes pay no hash lookups. The log
// keeps the names' characters in one buffer and fixed-size entries pointing into it: a pass that
// erases a million nodes appends a million entries, and a log of std::string pairs would
// allocate per entry and move every string each time the log grows.
//
// Initializers and graph inputs removed without replacement (Graph::eraseInitializer) are not
// announced; their name then maps to itself but no longer exists in the model. Callers look the
// current name up in the model and treat a missing value as removed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "qopt/ir/Graph.h"

namespace qopt {

class NameMap : public ModelObserver {
 public:
  /// The name of the value that stands for `original` now, or nullopt when it was removed.
  std::optional<std::string> currentName(std::string_view original) const;
  /// Every name whose mapping is not the identity, sorted by name: (name, current or nullopt).
  /// May include names created by passes along the way; filter by the input's names.
  std::vector<std::pair<std::string, std::optional<std::string>>> changes() const;
  void clear();

  void valueReplaced(Value* from, Value* to) override;
  void valueRenamed(Value* value, const std::string& oldName) override;
  void nodeErased(Node* node) override;

 private:
  // The value called `from` is now called `to` (nullopt: it is gone).
  struct Move {
    std::string_view from;
    std::optional<std::string_view> to;
  };
  // A logged move: the names are ranges of logNames_ (toSize == kGone: removed).
  struct LoggedMove {
    size_t fromOffset;
    size_t toOffset;
    uint32_t fromSize;
    uint32_t toSize;
  };
  static constexpr uint32_t kGone = UINT32_MAX;
  void log(std::string_view from, const std::optional<std::string_view>& to);
  void fold() const;
  void apply(const Move& move) const;

  mutable std::vector<LoggedMove> log_;
  mutable std::string logNames_;
  mutable std::unordered_map<std::string, std::optional<std::string>> current_;  // original -> now
  mutable std::unordered_map<std::string, std::vector<std::string>> followers_;  // now -> originals
};

}  // namespace qopt
