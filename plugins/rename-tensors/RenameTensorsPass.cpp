// rename-tensors: renames the model's tensors whose names match a regular expression
// (ECMAScript syntax, the whole name must match); the replacement may use $1, $2, ... Names stay
// unique: a new name that another tensor keeps gets a _1, _2, ... suffix (and a remark). Every
// rename goes through Value::setName, so qopt's name map records old -> new.
#include <regex>
#include <string>
#include <vector>

#include "qopt/ir/Error.h"
#include "qopt/ir/Graph.h"
#include "qopt/pass/PassContext.h"
#include "qopt/pass/PassPlugin.h"

namespace rename_tensors {
namespace {

using qopt::Value;

class RenameTensorsPass : public qopt::Pass {
 public:
  RenameTensorsPass()
      : Pass("rename-tensors", "Renames tensors whose names match a regular expression") {}

  qopt::PassResult run(qopt::Model& model, qopt::PassContext&) override {
    std::regex regex = compile();
    qopt::PassResult result;
    result.statistics["tensors-renamed"] = 0;

    struct Rename {
      Value* value;
      std::string newName;
    };
    std::vector<Rename> renames;
    for (Value* value : selected(model.graph())) {
      std::smatch match;
      if (value->isAbsent() || !std::regex_match(value->name(), match, regex)) continue;
      // format() rewrites the one whole-name match (regex_replace would also rewrite the empty
      // match that a pattern such as "(.*)" finds at the end).
      std::string newName = match.format(*replacement_);
      if (newName.empty()) {
        throw qopt::Error(qopt::ErrorKind::Usage, "rename-tensors",
                          "tensor '" + value->name() + "'", "the replacement gives an empty name");
      }
      if (newName != value->name()) renames.push_back({value, std::move(newName)});
    }

    // Free every old name first, so that renames may swap or shift names (a -> b, b -> c).
    for (Rename& rename : renames) {
      rename.value->setName(model.uniqueValueName(rename.value->name() + ".rename-tensors"));
    }
    for (Rename& rename : renames) {
      std::string name = model.uniqueValueName(rename.newName);
      if (name != rename.newName) {
        result.note("tensor '" + name + "'",
                    "named '" + name + "': '" + rename.newName + "' is taken by another tensor");
      }
      rename.value->setName(std::move(name));
      result.statistics.add("tensors-renamed");
    }
    result.changed = !renames.empty();
    return result;
  }

 private:
  std::regex compile() const {
    try {
      return std::regex(*pattern_, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      throw qopt::Error(qopt::ErrorKind::Usage, "rename-tensors", "option 'pattern'",
                        "'" + *pattern_ + "' is not a valid regular expression: " + e.what());
    }
  }

  bool wants(const char* kind) const { return *scope_ == "all" || *scope_ == kind; }

  // The tensors in scope, in a deterministic order: inputs, initializers, node outputs (subgraphs
  // included), then graph outputs not met before.
  std::vector<Value*> selected(qopt::Graph& graph) const {
    static const char* const kScopes[] = {"all", "inputs", "outputs", "initializers",
                                          "activations"};
    bool known = false;
    for (const char* scope : kScopes) known = known || *scope_ == scope;
    if (!known) {
      throw qopt::Error(
          qopt::ErrorKind::Usage, "rename-tensors", "option 'scope'",
          "'" + *scope_ + "' is not one of all, inputs, outputs, initializers, activations");
    }
    std::vector<Value*> values;
    auto add = [&values](Value* value) {
      for (Value* seen : values) {
        if (seen == value) return;
      }
      values.push_back(value);
    };
    for (Value* value : graph.inputs()) {
      if (!value->isInitializer() && wants("inputs")) add(value);
    }
    if (wants("initializers")) {
      for (Value* value : graph.initializers()) add(value);
    }
    if (wants("activations")) {
      graph.walk([&](qopt::Node* node) {
        for (Value* value : node->outputs()) {
          if (!value->isGraphOutput()) add(value);
        }
      });
    }
    if (wants("outputs")) {
      for (Value* value : graph.outputs()) add(value);
    }
    return values;
  }

  qopt::Option<std::string> pattern_{*this, "pattern", "(.*)",
                                     "Regular expression the whole tensor name must match"};
  qopt::Option<std::string> replacement_{*this, "replacement", "$1",
                                         "New name; $1, $2, ... insert the pattern's groups"};
  qopt::Option<std::string> scope_{
      *this, "scope", "all", "Which tensors: all, inputs, outputs, initializers, activations"};
};

}  // namespace
}  // namespace rename_tensors

QOPT_PASS_PLUGIN_EXPORT QoptPassPluginInfo qoptGetPassPluginInfo() {
  return {QOPT_PLUGIN_API_VERSION, "rename-tensors", "1.0",
          [](qopt::PassRegistry& registry) { registry.add<rename_tensors::RenameTensorsPass>(); }};
}
