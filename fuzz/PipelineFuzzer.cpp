// The pipeline grammar: any text either fails with qopt::Error or parses to a pipeline whose
// canonical form parses back to the same canonical form.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "FuzzSupport.h"
#include "qopt/ir/Error.h"
#include "qopt/pass/Options.h"
#include "qopt/pass/Pass.h"
#include "qopt/pass/PassRegistry.h"
#include "qopt/pass/Pipeline.h"

namespace {

// Passes with an option of every kind, so option values of every type are parsed and printed.
class EveryOptionPass : public qopt::Pass {
 public:
  EveryOptionPass() : Pass("every-option", "Has an option of each type") {}
  qopt::PassResult run(qopt::Model&, qopt::PassContext&) override { return {}; }

 private:
  qopt::Option<bool> flag_{*this, "flag", false, "bool"};
  qopt::Option<int64_t> count_{*this, "count", 3, "int"};
  qopt::Option<double> ratio_{*this, "ratio", 0.5, "float"};
  qopt::Option<std::string> text_{*this, "text", "a b", "string"};
  qopt::ListOption<std::string> words_{*this, "words", {"Conv", "Gemm"}, "list of strings"};
  qopt::ListOption<int64_t> numbers_{*this, "numbers", {}, "list of ints"};
  qopt::ListOption<double> reals_{*this, "reals", {1.5}, "list of floats"};
};

class PlainPass : public qopt::Pass {
 public:
  PlainPass() : Pass("plain", "Has no options") {}
  qopt::PassResult run(qopt::Model&, qopt::PassContext&) override { return {}; }
};

const qopt::PassRegistry& registry() {
  static const qopt::PassRegistry instance = [] {
    qopt::PassRegistry r("pipeline fuzzer");
    r.add<EveryOptionPass>();
    r.add<PlainPass>();
    return r;
  }();
  return instance;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  std::string canonical;
  try {
    canonical = qopt::parsePipeline(text, registry(), "<fuzz>").str();
  } catch (const qopt::Error&) {
    return 0;
  }
  std::string again;
  try {
    again = qopt::parsePipeline(canonical, registry(), "<canonical>").str();
  } catch (const qopt::Error& e) {
    qopt::fuzz::propertyFailed("a canonical pipeline does not parse", canonical + "\n" + e.what());
  }
  if (again != canonical) {
    qopt::fuzz::propertyFailed("printing a parsed canonical pipeline changed it",
                               canonical + "\n" + again);
  }
  return 0;
}
