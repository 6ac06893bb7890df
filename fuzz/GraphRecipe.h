// Turns fuzz bytes into a small ONNX model (ONNX text) and its input: each byte chooses an op, an
// operand or an attribute, and shapes are tracked so that most recipes are valid models and run
// deep into the kernels. Dims stay small; a few ops may ask for huge shapes on purpose, which the
// interpreter's allocation limit must refuse.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace qopt::fuzz {

struct RecipeModel {
  std::string text;                 // ONNX text, opset 17
  std::vector<int64_t> inputShape;  // graph input "x", float
  std::vector<float> inputValues;   // numel(inputShape) values
};

RecipeModel buildRecipeModel(std::string_view bytes);

}  // namespace qopt::fuzz
