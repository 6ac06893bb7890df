// A deterministic textual dump of the IR, for golden tests (FileCheck) and debugging.
//
// The same model always prints the same bytes: nodes in graph order, attributes sorted by name,
// opset imports sorted by domain, tensors with more than `maxInlineElements` elements summarised
// by type, shape and content hash. Example:
//
//   model {ir_version=8, producer_name="pytorch", producer_version="2.1"}
//   opset_import {"": 17, "com.microsoft": 1}
//   graph main_graph {
//     input %x:FLOAT[N,3,224,224]
//     initializer %w = FLOAT[8,3,3,3] #5f0c2a9d1b7e4c31
//     initializer %b = FLOAT[2] {0.5, -1.0}
//     %y:FLOAT[N,8,222,222] = Conv(%x, %w, %b) {group=1, kernel_shape=[3,3]}  # name: conv1
//     %q = com.microsoft::Foo(%y, _, %b)
//     %z = If(%cond)  # name: if1
//       else_branch: graph else_body {
//         %e = Neg(%y)
//         output %e
//       }
//       then_branch: graph then_body {
//         ...
//       }
//     output %z:FLOAT[N,8,222,222]
//   }
//
// Grammar of the pieces:
// - Header lines: `model {...}` lists the model fields that are set (ir_version, producer_name,
//   producer_version, domain, model_version, doc_string); `opset_import {...}` always; then
//   `metadata {"key": "value", ...}` and one `function <domain>::<name>` line per model-local
//   function, when there are any.
// - Values print as `%name`. Names containing whitespace, control characters, non-ASCII bytes or
//   one of `"\,()[]{}#=%` print quoted with C escapes: `%"a b"`. An omitted optional input or
//   output prints as `_`.
// - A value's type follows its name after a colon, when known: `%x:FLOAT[N,3]`. Dims are numbers,
//   symbolic names, or `?` when unknown; `FLOAT[]` is a scalar and `FLOAT` (no brackets) a tensor
//   of unknown rank. Sparse tensors print as `sparse_tensor(FLOAT[4])`, other types as
//   `seq(...)`, `map(INT64, ...)`, `optional(...)`.
// - Graph lines, in this order: `input %v:TYPE` (an initializer also listed as an input appears
//   both as `input` and `initializer`), `initializer %v = TENSOR`, one line per node,
//   `output %v:TYPE`.
// - Node: `outputs = [domain::]OpType(inputs) {attributes}  # name: node_name`. Outputs are
//   comma-separated with their types; a node without outputs prints no `=`. The default ONNX
//   domain prints no prefix. The attribute dict is absent when the node has no non-graph
//   attributes; the comment is absent when the node is unnamed.
// - Attribute values: ints `3`; floats always with a point or exponent, shortest round-trip form
//   (`1.0`, `0.1`, `1e-05`, `inf`, `nan`); strings quoted with C escapes; lists `[1, 2]`;
//   tensors as below; `@name` for a reference to a function attribute; sparse tensors as
//   `sparse_tensor(<bytes> #hash)`; type protos as their type.
// - Tensor: `TYPE[dims] {v0, v1, ...}` with exact values (integers as integers, floats as above,
//   bool as true/false, strings quoted); or, over `maxInlineElements` elements (and for complex
//   types), `TYPE[dims] #<16 hex digits of Tensor::contentHash>`. Tensors in external data add
//   ` external("file", offset=N, length=N)`. A tensor whose bytes cannot be read prints
//   `TYPE[dims] <unreadable: cause>` instead of throwing.
// - Graph-valued attributes follow their node's line, indented two more spaces, sorted by name:
//   `name: graph <graph name> { ... }`; a list of graphs prints one block per element as
//   `name[0]: graph ...`. Subgraph blocks have the same structure as the main graph.
#pragma once

#include <cstddef>
#include <ostream>
#include <string>

#include "qopt/ir/Graph.h"

namespace qopt {

struct PrintOptions {
  /// Tensors with more elements than this print as "FLOAT[64,3,3,3] #<hash>".
  size_t maxInlineElements = 16;
};

std::string printModel(const Model& model, const PrintOptions& options = {});
void printModel(const Model& model, std::ostream& out, const PrintOptions& options = {});
/// One graph block (`graph name { ... }`), subgraphs included.
std::string printGraph(const Graph& graph, const PrintOptions& options = {});
/// One node's line, without its subgraph blocks and without a trailing newline.
std::string printNode(const Node& node, const PrintOptions& options = {});
/// A value's type as printed after `%name:` ("FLOAT[N,3]"); "?" when unknown.
std::string printType(const ValueType& type);
/// A tensor as printed in initializers and attributes.
std::string printTensor(const Tensor& tensor, const PrintOptions& options = {});

}  // namespace qopt
