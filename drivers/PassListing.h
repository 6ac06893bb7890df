// --list-passes and --pass-doc: every registered pass, and fixpoint(...), with its summary and
// options (type, default, help), as plain text or as the generated part of docs/passes/NAME.md.
// Both formats come from one walk over the passes and their options.
#pragma once

#include <iosfwd>
#include <string_view>

#include "qopt/pass/PassRegistry.h"

namespace qopt {

enum class ListFormat {
  Text,      // one line per pass, one indented line per option
  Markdown,  // per pass: a heading, the summary and a table of the options
};

/// Every pass (sorted by name), then fixpoint(...). `showOrigins` adds, in Text, the module each
/// pass came from. In Markdown the entries are printPassDoc's, separated by a blank line.
void printPassList(const PassRegistry& registry, std::ostream& out, bool showOrigins,
                   ListFormat format = ListFormat::Text);

/// The generated part of docs/passes/<name>.md: the heading, the summary and the options of the
/// pass named, or of fixpoint(...) for "fixpoint". Throws qopt::Error (Usage) for any other name,
/// with a did-you-mean and the valid names.
void printPassDoc(const PassRegistry& registry, std::string_view name, std::ostream& out);

}  // namespace qopt
