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
  logNames_.clear();
  current_.clear();
  followers_.clear();
}

void NameMap::log(std::string_view from, const std::optional<std::string_view>& to) {
  LoggedMove entry{logNames_.size(), 0, static_cast<uint32_t>(from.size()), kGone};
  logNames_.append(from);
  if (to) {
    entry.toOffset = logNames_.size();
    entry.toSize = static_cast<uint32_t>(to->size());
    logNames_.append(*to);
  }
  log_.push_back(entry);
}

void NameMap::fold() const {
  std::string_view names = logNames_;
  for (const LoggedMove& entry : log_) {
    Move move{names.substr(entry.fromOffset, entry.fromSize), std::nullopt};
    if (entry.toSize != kGone) move.to = names.substr(entry.toOffset, entry.toSize);
    apply(move);
  }
  log_.clear();
  logNames_.clear();
}

// Every original name that followed the value called `from` now follows `to`. A name never seen
// before follows itself implicitly, so it is one of them.
void NameMap::apply(const Move& move) const {
  const std::string from(move.from);
  const std::optional<std::string> to =
      move.to ? std::optional<std::string>(*move.to) : std::nullopt;
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
  log(from->name(),
      to && !to->isAbsent() ? std::optional<std::string_view>(to->name()) : std::nullopt);
}

void NameMap::valueRenamed(Value* value, const std::string& oldName) {
  log(oldName, value->isAbsent() ? std::nullopt : std::optional<std::string_view>(value->name()));
}

void NameMap::nodeErased(Node* node) {
  for (Value* output : node->outputs()) {
    if (!output->isAbsent()) log(output->name(), std::nullopt);
  }
}

}  // namespace qopt
