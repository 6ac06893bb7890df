// The passes a pipeline can name. Filled by explicit registration: each pass module's entry point
// (PassPlugin.h) receives a registry and adds its passes; nothing registers itself statically.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "qopt/pass/Pass.h"

namespace qopt {

using PassFactory = std::function<std::unique_ptr<Pass>()>;

struct PassInfo {
  std::string name;
  std::string summary;
  std::string origin;  // the module file that registered the pass (or what the host named)
  PassFactory factory;
};

class PassRegistry {
 public:
  PassRegistry() = default;
  explicit PassRegistry(std::string origin) : origin_(std::move(origin)) {}
  PassRegistry(PassRegistry&&) = default;
  PassRegistry& operator=(PassRegistry&&) = default;

  /// Registers P (default constructible); its name and summary are read from one instance.
  template <class P>
  void add() {
    add(PassFactory([] { return std::unique_ptr<Pass>(std::make_unique<P>()); }));
  }
  /// Throws qopt::Error (Usage) when the name is taken, naming both origins.
  void add(PassFactory factory);

  /// What the following add() calls record as their origin (the plugin loader sets the module
  /// path; a program registering passes itself names itself).
  void setOrigin(std::string origin) { origin_ = std::move(origin); }
  const std::string& origin() const { return origin_; }

  /// Moves every pass of `other` here; on a duplicate name nothing is moved and qopt::Error
  /// (Usage) names the pass and both origins.
  void merge(PassRegistry&& other);

  const PassInfo* find(std::string_view name) const;
  /// A new instance with default options; throws qopt::Error (Usage) for an unknown name, with a
  /// did-you-mean and the list of known passes.
  std::unique_ptr<Pass> create(std::string_view name) const;
  /// Sorted by name.
  std::vector<const PassInfo*> passes() const;
  std::vector<std::string> names() const;
  bool empty() const { return passes_.empty(); }

 private:
  std::string origin_ = "<program>";
  std::vector<std::unique_ptr<PassInfo>> passes_;
};

}  // namespace qopt
