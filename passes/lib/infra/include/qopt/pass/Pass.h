// A pass: a name, a one-line summary, typed options (see Options.h) and run().
//
//   class DcePass : public qopt::Pass {
//    public:
//     DcePass() : Pass("dce", "Removes nodes and initializers nothing uses") {}
//     qopt::PassResult run(qopt::Model& model, qopt::PassContext& context) override;
//    private:
//     qopt::Option<bool> recurse_{*this, "recurse", true, "Also clean subgraphs"};
//   };
//
// run() returns whether the model changed, statistics (counters such as "bn-folded: 52") and
// remarks (per node or tensor: what was done, or why something was left alone). The pass manager
// times passes, prints, verifies and reports around run(); passes do none of that themselves.
// A pass instance belongs to one pipeline position; it may keep state between runs only through
// its options (a fixpoint runs the same instance several times).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "qopt/pass/Options.h"

namespace qopt {

class Graph;
class Model;
class PassContext;

/// Named counters in first-use order.
class Statistics {
 public:
  /// The counter `name`, created at 0.
  int64_t& operator[](std::string_view name);
  void add(std::string_view name, int64_t delta = 1) { (*this)[name] += delta; }
  /// 0 when the counter was never touched.
  int64_t get(std::string_view name) const;
  bool empty() const { return counters_.empty(); }
  const std::vector<std::pair<std::string, int64_t>>& entries() const { return counters_; }
  /// Adds every counter of `other` to this one.
  void merge(const Statistics& other);

 private:
  std::vector<std::pair<std::string, int64_t>> counters_;
};

struct Remark {
  enum class Kind {
    Applied,  // the pass changed this node or tensor
    Missed,   // the pass looked at it and left it alone; the message says why
    Note,     // anything else worth showing in a report
  };
  Kind kind = Kind::Note;
  std::string subject;  // "node 'conv1' (Conv)", "tensor 'x'"
  std::string message;
};

/// "applied", "missed", "note".
std::string_view remarkKindName(Remark::Kind kind);

struct PassResult {
  bool changed = false;
  Statistics statistics;
  std::vector<Remark> remarks;

  void applied(std::string subject, std::string message) {
    remarks.push_back({Remark::Kind::Applied, std::move(subject), std::move(message)});
  }
  void missed(std::string subject, std::string message) {
    remarks.push_back({Remark::Kind::Missed, std::move(subject), std::move(message)});
  }
  void note(std::string subject, std::string message) {
    remarks.push_back({Remark::Kind::Note, std::move(subject), std::move(message)});
  }
};

/// A property of the model that a pass may need before it can do anything (a quantized model for
/// the passes that measure or correct quantized layers). The pass manager checks a pipeline's
/// needs before it runs any pass, so a pipeline that cannot work fails at once with the pass and
/// the remedy named, and again before each pass runs.
enum class ModelProperty {
  Quantized,  // quantized layers: QuantizeLinear/DequantizeLinear, QLinear*, integer kernels
};

/// "a quantized model" for messages.
std::string_view modelPropertyName(ModelProperty property);
/// Whether `model` (its subgraphs included) has `property`.
bool modelHas(const Model& model, ModelProperty property);

struct Requirement {
  ModelProperty property;
  /// What gives the model the property, said to the user: "run insert-qdq before it".
  std::string remedy;
};

class Pass : public OptionSet {
 public:
  /// `name`: lower-case words joined by '-'; `summary`: one line, no final period.
  Pass(std::string name, std::string summary)
      : OptionSet("pass '" + name + "'"), name_(std::move(name)), summary_(std::move(summary)) {}

  const std::string& name() const { return name_; }
  const std::string& summary() const { return summary_; }

  /// Transforms `model`. Throws qopt::Error for problems the user must fix (the message names
  /// the node or tensor and the cause); never leaves the model structurally invalid.
  virtual PassResult run(Model& model, PassContext& context) = 0;

  /// A pass that compares against the input model (context.originalModel()) says so here; the
  /// pass manager then keeps a snapshot of the input, which it otherwise does not pay for.
  virtual bool needsOriginalModel() const { return false; }

  /// A pass whose job is to check the model (verify, check-trt) and that never changes it says
  /// so here. A failed check it raises (ErrorKind::Verification) is a verdict on a model every
  /// earlier pass completed: the driver still writes that model and the reports, then exits 1.
  /// The same kind raised by any other pass ends the run with nothing written, since that pass
  /// may have stopped halfway through its change.
  virtual bool isCheck() const { return false; }

  /// What the model must have when this pass runs; a pass that gives the model a property says
  /// so in provides(), so that a pipeline running it first satisfies the passes after it.
  virtual std::vector<Requirement> requirements() const { return {}; }
  virtual std::vector<ModelProperty> provides() const { return {}; }

  /// Whether the pass works inside If/Loop/Scan bodies as in the main graph (a GraphPass always
  /// does). One that sees the main graph only says so (false): the pass manager then warns, at
  /// default verbosity and naming the nodes that hold bodies, whenever it runs on a model that
  /// has any, so that what it left untouched is never silent.
  virtual bool entersBodies() const { return true; }

  /// The model analyses (PassContext::AnalysisScope::Model) that stay valid when this pass
  /// changes the model; the pass manager drops the others after it ran and changed the model.
  virtual std::vector<std::string> preservedAnalyses() const { return {}; }

  /// `name{key=value ...}` with every option (defaults included): the canonical form.
  std::string printPipelineItem() const;

 private:
  std::string name_;
  std::string summary_;
};

/// A pass whose work is local to one graph, run on the main graph and then on every If/Loop/Scan
/// body nested in it, the way MLIR's nested pass managers run an operation pass on every region
/// and ONNX Runtime's graph transformers recurse into subgraphs. runOnGraph() may read values of
/// enclosing graphs (a body's outer-scope reads) but changes only nodes of the graph it is given,
/// so the bodies of a graph are listed after that graph's run: a body its run removed (an If it
/// folded) is not visited, one it created is.
///
///   class MyPass : public qopt::GraphPass {
///    public:
///     MyPass() : GraphPass("my-pass", "Does something in every graph") {}
///     qopt::PassResult runOnGraph(qopt::Graph& graph, qopt::PassContext& context) override;
///   };
class GraphPass : public Pass {
 public:
  using Pass::Pass;

  /// The pass's work on one graph: the main graph or a body. Results of all graphs are merged
  /// (statistics added, remarks in visiting order, changed if any graph changed).
  virtual PassResult runOnGraph(Graph& graph, PassContext& context) = 0;

  /// Model-wide work before the first graph (parameters folded everywhere, per-run state reset);
  /// its result is merged in first.
  virtual PassResult prepare(Model& /*model*/, PassContext& /*context*/) { return {}; }

  /// prepare(), then runOnGraph() on the main graph and every body: pre-order, graphs in node
  /// order, a node's bodies in attribute order.
  PassResult run(Model& model, PassContext& context) final;

  bool entersBodies() const final { return true; }
};

}  // namespace qopt
