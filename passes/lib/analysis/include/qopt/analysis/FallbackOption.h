// The `fallback=float|fp16` option of passes that return quantized layers to float.
#pragma once

#include "qopt/analysis/QuantizedLayers.h"
#include "qopt/pass/Options.h"

namespace qopt::analysis {

class FallbackOption : public EnumOption<FloatFallback> {
 public:
  explicit FallbackOption(OptionSet& owner)
      : EnumOption<FloatFallback>(
            owner, "fallback", FloatFallback::Float,
            "What a layer left in float runs in: float (float32) or fp16 "
            "(float16, written into the types)",
            {{FloatFallback::Float, "float"}, {FloatFallback::Float16, "fp16"}}) {}
};

}  // namespace qopt::analysis
