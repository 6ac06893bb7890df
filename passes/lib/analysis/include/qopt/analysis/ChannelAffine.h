// Tensors that a pass changed exactly but on purpose: equalize and smooth leave a tensor's
// channels as a_c * x + b_c where the input model computed x (a divided producer, a shifted
// bias), and make the layers reading it undo that. They record it in the pass context (an
// analysis kept for the whole run, and results()["channel-affine"] for --report), composed when a
// tensor is changed twice; verify and bias-correct map such a tensor back before comparing it with
// the input model's.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "qopt/interp/Array.h"
#include "qopt/pass/PassContext.h"

namespace qopt::analysis {

struct ChannelAffine {
  int64_t axis = 1;  // negative: from the end
  std::vector<double> scale;
  std::vector<double> offset;  // empty: 0

  /// x from a * x + b: the array's channels along `axis`; the array unchanged when its channel
  /// count is not the record's.
  interp::Array undo(const interp::Array& changed) const;
};

/// Records that `tensor` now holds scale * x + offset per channel along `axis` (offset empty:
/// 0), after what earlier records of it say.
void recordChannelAffine(PassContext& context, const std::string& tensor, int64_t axis,
                         std::span<const double> scale, std::span<const double> offset = {});

/// Records that `tensor` now holds x / divisors per channel along `axis` (a division folded into
/// what computes it).
void recordChannelDivision(PassContext& context, const std::string& tensor, int64_t axis,
                           std::span<const double> divisors);

/// Every record, by tensor name.
std::map<std::string, ChannelAffine> channelAffines(const PassContext& context);

}  // namespace qopt::analysis
