// Calibration and input data files: .npy (interp/Npy.h) and TensorProto .pb (what DataSet and
// qopt-run read). Any bytes either fail with qopt::Error or give an array that writes and reads
// back to the same bytes. Both readers see every input.
#include <cstdint>
#include <string>
#include <string_view>

#include "FuzzSupport.h"
#include "qopt/interp/Array.h"
#include "qopt/interp/Npy.h"
#include "qopt/ir/Error.h"
#include "qopt/ir/OnnxIO.h"

namespace {

void checkNpyRoundTrip(const qopt::interp::Array& array) {
  std::string written;
  try {
    written = qopt::interp::serializeNpy(array);
  } catch (const qopt::Error&) {
    return;  // a type numpy cannot hold
  }
  std::string again;
  try {
    again = qopt::interp::serializeNpy(qopt::interp::parseNpy(written, "written.npy"));
  } catch (const qopt::Error& e) {
    qopt::fuzz::propertyFailed("a written .npy does not read back", e.what());
  }
  if (again != written) qopt::fuzz::propertyFailed(".npy write, read, write changed the bytes", "");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  try {
    checkNpyRoundTrip(qopt::interp::parseNpy(bytes, "fuzz.npy"));
  } catch (const qopt::Error&) {
  }
  try {
    qopt::Tensor tensor =
        qopt::loadTensorProtoFromBytes(bytes, "fuzz.pb", qopt::fuzz::emptyFolder());
    checkNpyRoundTrip(qopt::interp::Array::fromTensor(tensor));
  } catch (const qopt::Error&) {
  }
  return 0;
}
