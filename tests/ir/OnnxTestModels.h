// Small helpers shared by the ONNX import/export tests: building ModelProtos by hand (including
// fields newer than the linked ONNX 1.12, written as raw wire bytes), temporary folders, and
// comparing models the way the round-trip tests define "equal".
#pragma once

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <sstream>
#include <string>
#include <vector>

#include <google/protobuf/unknown_field_set.h>
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include "TestFolder.h"

namespace qopt::testing {

/// A fresh folder under the system's temp folder, removed with everything in it at the end.
class TempDir : public TestFolder {
 public:
  TempDir() : TestFolder(uniquePath()) {}

 private:
  static std::filesystem::path uniquePath() {
    static std::atomic<int> counter{0};
    return std::filesystem::temp_directory_path() /
           ("qopt_io_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
  }
};

inline void setTensorType(onnx::ValueInfoProto* info, int elemType,
                          std::initializer_list<int64_t> dims) {
  auto* tensor = info->mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(elemType);
  auto* shape = tensor->mutable_shape();
  for (int64_t d : dims) shape->add_dim()->set_dim_value(d);
}

/// `info` named `name`, a tensor of `elemType` and `dims`.
inline onnx::ValueInfoProto* describe(onnx::ValueInfoProto* info, const std::string& name,
                                      std::initializer_list<int64_t> dims, int elemType) {
  info->set_name(name);
  setTensorType(info, elemType, dims);
  return info;
}

inline onnx::ValueInfoProto* addInput(onnx::GraphProto& graph, const std::string& name,
                                      std::initializer_list<int64_t> dims = {2},
                                      int elemType = onnx::TensorProto::FLOAT) {
  return describe(graph.add_input(), name, dims, elemType);
}

inline onnx::ValueInfoProto* addOutput(onnx::GraphProto& graph, const std::string& name,
                                       std::initializer_list<int64_t> dims = {2},
                                       int elemType = onnx::TensorProto::FLOAT) {
  return describe(graph.add_output(), name, dims, elemType);
}

inline onnx::NodeProto* addNode(onnx::GraphProto& graph, const std::string& op,
                                std::initializer_list<std::string> inputs,
                                std::initializer_list<std::string> outputs,
                                const std::string& name = {}) {
  onnx::NodeProto* node = graph.add_node();
  node->set_op_type(op);
  if (!name.empty()) node->set_name(name);
  for (const auto& in : inputs) node->add_input(in);
  for (const auto& out : outputs) node->add_output(out);
  return node;
}

inline onnx::TensorProto* addFloatInitializer(onnx::GraphProto& graph, const std::string& name,
                                              std::vector<float> values) {
  onnx::TensorProto* tensor = graph.add_initializer();
  tensor->set_name(name);
  tensor->set_data_type(onnx::TensorProto::FLOAT);
  tensor->add_dims(static_cast<int64_t>(values.size()));
  tensor->set_raw_data(
      std::string(reinterpret_cast<const char*>(values.data()), values.size() * 4));
  return tensor;
}

/// Adds the graph attribute `name` to `node` and returns its (empty, named `name`) graph.
inline onnx::GraphProto* addGraphAttribute(onnx::NodeProto* node, const std::string& name) {
  onnx::AttributeProto* attr = node->add_attribute();
  attr->set_name(name);
  attr->set_type(onnx::AttributeProto::GRAPH);
  onnx::GraphProto* graph = attr->mutable_g();
  graph->set_name(name);
  return graph;
}

/// A valid model: y = Relu(x + w), opset 17.
inline onnx::ModelProto simpleModel() {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.set_producer_name("qopt-test");
  model.add_opset_import()->set_version(17);
  onnx::GraphProto& graph = *model.mutable_graph();
  graph.set_name("simple");
  addInput(graph, "x");
  addFloatInitializer(graph, "w", {1.0f, 2.0f});
  addNode(graph, "Add", {"x", "w"}, {"s"}, "add");
  addNode(graph, "Relu", {"s"}, {"y"}, "relu");
  addOutput(graph, "y");
  return model;
}

/// One StringStringEntryProto, serialized (for metadata_props written as unknown fields).
inline std::string entryBytes(const std::string& key, const std::string& value) {
  onnx::StringStringEntryProto entry;
  entry.set_key(key);
  entry.set_value(value);
  return entry.SerializeAsString();
}

/// Compares as the round-trip tests define it: every field and its presence, in order, except
/// value_info, which export writes in a canonical order (graph inputs, initializers, then node
/// outputs in node order) and which is therefore compared as a set.
inline ::testing::AssertionResult sameModel(const onnx::ModelProto& expected,
                                            const onnx::ModelProto& actual) {
  google::protobuf::util::MessageDifferencer differencer;
  differencer.TreatAsSet(onnx::GraphProto::descriptor()->FindFieldByName("value_info"));
  std::string report;
  differencer.ReportDifferencesToString(&report);
  if (differencer.Compare(expected, actual)) return ::testing::AssertionSuccess();
  if (report.size() > 4000) report = report.substr(0, 4000) + "...";
  return ::testing::AssertionFailure() << report;
}

inline onnx::ModelProto parseModel(const std::string& bytes) {
  onnx::ModelProto model;
  EXPECT_TRUE(model.ParseFromString(bytes));
  return model;
}

}  // namespace qopt::testing
