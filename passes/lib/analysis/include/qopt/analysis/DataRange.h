// Whether data looks like what the model was trained on. A BatchNormalization right after the
// first Conv of an input keeps, per channel, the mean and variance that Conv's output had in
// training: data scaled or shifted the wrong way (0..255 pixels for a model trained on 0..1,
// a missing mean subtraction, audio in the wrong units) shows as a spread or offset many times
// what training saw. One sample is enough to see that.
#pragma once

#include <string>
#include <vector>

#include "qopt/analysis/DataSet.h"
#include "qopt/ir/Graph.h"

namespace qopt::analysis {

/// One sentence per input whose first Conv (read by a BatchNormalization) gives `sample`
/// outputs spread more than `ratio` times wider or narrower than the BatchNormalization's
/// running variance says (median over channels), or offset by more than `ratio` running
/// standard deviations; empty when nothing looks off or no such layer exists.
std::vector<std::string> dataRangeWarnings(const Graph& graph, const Sample& sample,
                                           double ratio = 8.0);

}  // namespace qopt::analysis
