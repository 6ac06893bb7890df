#include "qopt/pass/Pass.h"

namespace qopt {

int64_t& Statistics::operator[](std::string_view name) {
  for (auto& [key, value] : counters_) {
    if (key == name) return value;
  }
  counters_.emplace_back(std::string(name), 0);
  return counters_.back().second;
}

int64_t Statistics::get(std::string_view name) const {
  for (const auto& [key, value] : counters_) {
    if (key == name) return value;
  }
  return 0;
}

void Statistics::merge(const Statistics& other) {
  for (const auto& [key, value] : other.counters_) (*this)[key] += value;
}

std::string_view remarkKindName(Remark::Kind kind) {
  switch (kind) {
    case Remark::Kind::Applied:
      return "applied";
    case Remark::Kind::Missed:
      return "missed";
    case Remark::Kind::Note:
      return "note";
  }
  return "note";
}

std::string Pass::printPipelineItem() const {
  if (optionList().empty()) return name_;
  return name_ + "{" + printOptions() + "}";
}

}  // namespace qopt
