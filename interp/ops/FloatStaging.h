// The compute-heavy kernels work on float (or double) buffers; 16-bit float tensors are widened
// to float on the way in and rounded (to nearest even) on the way out, which is what ONNX Runtime
// does for the ops it runs in float16 on CPU.
#pragma once

#include <vector>

#include "KernelSupport.h"

namespace qopt::interp {

/// A float view of a float tensor (no copy) or a widened copy of a float16/bfloat16 tensor.
class FloatInput {
 public:
  explicit FloatInput(const Array& a) {
    if (a.dataType() == DataType::Float) {
      data_ = a.data<float>();
      return;
    }
    copy_.resize(static_cast<size_t>(a.numel()));
    dispatchFloat(a.dataType(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* src = a.data<T>();
      for (size_t i = 0; i < copy_.size(); ++i) copy_[i] = static_cast<float>(toCompute(src[i]));
    });
    data_ = copy_.data();
  }
  const float* data() const { return data_; }

 private:
  const float* data_ = nullptr;
  std::vector<float> copy_;
};

/// A float buffer the kernel writes; commit() stores it into `out` (allocated with the output
/// type and shape), converting when that type is not float.
class FloatOutput {
 public:
  explicit FloatOutput(Array& out) : out_(out) {
    if (out.dataType() == DataType::Float) {
      data_ = out.data<float>();
    } else {
      copy_.resize(static_cast<size_t>(out.numel()));
      data_ = copy_.data();
    }
  }
  float* data() { return data_; }
  void commit() {
    if (out_.dataType() == DataType::Float) return;
    dispatchFloat(out_.dataType(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* dst = out_.data<T>();
      for (size_t i = 0; i < copy_.size(); ++i)
        dst[i] = fromCompute<T>(static_cast<ComputeT<T>>(copy_[i]));
    });
  }

 private:
  Array& out_;
  float* data_ = nullptr;
  std::vector<float> copy_;
};

}  // namespace qopt::interp
