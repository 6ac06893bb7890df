#include "qopt/ir/Verifier.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include <fmt/format.h>

#include "qopt/ir/Error.h"

namespace qopt {

namespace {

std::string describeValue(const Value* v) {
  return v->isAbsent() ? std::string("an omitted value") : fmt::format("value '{}'", v->name());
}

std::string describeGraph(const Graph& g) {
  if (!g.parentNode())
    return g.name.empty() ? "main graph" : fmt::format("main graph '{}'", g.name);
  return fmt::format("subgraph '{}' of {}", g.name, g.parentNode()->describe());
}

bool enclosesOrIs(const Graph* outer, const Graph* g) {
  for (; g; g = g->parentGraph()) {
    if (g == outer) return true;
  }
  return false;
}

struct UseKey {
  const Node* user;
  uint32_t index;
  bool operator==(const UseKey&) const = default;
};

struct UseKeyHash {
  size_t operator()(const UseKey& k) const {
    return std::hash<const void*>()(k.user) ^
           (std::hash<uint32_t>()(k.index) * 0x9E3779B97F4A7C15ull);
  }
};

class ModelVerifier {
 public:
  explicit ModelVerifier(const Model& model) : model_(model) {}

  std::vector<VerifyIssue> run() {
    collectLive(model_.graph(), nullptr);
    checkOpsets();
    checkGraph(model_.graph());
    checkUseLists();
    checkOutputFlags();
    return std::move(issues_);
  }

 private:
  void issue(std::string subject, std::string message) {
    issues_.push_back({std::move(subject), std::move(message)});
  }

  // Pass 1: every graph and node reachable from the model, and the back-pointers between them.
  void collectLive(const Graph& g, const Node* owner) {
    liveGraphs_.insert(&g);
    if (&g.model() != &model_) issue(describeGraph(g), "belongs to another model");
    if (g.parentNode() != owner) {
      issue(describeGraph(g),
            owner ? fmt::format("is held by {} but names another parent node", owner->describe())
                  : std::string("the main graph has a parent node"));
    }
    for (const Node* n : g.nodes()) {
      liveNodes_.insert(n);
      if (n->graph() != &g) issue(n->describe(), "is listed in a graph it does not belong to");
      for (const Graph* sub : n->subgraphs()) collectLive(*sub, n);
    }
  }

  void checkOpsets() {
    std::unordered_set<std::string> imported;
    for (const OpsetImport& o : model_.opsetImports) {
      std::string domain = o.domain == "ai.onnx" ? std::string() : o.domain;
      if (!imported.insert(domain).second) {
        issue("model", fmt::format("domain '{}' is imported twice", domain));
      }
    }
    std::unordered_set<std::string> reported;
    model_.graph().walk([&](const Node* n) {
      if (imported.contains(n->domain()) || !reported.insert(n->domain()).second) return;
      issue(n->describe(),
            n->domain().empty()
                ? std::string("the model has no opset import for the default domain (ai.onnx)")
                : fmt::format("the model has no opset import for domain '{}'", n->domain()));
    });
  }

  // Whether `outer` is `inner` or one of the graphs enclosing it.
  static bool encloses(const Graph* outer, const Graph* inner) {
    for (const Graph* g = inner; g; g = g->parentGraph()) {
      if (g == outer) return true;
    }
    return false;
  }

  // A value enters scope where it is defined; each definition happens once per model.
  void define(const Value* v, const Graph& g, std::vector<const Value*>& added) {
    if (!definedValues_.insert(v).second) {
      issue(describeValue(v), fmt::format("is defined twice (again in {})", describeGraph(g)));
      return;
    }
    allValues_.push_back(v);
    if (v->graph() != &g) {
      issue(describeValue(v),
            fmt::format("is defined in {} but belongs to another graph", describeGraph(g)));
    }
    if (v->isAbsent()) return;
    // ONNX's scoping: a name is defined once in a graph and the graphs it encloses (no
    // shadowing); sibling subgraphs (an If's two branches) may each define it.
    std::vector<const Value*>& holders = names_[v->name()];
    for (const Value* other : holders) {
      const Graph* home = other->graph();
      if (home == &g) {
        issue(describeValue(v),
              fmt::format("the name is used by two values of {}", describeGraph(g)));
        break;
      }
      if (encloses(home, &g) || encloses(&g, home)) {
        issue(describeValue(v),
              fmt::format(
                  "the name is already defined in {}, which {} (no shadowing)",
                  liveGraphs_.contains(home) ? describeGraph(*home) : std::string("another graph"),
                  encloses(home, &g) ? "encloses this one" : "this one encloses"));
        break;
      }
    }
    holders.push_back(v);
    scope_.insert(v);
    added.push_back(v);
  }

