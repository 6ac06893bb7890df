#include "qopt/analysis/ObservedShapes.h"

#include <fmt/format.h>

#include "qopt/analysis/DataSet.h"
#include "qopt/ir/Error.h"

namespace qopt::analysis {

namespace {

const Dim* declaredDim(const Graph& graph, const std::string& input, size_t axis) {
  const Value* value = graph.findValue(input);
  if (value == nullptr || !value->type().isTensor() || !value->type().shape) return nullptr;
  const std::vector<Dim>& dims = *value->type().shape;
  return axis < dims.size() ? &dims[axis] : nullptr;
}

std::string dimLabel(const AssumedDim& dim) {
  return dim.name.empty() ? fmt::format("dim {}", dim.axis) : dim.name;
}

// Dims that neither the model nor --input-shapes fixes, with the size the generated inputs gave
// them: the MACs rest on these, so reports must name them.
void recordAssumptions(const Graph& graph, std::span<const InputSpec> specs,
                       ObservedShapes& shapes) {
  for (const InputSpec& spec : specs) {
    if (!spec.rankKnown) {
      shapes.unshapedInputs.push_back(spec.name);
      continue;
    }
    const std::vector<int64_t>& ran = shapes.inputs[spec.name];
    for (size_t axis = 0; axis < spec.dims.size(); ++axis) {
      if (spec.dims[axis]) continue;
      const Dim* dim = declaredDim(graph, spec.name, axis);
      shapes.assumed.push_back(
          {spec.name, axis, dim ? dim->param : std::string(), axis < ran.size() ? ran[axis] : 1});
    }
  }
}

std::vector<Sample> calibrationSample(const std::string& path, std::vector<InputSpec> specs,
                                      const std::string& preprocess) {
  std::vector<Sample> samples = DataSet::open(path, std::move(specs), preprocess).read(1);
  if (samples.empty()) {
    throw Error(ErrorKind::Input, path, {}, "the calibration data holds no sample");
  }
  return samples;
}

}  // namespace

ShapeRequest ShapeRequest::from(const PassContext& context) {
  return {context.data.inputShapes, context.data.inputValues, context.data.calibData,
          context.data.preprocess, context.seed};
}

ObservedShapes observeShapes(const Graph& graph, const ShapeRequest& request) {
  ObservedShapes shapes;
  std::vector<InputSpec> specs;
  try {
    specs = inputSpecs(graph, request.inputShapes, request.inputValues);
  } catch (const Error& e) {
    throw e.withFile(graph.model().sourcePath);
  }
  std::vector<Sample> samples;
  if (!request.calibData.empty()) {
    shapes.origin = "calib:" + request.calibData;
    samples = calibrationSample(request.calibData, specs, request.preprocess);
  } else {
    shapes.origin = request.inputShapes.empty() ? "declared" : "input-shapes";
    try {
      samples = randomSamples(specs, 1, request.seed);
    } catch (const Error& e) {
      // A control input without --input-values: the model is not run on a guess.
      if (e.kind() != ErrorKind::Usage) throw;
      shapes.failure = fmt::format("{}: {}", e.subject(), e.cause());
      return shapes;
    }
  }
  for (const auto& [name, array] : samples.front().inputs) {
    const interp::Shape& dims = array.shape();
    shapes.inputs[name] = std::vector<int64_t>(dims.begin(), dims.end());
  }
  if (request.calibData.empty()) recordAssumptions(graph, specs, shapes);
  shapes.info = observeTensorInfo(graph, samples.front().inputs, &shapes.failure);
  return shapes;
}

std::vector<std::string> shapeCaveats(const ObservedShapes& shapes) {
  std::vector<std::string> caveats;
  // Inputs in the order of their first assumed dim, which follows the graph's input order.
  for (size_t i = 0; i < shapes.assumed.size();) {
    const std::string& input = shapes.assumed[i].input;
    std::vector<std::string> assumed;
    for (; i < shapes.assumed.size() && shapes.assumed[i].input == input; ++i) {
      assumed.push_back(fmt::format("{}={}", dimLabel(shapes.assumed[i]), shapes.assumed[i].value));
    }
    std::vector<std::string> example;
    auto it = shapes.inputs.find(input);
    const size_t rank = it != shapes.inputs.end() ? it->second.size() : 0;
    for (size_t axis = 0; axis < rank; ++axis) example.push_back(std::to_string(it->second[axis]));
    for (const AssumedDim& dim : shapes.assumed) {
      if (dim.input == input && dim.axis < rank) example[dim.axis] = "<" + dimLabel(dim) + ">";
    }
    caveats.push_back(
        fmt::format("MACs assume {} for input '{}' (dynamic); pass --input-shapes {}:{}",
                    fmt::join(assumed, ", "), input, input, fmt::join(example, "x")));
  }
  for (const std::string& input : shapes.unshapedInputs) {
    caveats.push_back(fmt::format(
        "input '{}' has no declared shape and ran as a scalar; pass --input-shapes {}:<dims>",
        input, input));
  }
  if (!shapes.failure.empty()) {
    caveats.push_back(fmt::format(
        "the interpreter could not run the model, so only declared shapes are known: {}",
        shapes.failure));
  }
  return caveats;
}

}  // namespace qopt::analysis
