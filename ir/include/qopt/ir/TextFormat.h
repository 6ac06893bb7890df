// Models from ONNX's textual syntax (onnx/defs/parser.h), for test inputs and quick experiments:
//
//   <ir_version: 8, opset_import: ["" : 17, "com.microsoft" : 1]>
//   main (float[N,3] x, float[3] w = {1.0, 2.0, 3.0}) => (float[N,3] y)
//   <float[1] bias = {0.5}, float[N,3] t>
//   {
//     t = Mul(x, w)
//     y = Add <some_attr = 1> (t, bias)   # a comment
//   }
//
// What ONNX 1.12's parser (the one Debian links) accepts:
// - Model header `<...>`: ir_version, opset_import, producer_name, producer_version, domain,
//   model_version, doc_string, metadata_props (["key": "value"]). Model-local functions may follow
//   the graph (`<domain: "local", opset_import: [...]> f (a) => (b) { ... }`).
// - Types: float, double, (u)int8/16/32/64, bool, string, float16, bfloat16, complex64/128, with
//   dims as numbers, symbolic names or `?`; `float` is a scalar, `float[]` a tensor of unknown
//   rank; seq(...), map(k, v), optional(...), sparse_tensor(...).
// - Initializers: `float[2] w = {1, 2}` in the input list (the value is then both a graph input
//   and an initializer, IR < 4 style) or in the value-info list `<...>` after the outputs (an
//   initializer only). Values of tensors (initializers and tensor attributes, `t = float[2] {1,
//   2}`) can be written only for float, double, (u)int8/16/32/64, bool and string.
// - Nodes: `a, b = domain.Op <attr = value, ...> (x, , z)`; an empty name omits an optional
//   input or output. Attributes: int, float (needs a point or an exponent: `1.0`, `1e-5`;
//   `a: float = 1` still gives an int), string (no escape sequences), lists `[1, 2]`,
//   `["a", "b"]`, tensor, graph (`g () => (float z) { z = Identity(x) }`, for If/Loop/Scan
//   bodies; subgraphs may use values of enclosing graphs), and `@name` references in functions.
//
// Not supported by that parser, and turned into a qopt::Error here where the parser would
// silently produce something else: lists of tensors or graphs, empty lists, special float values
// (`inf`, `nan`), node names, sparse tensor and type-proto attribute values, tensor literals of
// float16/bfloat16/float8/4-bit/complex types, and numbers out of range. The parser drops errors
// inside a tensor or graph attribute value and stops there, so those are reported at that
// position as a missing `>`.
#pragma once

#include <filesystem>
#include <memory>
#include <string_view>

#include "qopt/ir/Graph.h"
#include "qopt/ir/OnnxIO.h"

namespace qopt {

/// Parses ONNX text. Errors are qopt::Error (kind Input) naming `displayName` and the parser's
/// message with line and column where the parser gives them.
std::unique_ptr<Model> parseModelText(std::string_view text,
                                      std::string_view displayName = "<text>",
                                      const LoadOptions& options = {});

/// True when `bytes` look like ONNX text rather than a binary ModelProto: after whitespace and
/// `#` comments they start with `<` or an identifier, and the first KiB holds no control bytes
/// other than whitespace (binary protobuf starts with field tags and lengths).
bool looksLikeModelText(std::string_view bytes);

/// Reads a file that holds either a binary model or ONNX text (chosen by content). External
/// data of binary models is relative to the file's folder.
std::unique_ptr<Model> loadModelAnyFormat(const std::filesystem::path& path,
                                          const LoadOptions& options = {});

}  // namespace qopt