  // Producers in `g` of the values `n` reads, directly or from inside its subgraphs.
  static std::vector<const Node*> dependencies(const Graph& g, const Node* n) {
    std::vector<const Node*> deps;
    auto consider = [&](const Value* v) {
      const Node* p = v ? v->producer() : nullptr;
      if (p && p->graph() == &g) deps.push_back(p);
    };
    for (const Value* v : n->inputs()) consider(v);
    for (const Graph* sub : n->subgraphs()) {
      sub->walk([&](const Node* inner) {
        for (const Value* v : inner->inputs()) consider(v);
      });
    }
    return deps;
  }

  // Depth-first search for a cycle; returns the first node (in graph order) found on one.
  static const Node* findCycle(const Graph& g) {
    enum class Mark { Visiting, Done };
    std::unordered_map<const Node*, Mark> marks;
    for (const Node* root : g.nodes()) {
      if (marks.contains(root)) continue;
      std::vector<std::pair<const Node*, std::vector<const Node*>>> stack;
      marks[root] = Mark::Visiting;
      stack.emplace_back(root, dependencies(g, root));
      while (!stack.empty()) {
        auto& [node, deps] = stack.back();
        if (deps.empty()) {
          marks[node] = Mark::Done;
          stack.pop_back();
          continue;
        }
        const Node* dep = deps.back();
        deps.pop_back();
        auto it = marks.find(dep);
        if (it == marks.end()) {
          marks[dep] = Mark::Visiting;
          stack.emplace_back(dep, dependencies(g, dep));
        } else if (it->second == Mark::Visiting) {
          return dep;
        }
      }
    }
    return nullptr;
  }

  void checkUse(const Node* n, size_t index, const Value* v, const Graph& g, bool cyclic) {
    ++inputSlots_[v];
    if (v->isAbsent()) {
      issue(n->describe(),
            fmt::format("input {} is an omitted output, which cannot be used", index));
      return;
    }
    if (scope_.contains(v)) return;
    const Graph* home = v->graph();
    const Node* producer = v->producer();
    if (home == &g && producer && producer->graph() == &g) {
      if (!cyclic) {
        issue(n->describe(), fmt::format("uses '{}' before it is defined (nodes are not in "
                                         "topological order)",
                                         v->name()));
      }
    } else if (home != &g && enclosesOrIs(home, &g)) {
      issue(n->describe(), fmt::format("uses '{}' of an enclosing graph, which is not defined "
                                       "before the node owning this subgraph",
                                       v->name()));
    } else if (liveGraphs_.contains(home)) {
      issue(n->describe(), fmt::format("uses '{}' of {}, which is not visible here", v->name(),
                                       describeGraph(*home)));
    } else {
      issue(n->describe(), fmt::format("uses '{}', which is not defined in this model", v->name()));
    }
  }

