// specialize: binds graph inputs that the deployment always feeds with one value (a sample rate,
// a mode flag, a fixed shape) to that value: each becomes an initializer of its name and leaves
// the model's interface. fold-constants after it then computes what only depended on them and
// replaces an If whose condition became constant by the branch it takes.
//
//   qopt -p "specialize{inputs=sr:16000},fold-constants,dce" vad.onnx vad-16k.onnx
#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "qopt/ir/Error.h"
#include "qopt/ir/Graph.h"
#include "qopt/pass/PassContext.h"
#include "qopt/pass/PassPlugin.h"

namespace qopt {
namespace {

struct Binding {
  std::string input;
  std::vector<double> values;
  std::string spelling;  // as given, for messages
};

class SpecializePass : public Pass {
 public:
  SpecializePass()
      : Pass("specialize",
             "Binds graph inputs that are always fed one value to that value (they become "
             "constants)") {}

  void validateOptions() const override {
    if (inputs_->empty()) failOption("inputs", "give at least one NAME:VALUE");
    for (const std::string& entry : *inputs_) parse(entry);
  }

  PassResult run(Model& model, PassContext&) override {
    PassResult result;
    result.statistics["inputs-bound"] = 0;
    Graph& graph = model.graph();
    for (const std::string& entry : *inputs_) {
      Binding binding = parse(entry);
      bind(model, graph, binding, result);
    }
    result.changed = result.statistics.get("inputs-bound") > 0;
    return result;
  }

 private:
  // "NAME:VALUE" where VALUE is a number, or numbers joined by 'x' for a 1-D input (as
  // --input-shapes writes dims): sr:16000, mode:1, shape:1x3x224x224.
  Binding parse(const std::string& entry) const {
    const size_t colon = entry.rfind(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == entry.size()) {
      failOption("inputs", fmt::format("'{}' is not NAME:VALUE (VALUE a number, or numbers "
                                       "joined by x for a 1-D input)",
                                       entry));
    }
    Binding b{entry.substr(0, colon), {}, entry.substr(colon + 1)};
    size_t start = 0;
    while (start <= b.spelling.size()) {
      size_t end = b.spelling.find('x', start);
      if (end == std::string::npos) end = b.spelling.size();
      const std::string number = b.spelling.substr(start, end - start);
      char* stop = nullptr;
      const double v = std::strtod(number.c_str(), &stop);
      if (number.empty() || stop != number.c_str() + number.size() || !std::isfinite(v)) {
        failOption("inputs", fmt::format("'{}': '{}' is not a finite number", entry, number));
      }
      b.values.push_back(v);
      start = end + 1;
    }
    return b;
  }

  void bind(Model& model, Graph& graph, const Binding& b, PassResult& result) const {
    const std::string subject = fmt::format("input '{}'", b.input);
    auto fail = [&](const std::string& cause) {
      return Error(ErrorKind::Usage, model.sourcePath, subject,
                   fmt::format("specialize{{inputs}}: {}", cause));
    };
    size_t index = graph.inputs().size();
    for (size_t i = 0; i < graph.inputs().size(); ++i) {
      if (graph.inputs()[i]->name() == b.input) index = i;
    }
    if (index == graph.inputs().size()) {
      std::vector<std::string> names;
      for (const Value* in : graph.inputs()) names.push_back("'" + in->name() + "'");
      throw fail(fmt::format("the model has no input of this name (its inputs: {})",
                             fmt::join(names, ", ")));
    }
    Value* input = graph.inputs()[index];
    if (input->isInitializer()) throw fail("it already has a value (an initializer)");
    if (input->isGraphOutput()) throw fail("it is also a graph output, which keeps it an input");
    const ValueType& type = input->type();
    if (!type.isTensor() || type.elemType == DataType::Undefined || !type.shape) {
      throw fail("its type or rank is not declared, so the constant's type is unknown");
    }
    if (type.elemType == DataType::String || type.elemType == DataType::Complex64 ||
        type.elemType == DataType::Complex128) {
      throw fail(fmt::format("its type {} cannot be bound", dataTypeName(type.elemType)));
    }
    // The shape: rank 0 takes one value, rank 1 any number; a higher rank only with static
    // dims that hold exactly the values given.
    const std::vector<Dim>& dims = *type.shape;
    std::vector<int64_t> shape;
    const auto count = static_cast<int64_t>(b.values.size());
    if (dims.empty()) {
      if (count != 1)
        throw fail(fmt::format("it is a scalar; '{}' gives {} values", b.spelling, count));
    } else if (dims.size() == 1) {
      if (dims[0].value && *dims[0].value != count) {
        throw fail(
            fmt::format("it has {} elements; '{}' gives {}", *dims[0].value, b.spelling, count));
      }
      shape = {count};
    } else {
      std::optional<std::vector<int64_t>> fixed = type.staticShape();
      int64_t elements = 1;
      for (int64_t d : fixed.value_or(std::vector<int64_t>{})) elements *= d;
      if (!fixed || elements != count) {
        throw fail(fmt::format("it has rank {} and {} shape; '{}' gives {} values", dims.size(),
                               fixed ? fmt::format("{} elements in its", elements) : "an open",
                               b.spelling, count));
      }
      shape = *fixed;
    }
    auto tensor = std::make_shared<Tensor>(Tensor::fromDoubles(type.elemType, shape, b.values));
    tensor->setName(model.uniqueValueName(b.input + "_bound"));
    Value* constant = graph.addInitializer(tensor);
    constant->setType(ValueType::tensor(type.elemType, shape));
    const size_t uses = input->uses().size();
    input->replaceAllUsesWith(constant);
    graph.removeInput(index);
    constant->setName(b.input);
    result.statistics.add("inputs-bound");
    result.applied(
        subject,
        fmt::format("bound to {} ({} {}); {} uses now read the constant", b.spelling,
                    dataTypeName(type.elemType),
                    shape.empty() ? "scalar" : fmt::format("[{}]", fmt::join(shape, ",")), uses));
  }

  ListOption<std::string> inputs_{
      *this,
      "inputs",
      {},
      "Inputs to bind, NAME:VALUE each (VALUE a number, or numbers joined "
      "by x for a 1-D input): sr:16000, [sr:16000,shape:1x3x224x224]"};
};

}  // namespace
}  // namespace qopt

QOPT_SINGLE_PASS_PLUGIN("specialize", QOPT_VERSION_STRING, qopt::SpecializePass)
