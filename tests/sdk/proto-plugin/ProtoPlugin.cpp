// proto-summary: writes the model's node count into a ModelProto, serializes and parses it
// back, and reports the result as a remark. It exists to show that a plugin using the ONNX
// protobuf classes shares libqopt's descriptor pool instead of registering onnx.proto twice.
#include <onnx/onnx_pb.h>

#include <string>

#include "qopt/ir/Error.h"
#include "qopt/ir/Graph.h"
#include "qopt/pass/PassContext.h"
#include "qopt/pass/PassPlugin.h"

namespace {

class ProtoSummaryPass : public qopt::Pass {
 public:
  ProtoSummaryPass() : Pass("proto-summary", "Reports the node count through an ONNX ModelProto") {}

  qopt::PassResult run(qopt::Model& model, qopt::PassContext&) override {
    onnx::ModelProto proto;
    proto.set_doc_string("nodes=" + std::to_string(model.graph().numNodes()));
    onnx::ModelProto parsed;
    if (!parsed.ParseFromString(proto.SerializeAsString())) {
      throw qopt::Error(qopt::ErrorKind::Internal, "proto-summary", "ModelProto",
                        "could not parse what was just serialized");
    }
    qopt::PassResult result;
    result.note(std::string(onnx::ModelProto::descriptor()->full_name()), parsed.doc_string());
    return result;
  }
};

}  // namespace

QOPT_PASS_PLUGIN_EXPORT QoptPassPluginInfo qoptGetPassPluginInfo() {
  return {QOPT_PLUGIN_API_VERSION, "proto-plugin", "1.0",
          [](qopt::PassRegistry& registry) { registry.add<ProtoSummaryPass>(); }};
}
