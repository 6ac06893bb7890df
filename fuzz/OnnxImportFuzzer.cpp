// ONNX import: any bytes either fail with qopt::Error or give a model that verifies, exports, and
// imports back to a model that exports to the same bytes.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "FuzzSupport.h"
#include "qopt/ir/Error.h"
#include "qopt/ir/OnnxIO.h"
#include "qopt/ir/Verifier.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace qopt;
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  std::unique_ptr<Model> model;
  try {
    model = loadModelFromBytes(bytes, "fuzz.onnx", fuzz::emptyFolder());
  } catch (const Error&) {
    return 0;  // refused with a message: what hostile bytes should get
  }
  std::vector<VerifyIssue> issues = verifyModel(*model);
  if (!issues.empty()) {
    fuzz::propertyFailed("an imported model does not verify",
                         fmt::format("{}: {}", issues[0].subject, issues[0].message));
  }
  std::string exported;
  try {
    exported = serializeModel(*model);
  } catch (const Error&) {
    return 0;  // e.g. external data that is not there, or over 2 GiB
  }
  std::unique_ptr<Model> again;
  try {
    again = loadModelFromBytes(exported, "fuzz-exported.onnx", fuzz::emptyFolder());
  } catch (const Error& e) {
    fuzz::propertyFailed("an exported model does not import", e.what());
  }
  if (serializeModel(*again) != exported) {
    fuzz::propertyFailed("export, import, export changed the bytes", "");
  }
  return 0;
}
