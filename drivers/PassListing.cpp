#include "PassListing.h"

#include <memory>
#include <ostream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "qopt/ir/Error.h"
#include "qopt/pass/Pipeline.h"
#include "qopt/pass/Suggest.h"

namespace qopt {

namespace {

constexpr std::string_view kFixpointName = "fixpoint";

// One entry of the listing: a registered pass, or the fixpoint(...) construct.
struct Entry {
  std::string name;     // what --pass-doc takes
  std::string spelled;  // how a pipeline writes it
  std::string summary;
  std::string origin;  // empty for fixpoint
  std::unique_ptr<OptionSet> options;
};

Entry passEntry(const PassInfo& info) {
  return {info.name, info.name, info.summary, info.origin, info.factory()};
}

Entry fixpointEntry() {
  return {std::string(kFixpointName), "fixpoint(<pipeline>)",
          "Runs the inner pipeline again until a round changes nothing", "",
          std::make_unique<FixpointGroup>()};
}

// Inside a Markdown table cell: '|' would end the cell (in code spans too).
std::string cell(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '|') out += '\\';
    out += c;
  }
  return out;
}

// Prose (a help text, a summary): '<' would open an HTML tag, and backslashes escape.
std::string prose(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '|' || c == '<' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

// Inline code, delimited so that a backtick inside does not end it.
std::string code(std::string_view text) {
  std::string fence = text.find('`') == std::string_view::npos ? "`" : "``";
  std::string pad = fence.size() > 1 ? " " : "";
  return cell(fence + pad + std::string(text) + pad + fence);
}

std::string textHeader(const Entry& entry, bool showOrigins) {
  std::string out = fmt::format("{}: {}\n", entry.spelled, entry.summary);
  if (showOrigins && !entry.origin.empty()) out += fmt::format("  from {}\n", entry.origin);
  return out;
}

std::string markdownHeader(const Entry& entry) {
  std::string summary = entry.spelled == entry.name
                            ? prose(entry.summary)
                            : fmt::format("{}: {}", code(entry.spelled), prose(entry.summary));
  std::string out = fmt::format("# {}\n\n{}\n\n", entry.name, summary);
  if (entry.options->optionList().empty()) return out + "No options.\n";
  return out + "| option | type | default | what it does |\n| --- | --- | --- | --- |\n";
}

std::string textRow(const OptionBase& option) {
  std::string type = option.typeName();
  std::vector<std::string> choices = option.choices();
  if (!choices.empty()) type += fmt::format(" {}", fmt::join(choices, "|"));
  return fmt::format("  {} ({}, default {}): {}\n", option.name(), type,
                     formatOptionValue(option.defaultValue()), option.help());
}

std::string markdownRow(const OptionBase& option) {
  std::string type = code(option.typeName());
  std::vector<std::string> choices = option.choices();
  if (!choices.empty()) {
    std::vector<std::string> quoted;
    for (const std::string& choice : choices) quoted.push_back(code(choice));
    type += fmt::format(": {}", fmt::join(quoted, ", "));
  }
  return fmt::format("| {} | {} | {} | {} |\n", code(option.name()), type,
                     code(formatOptionValue(option.defaultValue())), prose(option.help()));
}

// The one walk over an entry's options, in either format.
void printEntry(const Entry& entry, ListFormat format, bool showOrigins, std::ostream& out) {
  const bool text = format == ListFormat::Text;
  out << (text ? textHeader(entry, showOrigins) : markdownHeader(entry));
  for (const OptionBase* option : entry.options->optionList()) {
    out << (text ? textRow(*option) : markdownRow(*option));
  }
}

// The names --pass-doc takes: the registered passes, sorted, then "fixpoint".
std::vector<std::string> documentedNames(const PassRegistry& registry) {
  std::vector<std::string> names = registry.names();
  names.emplace_back(kFixpointName);
  return names;
}

}  // namespace

void printPassList(const PassRegistry& registry, std::ostream& out, bool showOrigins,
                   ListFormat format) {
  bool first = true;
  auto print = [&](const Entry& entry) {
    if (format == ListFormat::Markdown && !first) out << '\n';
    first = false;
    printEntry(entry, format, showOrigins, out);
  };
  for (const PassInfo* info : registry.passes()) print(passEntry(*info));
  print(fixpointEntry());
}

void printPassDoc(const PassRegistry& registry, std::string_view name, std::ostream& out) {
  if (name == kFixpointName) {
    printEntry(fixpointEntry(), ListFormat::Markdown, false, out);
    return;
  }
  const PassInfo* info = registry.find(name);
  if (!info) {
    std::vector<std::string> valid = documentedNames(registry);
    throw Error(fmt::format("--pass-doc: unknown pass '{}'{} (valid names: {})", name,
                            didYouMean(name, valid), fmt::join(valid, ", ")),
                ErrorKind::Usage);
  }
  printEntry(passEntry(*info), ListFormat::Markdown, false, out);
}

}  // namespace qopt
