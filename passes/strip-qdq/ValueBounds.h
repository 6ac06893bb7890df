// What the producer of a float tensor guarantees about its values: Relu makes them >= 0, Clip
// bounds them, Sigmoid keeps them in [0, 1]; ops that only move or select values keep the bounds
// of their input. strip-qdq inserts a clamp only where these bounds do not already hold it.
#pragma once

#include <limits>

#include "qopt/ir/Graph.h"

namespace qopt::stripqdq {

struct Bounds {
  double lo = -std::numeric_limits<double>::infinity();
  double hi = std::numeric_limits<double>::infinity();
};

/// The bounds `value` is known to satisfy (unbounded when nothing is known).
Bounds knownBounds(const Value* value);

}  // namespace qopt::stripqdq
