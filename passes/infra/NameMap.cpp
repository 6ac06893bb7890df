#include "qopt/pass/NameMap.h"

#include <algorithm>

namespace qopt {

std::optional<std::string> NameMap::currentName(std::string_view original) const {
  fold();
  auto it = current_.find(std::string(original));
  if (it == current_.end()) return std::string(original);
  return it->second;
}

std::vector<std::pair<std::string, std::optional<std::string>>> NameMap::changes() const {
  fold();
  std::vector<std::pair<std::string, std::optional<std::string>>> result;
  for (const auto& [original, now] : current_) {
    if (now != original) result.emplace_back(original, now);
  }
  std::sort(result.begin(), result.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  return result;
}

void NameMap::clear() {
  log_.clear();
  current_.clear();
  followers_.clear();
}

void NameMap::fold() const {
  for (const Move& move : log_) apply(move);
  log_.clear();
}

// Every original name that followed the value called `from` now follows `to`. A name never seen
// before follows itself implicitly, so it is one of them.
void NameMap::apply(const Move& move) const {
  const std::string& from = move.from;
  const std::optional<std::string>& to = move.to;
  if (from.empty() || (to && *to == from)) return;
  std::vector<std::string> originals;
  if (auto it = followers_.find(from); it != followers_.end()) {
    originals = std::move(it->second);
    followers_.erase(it);
  }
  if (!current_.contains(from)) originals.push_back(from);
  for (const std::string& original : originals) {
    current_[original] = to;
    if (to) followers_[*to].push_back(original);
  }
}

void NameMap::valueReplaced(Value* from, Value* to) {
  if (from->isAbsent()) return;
  log_.push_back({from->name(),
                  to && !to->isAbsent() ? std::optional<std::string>(to->name()) : std::nullopt});
}

void NameMap::valueRenamed(Value* value, const std::string& oldName) {
  log_.push_back(
      {oldName, value->isAbsent() ? std::nullopt : std::optional<std::string>(value->name())});
}

void NameMap::nodeErased(Node* node) {
  for (Value* output : node->outputs()) {
    if (!output->isAbsent()) log_.push_back({output->name(), std::nullopt});
  }
}

}  // namespace qopt
