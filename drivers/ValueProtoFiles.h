// qopt-run's files for values that .npy cannot hold: sequences and optionals as ONNX's
// SequenceProto and OptionalProto (the format of ONNX's own test data), and tensors of types
// numpy lacks (strings) as TensorProto, so that any ONNX tooling reads them back.
#pragma once

#include <filesystem>

#include "qopt/interp/Array.h"
#include "qopt/ir/Type.h"

namespace qopt {

/// Reads a graph input whose declared type is a sequence or an optional (ValueType::Kind::Other)
/// from a SequenceProto or OptionalProto file. Throws qopt::Error naming the file.
interp::Array readValueProtoFile(const std::filesystem::path& file, const ValueType& declared);

/// Writes a sequence, an optional or a tensor as SequenceProto, OptionalProto or TensorProto.
void writeValueProtoFile(const std::filesystem::path& file, const interp::Array& value);

}  // namespace qopt
