// Pipelines: the passes to run, in order, each with its options.
//
// Grammar (the same for -p strings and --pipeline-file files):
//   pipeline := item (separator item)*
//   separator := ',' | newline            (so a file may hold one item per line)
//   item     := pass-name options? | 'fixpoint' '(' pipeline ')' options?
//   options  := '{' (key '=' value)* '}'  (pairs separated by blanks)
//   value    := scalar | '[' (scalar (',' scalar)*)? ']'
//   scalar   := bare word (no blanks and none of , = { } [ ] ( ) " #) | "double-quoted \" \\ "
// '#' starts a comment running to the end of the line. Blanks and newlines may appear between
// any two tokens inside braces, brackets and parentheses.
//
// fixpoint(p1,p2){max-iterations=8} runs p1,p2 repeatedly until an iteration changes nothing;
// when the cap is reached it warns and records the fact in its statistics.
//
// Every problem (syntax, unknown pass, unknown option, bad value) is reported before anything
// runs, as qopt::Error (Usage) located as "<source>:<line>:<col>".
//
// str() prints the canonical form: every option with its value, defaults included, which parses
// back to the same pipeline.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "qopt/pass/Options.h"
#include "qopt/pass/Pass.h"
#include "qopt/pass/PassRegistry.h"

namespace qopt {

class FixpointGroup;

/// One position of a pipeline: a pass, or a fixpoint group.
struct PipelineItem {
  std::unique_ptr<Pass> pass;
  std::unique_ptr<FixpointGroup> fixpoint;
};

class Pipeline {
 public:
  Pipeline() = default;
  Pipeline(Pipeline&&) = default;
  Pipeline& operator=(Pipeline&&) = default;

  std::vector<PipelineItem>& items() { return items_; }
  const std::vector<PipelineItem>& items() const { return items_; }
  bool empty() const { return items_.empty(); }
  void addPass(std::unique_ptr<Pass> pass);
  void addFixpoint(std::unique_ptr<FixpointGroup> group);

  /// Every pass, including those inside fixpoint groups, in order.
  void forEachPass(const std::function<void(const Pass&)>& fn) const;
  bool needsOriginalModel() const;

  /// The canonical form (see above).
  std::string str() const;

 private:
  std::vector<PipelineItem> items_;
};

/// fixpoint(...){max-iterations=N}
class FixpointGroup : public OptionSet {
 public:
  FixpointGroup() : OptionSet("fixpoint") {}
  Pipeline body;
  Option<int64_t> maxIterations{
      *this, "max-iterations", 8,
      "Stop after this many rounds even if the last one changed the model"};
  void validateOptions() const override;
  std::string str() const;
};

/// Parses `text`; `sourceName` names it in messages ("<pipeline>", a file path).
Pipeline parsePipeline(std::string_view text, const PassRegistry& registry,
                       std::string_view sourceName = "<pipeline>");
/// Reads and parses a pipeline file (errors located as file:line:col).
Pipeline parsePipelineFile(const std::filesystem::path& file, const PassRegistry& registry);

}  // namespace qopt
