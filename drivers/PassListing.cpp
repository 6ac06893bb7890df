#include "PassListing.h"

#include <ostream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "qopt/pass/Pipeline.h"

namespace qopt {

namespace {

void printOptions(const OptionSet& options, std::ostream& out) {
  for (const OptionBase* option : options.optionList()) {
    std::string type = option->typeName();
    std::vector<std::string> choices = option->choices();
    if (!choices.empty()) type += fmt::format(" {}", fmt::join(choices, "|"));
    out << fmt::format("  {} ({}, default {}): {}\n", option->name(), type,
                       formatOptionValue(option->defaultValue()), option->help());
  }
}

}  // namespace

void printPassList(const PassRegistry& registry, std::ostream& out, bool showOrigins) {
  for (const PassInfo* info : registry.passes()) {
    out << info->name << ": " << info->summary << '\n';
    if (showOrigins) out << "  from " << info->origin << '\n';
    printOptions(*info->factory(), out);
  }
  out << "fixpoint(<pipeline>): Runs the inner pipeline again until a round changes nothing\n";
  printOptions(FixpointGroup(), out);
}

}  // namespace qopt
