#include "qopt/pass/PassRegistry.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "qopt/ir/Error.h"
#include "qopt/pass/Suggest.h"

namespace qopt {

namespace {

// Pass names are bare words of the pipeline grammar; "fixpoint" is the grammar's own.
void checkName(const std::string& name, const std::string& origin) {
  bool ok = !name.empty() && name != "fixpoint";
  for (char c : name) {
    bool word = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                c == '-' || c == '_' || c == '.' || c == ':';
    ok = ok && word;
  }
  if (!ok) {
    throw Error(ErrorKind::Usage, origin, "",
                fmt::format("invalid pass name '{}' (use letters, digits and '-', '_', '.', ':'; "
                            "'fixpoint' is reserved)",
                            name));
  }
}

}  // namespace

void PassRegistry::add(PassFactory factory) {
  if (!factory) throw Error(ErrorKind::Usage, origin_, "", "registered a null pass factory");
  std::unique_ptr<Pass> sample = factory();
  if (!sample) throw Error(ErrorKind::Usage, origin_, "", "a pass factory returned no pass");
  checkName(sample->name(), origin_);
  if (const PassInfo* existing = find(sample->name())) {
    throw Error(ErrorKind::Usage, "", fmt::format("pass '{}'", sample->name()),
                fmt::format("registered twice: by {} and by {}", existing->origin, origin_));
  }
  auto info = std::make_unique<PassInfo>();
  info->name = sample->name();
  info->summary = sample->summary();
  info->origin = origin_;
  info->factory = std::move(factory);
  passes_.push_back(std::move(info));
}

void PassRegistry::merge(PassRegistry&& other) {
  for (const auto& info : other.passes_) {
    if (const PassInfo* existing = find(info->name)) {
      throw Error(ErrorKind::Usage, "", fmt::format("pass '{}'", info->name),
                  fmt::format("registered twice: by {} and by {}", existing->origin, info->origin));
    }
  }
  for (auto& info : other.passes_) passes_.push_back(std::move(info));
  other.passes_.clear();
}

const PassInfo* PassRegistry::find(std::string_view name) const {
  for (const auto& info : passes_) {
    if (info->name == name) return info.get();
  }
  return nullptr;
}

std::unique_ptr<Pass> PassRegistry::create(std::string_view name) const {
  const PassInfo* info = find(name);
  if (!info) {
    std::vector<std::string> known = names();
    std::string list = known.empty() ? "no passes are registered"
                                     : fmt::format("known passes: {}", fmt::join(known, ", "));
    throw Error(ErrorKind::Usage, "", "",
                fmt::format("unknown pass '{}'{} ({})", name, didYouMean(name, known), list));
  }
  std::unique_ptr<Pass> pass = info->factory();
  if (!pass || pass->name() != info->name) {
    throw Error(ErrorKind::Internal, info->origin, fmt::format("pass '{}'", info->name),
                "the pass factory returned a different pass than it registered");
  }
  return pass;
}

std::vector<const PassInfo*> PassRegistry::passes() const {
  std::vector<const PassInfo*> result;
  for (const auto& info : passes_) result.push_back(info.get());
  std::sort(result.begin(), result.end(),
            [](const PassInfo* a, const PassInfo* b) { return a->name < b->name; });
  return result;
}

std::vector<std::string> PassRegistry::names() const {
  std::vector<std::string> result;
  for (const PassInfo* info : passes()) result.push_back(info->name);
  return result;
}

}  // namespace qopt