  void checkGraph(const Graph& g) {
    std::vector<const Value*> added;
    std::unordered_set<const Value*> ownInitializers;
    for (const Value* init : g.initializers()) {
      if (!init) {
        issue(describeGraph(g), "has a null initializer");
        continue;
      }
      if (!init->isInitializer())
        issue(describeValue(init), "is listed as an initializer but is not one");
      if (!init->initializer()) issue(describeValue(init), "is an initializer without a tensor");
      ownInitializers.insert(init);
      define(init, g, added);
    }
    for (const Value* in : g.inputs()) {
      if (!in) {
        issue(describeGraph(g), "has a null graph input");
        continue;
      }
      if (in->isInitializer()) {
        if (!ownInitializers.contains(in)) {
          issue(describeValue(in), fmt::format("is listed as an input of {} but is not one of its "
                                               "initializers",
                                               describeGraph(g)));
        }
        continue;
      }
      if (in->kind() != Value::Kind::GraphInput) {
        issue(describeValue(in),
              fmt::format("is listed as an input of {} but is a node output", describeGraph(g)));
      }
      define(in, g, added);
    }

    const Node* onCycle = findCycle(g);
    if (onCycle) issue(onCycle->describe(), "is on a cycle");

    for (const Node* n : g.nodes()) {
      for (size_t i = 0; i < n->numInputs(); ++i) {
        if (const Value* v = n->input(i)) checkUse(n, i, v, g, onCycle != nullptr);
      }
      for (const Graph* sub : n->subgraphs()) checkGraph(*sub);
      for (size_t i = 0; i < n->numOutputs(); ++i) {
        const Value* out = n->output(i);
        if (out->producer() != n || out->outputIndex() != i ||
            out->kind() != Value::Kind::NodeOutput) {
          issue(n->describe(), fmt::format("output {} ('{}') does not name this node and index as "
                                           "its producer",
                                           i, out->name()));
        }
        define(out, g, added);
      }
    }

    for (size_t i = 0; i < g.outputs().size(); ++i) {
      const Value* out = g.outputs()[i];
      if (!out) {
        issue(describeGraph(g), fmt::format("output {} is null", i));
        continue;
      }
      ++outputListings_[out];
      if (out->isAbsent()) {
        issue(describeGraph(g), fmt::format("output {} is an omitted value", i));
      } else if (!scope_.contains(out)) {
        issue(describeGraph(g), fmt::format("output {} ('{}') is not defined in this graph or an "
                                            "enclosing one",
                                            i, out->name()));
      }
    }
    for (const Value* v : added) scope_.erase(v);
  }

  void checkUseLists() {
    for (const Value* v : allValues_) {
      std::unordered_set<UseKey, UseKeyHash> seen;
      for (const Use& use : v->uses()) {
        if (!liveNodes_.contains(use.user)) {
          issue(describeValue(v), "has a use by a node that is not in the model");
          continue;
        }
        if (use.user->input(use.index) != v) {
          issue(describeValue(v), fmt::format("lists a use as input {} of {}, which reads another "
                                              "value there",
                                              use.index, use.user->describe()));
        }
        if (!seen.insert({use.user, use.index}).second) {
          issue(describeValue(v), fmt::format("lists input {} of {} twice among its uses",
                                              use.index, use.user->describe()));
        }
      }
      auto slots = inputSlots_.find(v);
      size_t expected = slots == inputSlots_.end() ? 0 : slots->second;
      if (seen.size() != expected) {
        issue(describeValue(v), fmt::format("is read by {} node inputs but lists {} valid uses",
                                            expected, seen.size()));
      }
    }
  }

  void checkOutputFlags() {
    for (const Value* v : allValues_) {
      bool listed = outputListings_.contains(v);
      if (v->isGraphOutput() != listed) {
        issue(describeValue(v), listed ? "is a graph output but does not know it"
                                       : "claims to be a graph output but no graph lists it");
      }
    }
  }

  const Model& model_;
  std::vector<VerifyIssue> issues_;
  std::unordered_set<const Graph*> liveGraphs_;
  std::unordered_set<const Node*> liveNodes_;
  std::unordered_set<const Value*> definedValues_;
  std::vector<const Value*> allValues_;
  std::unordered_map<std::string, std::vector<const Value*>> names_;
  std::unordered_set<const Value*> scope_;
  std::unordered_map<const Value*, size_t> inputSlots_;
  std::unordered_map<const Value*, size_t> outputListings_;
};

}  // namespace

std::vector<VerifyIssue> verifyModel(const Model& model) {
  return ModelVerifier(model).run();
}

void verifyModelOrThrow(const Model& model, const std::string& context) {
  std::vector<VerifyIssue> issues = verifyModel(model);
  if (issues.empty()) return;
  const VerifyIssue& first = issues.front();
  std::string more = issues.size() > 1 ? fmt::format(" (and {} more issue{})", issues.size() - 1,
                                                     issues.size() > 2 ? "s" : "")
                                       : std::string();
  std::string when = context.empty() ? std::string() : " " + context;
  throw Error(ErrorKind::Internal, model.sourcePath, first.subject,
              fmt::format("invalid IR{}: {}{}", when, first.message, more));
}

}  // namespace qopt
