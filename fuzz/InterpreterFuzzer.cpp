// The reference interpreter on small random graphs (GraphRecipe.h): every recipe either runs or
// fails with qopt::Error; hostile shapes hit the allocation limit instead of allocating.
#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "FuzzSupport.h"
#include "GraphRecipe.h"
#include "qopt/interp/Interpreter.h"
#include "qopt/ir/Error.h"
#include "qopt/ir/TextFormat.h"

namespace {

// Small enough that a fuzzing run never allocates much; big enough for every valid recipe.
constexpr uint64_t kMaxTensorBytes = uint64_t{1} << 20;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace qopt;
  fuzz::RecipeModel recipe =
      fuzz::buildRecipeModel(std::string_view(reinterpret_cast<const char*>(data), size));
  std::unique_ptr<Model> model;
  try {
    model = parseModelText(recipe.text, "recipe.onnxtxt");
  } catch (const Error& e) {
    // The recipe writes only what ONNX's text parser accepts: anything else is a recipe bug.
    fuzz::propertyFailed("a recipe model does not parse", recipe.text + "\n" + e.what());
  }
  if (std::getenv("QOPT_FUZZ_PRINT_RECIPE")) std::fputs(recipe.text.c_str(), stderr);
  try {
    interp::RunOptions options;
    options.maxTensorBytes = kMaxTensorBytes;
    interp::Interpreter interpreter(model->graph(), options);
    interp::Array x(DataType::Float, recipe.inputShape);
    std::copy(recipe.inputValues.begin(), recipe.inputValues.end(), x.data<float>());
    interpreter.run({{"x", x}});
  } catch (const Error& e) {
    if (std::getenv("QOPT_FUZZ_PRINT_RECIPE")) std::fprintf(stderr, "error: %s\n", e.what());
  }
  return 0;
}
