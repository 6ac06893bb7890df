#include "ReportSummary.h"

#include <cctype>
#include <cmath>

#include <fmt/format.h>

#include "qopt/analysis/Metrics.h"

namespace qopt::analysis {

namespace {

// ----- task figures ---------------------------------------------------------------------------

// A share as a percentage with one decimal; more where one decimal would round a share below 1
// up to "100.0" (a figure short of its bound must not read as perfect).
std::string percent(double share) {
  for (int decimals = 1; decimals <= 4; ++decimals) {
    std::string text = fmt::format("{:.{}f}", 100.0 * share, decimals);
    if (share >= 1.0 || text.rfind("100.", 0) != 0) return text + " %";
  }
  return fmt::format("{:.4f} %", 100.0 * share);
}

// Counts read back from a report file may come as floating-point numbers.
int64_t count(const Json& value) {
  return value.isNumber() ? static_cast<int64_t>(std::llround(value.asDouble())) : 0;
}

std::string plural(int64_t count, std::string_view one, std::string_view many) {
  return fmt::format("{} {}", count, count == 1 ? one : many);
}

// "16 evaluation samples" from verify's data origin ("eval:<path>", "calib:<path>", "random").
std::string samplesText(const Json& verify) {
  const int64_t n = count(verify["samples"]);
  const std::string origin = verify["data"].isString() ? verify["data"].asString() : "";
  if (origin.rfind("eval", 0) == 0) return plural(n, "evaluation sample", "evaluation samples");
  if (origin.rfind("calib", 0) == 0) {
    return plural(n, "calibration sample", "calibration samples");
  }
  if (origin == "random") return plural(n, "random input", "random inputs");
  return plural(n, "sample", "samples");
}

const Json* number(const Json& object, std::string_view key) {
  const Json* v = object.find(key);
  return v && v->isNumber() ? v : nullptr;
}

std::string bound(double share) {
  return fmt::format("{:g} %", 100.0 * share);
}

// "positions > 0.5" with the rule's threshold (0.5 for probabilities, 0 for logits).
std::string above(const Json& output) {
  const Json* t = number(output, "threshold");
  return fmt::format("> {:g}", t ? t->asDouble() : 0.5);
}

}  // namespace

std::vector<TaskFigure> taskFigures(const Json& verify, std::string_view reference) {
  std::vector<TaskFigure> figures;
  const Json* outputs = verify.find("outputs");
  if (outputs == nullptr || !outputs->isArray()) return figures;
  const std::string against = reference.empty() ? "FP32" : "the reference model";
  const std::string on = samplesText(verify);
  const Json& budget = verify["budget"];
  const double decisions = number(budget, "decisions") ? budget["decisions"].asDouble() : 0.98;
  const double mapIou = number(budget, "map-iou") ? budget["map-iou"].asDouble() : 0.9;
  const double relBound = number(budget, "rel-error") ? budget["rel-error"].asDouble() : 0.2;
  const double guard = number(budget, "guard") ? budget["guard"].asDouble() : 0.5;
  for (const Json& o : outputs->asArray()) {
    TaskFigure f;
    const std::string name = o["name"].isString() ? o["name"].asString() : "";
    const Json* logitsOf = o.find("logits-of");
    f.logits = logitsOf && logitsOf->isString();
    f.output = f.logits ? fmt::format("{} (logits of {})", name, logitsOf->asString()) : name;
    f.passed = o["passed"].isBool() && o["passed"].asBool();
    const std::string rule = o["rule"].isString() ? o["rule"].asString() : "relative";
    const Json& m = o["metrics"];
    const double rel = m.find("rel-err") ? metricFromJson(m["rel-err"]) : NAN;
    std::string figure;  // "98.1 % of 318 positions"
    std::string what;    // "Sequence agreement with FP32 (...)"
    std::string limit;   // "bound 98 %"
    if (rule == "relative") {
      what = fmt::format("Relative error against {}", against);
      figure = std::isnan(rel) ? "-" : fmt::format("{:.3g}", rel);
      limit = fmt::format("bound {:g}", relBound);
    } else if (rule == "map") {
      what = fmt::format("Map agreement with {} (IoU of positions {})", against, above(o));
      figure = number(m, "map-iou") ? percent(m["map-iou"].asDouble())
                                    : fmt::format("no position {} in either model", above(o));
      limit = "bound " + bound(mapIou);
    } else {
      std::string unit = "rows";
      if (rule == "top-1") {
        what = fmt::format("Top-1 agreement with {} (rows it decides clearly)", against);
      } else if (rule == "sequence") {
        what = fmt::format("Sequence agreement with {} (top-1 per position it decides clearly)",
                           against);
        unit = "positions";
      } else if (rule == "class-map") {
        what = fmt::format("Class map agreement with {} (top-1 per pixel it decides clearly)",
                           against);
        unit = "pixels";
      } else {  // binary
        what = fmt::format("Decision agreement with {} (scores {} it decides clearly)", against,
                           above(o));
        unit = "scores";
      }
      const Json* rows = number(m, "clear-rows");
      figure =
          number(m, "clear-top1") && rows && count(*rows) > 0
              ? fmt::format("{} of {} {}", percent(m["clear-top1"].asDouble()), count(*rows), unit)
              : fmt::format("no {} decided clearly", unit);
      limit = "bound " + bound(decisions);
    }
    f.sentence = fmt::format("{}: {} on {} \u2014 {}: {}", what, figure, on, limit,
                             f.passed ? "passed" : "FAILED");
    if (rule != "relative" && !std::isnan(rel)) {
      f.detail = fmt::format("relative error {:.3g} (at most {:g})", rel, guard);
    }
    // The explicit budgets (cosine=, sqnr=, max-abs=, top1=), which every output meets on top.
    auto extra = [&](const char* key, const char* label, std::string_view relation, double unset) {
      const Json* b = number(budget, key);
      if (b == nullptr || b->asDouble() == unset || m.find(key) == nullptr) return;
      f.detail += fmt::format("{}{} {:.4g} ({} {:g})", f.detail.empty() ? "" : "; ", label,
                              metricFromJson(m[key]), relation, b->asDouble());
    };
    extra("cosine", "cosine", "at least", -1.0);
    extra("sqnr-db", "SQNR (dB)", "at least", -1.0);
    extra("max-abs", "max abs error", "at most", -1.0);
    extra("top1", "top-1 agreement", "at least", -1.0);
    for (const Json& failure : o["failures"].isArray() ? o["failures"].asArray() : Json::Array{}) {
      if (failure.isString()) f.detail += (f.detail.empty() ? "" : "; ") + failure.asString();
    }
    figures.push_back(std::move(f));
  }
  return figures;
}

// ----- pass headlines -------------------------------------------------------------------------

namespace {

enum class When { Always, NonZero, Zero };  // on the segment's first counter

struct Segment {
  When when;
  // "{bn-folded} of {bn-found:layer|layers}": {counter} is its value, {counter:one|many} the
  // value and the noun it counts, {?counter} only tests the segment's condition on it, {@option}
  // is the pass's option upper-cased.
  const char* text;
};

struct Headline {
  const char* pass;
  std::vector<Segment> segments;
};

const std::vector<Headline>& headlines() {
  static const std::vector<Headline> kHeadlines = {
      {"fold-bn",
       {{When::Zero, "{?bn-found}no BatchNormalization in the model: nothing to fold"},
        {When::NonZero,
         "{bn-folded} of {bn-found} BatchNormalization folded into the layer "
         "before them"},
        {When::NonZero, "{bn-kept} kept"}}},
      {"equalize",
       {{When::Always,
         "{pairs-equalized} of {pairs-found:layer pair|layer pairs} equalized "
         "across channels"},
        {When::NonZero,
         "{depthwise-balanced:depthwise layer|depthwise layers} given balanced "
         "inputs"},
        {When::NonZero, "{pairs-absorbed:bias|biases} absorbed into the next layer"}}},
      {"insert-qdq",
       {{When::Always,
         "{nodes-quantized:layer|layers} quantized "
         "({activation-qdq-pairs:activation Q/DQ pair|activation Q/DQ pairs}, "
         "{weights-quantized:weight|weights})"},
        {When::NonZero, "{weights-gptq:weight|weights} rounded by GPTQ"},
        {When::NonZero, "{nodes-excluded:layer|layers} excluded"}}},
      {"mixed-precision",
       {{When::Always,
         "{layers-in-float} of {quantized-layers:quantized layer|quantized layers} "
         "returned to {@fallback}"},
        {When::NonZero, "{?budget-met}budget met"},
        {When::Zero, "{?budget-met}budget NOT met"}}},
      {"bias-correct",
       {{When::Always, "{biases-corrected:bias|biases} corrected, {biases-added} added"},
        {When::NonZero, "{layers-skipped:layer|layers} skipped"}}},
      {"verify",
       {{When::Always, "{samples:sample|samples} compared"},
        {When::NonZero, "{layers-compared:layer|layers} compared, {layers-flagged} flagged"},
        {When::Zero, "{?outputs-failed}every output within its bound"},
        {When::NonZero, "{outputs-failed:output|outputs} failed"}}},
      {"check-trt",
       {{When::Always,
         "{errors:error|errors}, {warnings:warning|warnings} against TensorRT's "
         "rules"}}},
      {"to-fp16",
       {{When::Always, "{nodes-converted:node|nodes} converted to FP16"},
        {When::NonZero, "{nodes-kept-float32} kept in FP32"},
        {When::NonZero, "{values-clamped:value|values} clamped to FP16's range"}}},
      {"strip-qdq",
       {{When::Always, "{pairs-removed:Q/DQ pair|Q/DQ pairs} removed"},
        {When::NonZero, "{weights-folded:weight|weights} folded back to float"}}},
      {"dce",
       {{When::Always,
         "{nodes-removed:node|nodes} and "
         "{initializers-removed:initializer|initializers} removed"}}},
      {"fold-constants", {{When::Always, "{nodes-folded:node|nodes} folded into constants"}}},
      {"smooth",
       {{When::Always, "{layers-smoothed:layer|layers} smoothed"},
        {When::NonZero, "{layers-skipped} skipped"}}},
      {"quantize-weights",
       {{When::Always, "{weights-quantized:weight|weights} quantized"},
        {When::NonZero, "{weights-skipped} skipped"}}},
  };
  return kHeadlines;
}

// The segment with its placeholders filled; false when a counter or option it names is missing
// or its condition does not hold.
bool fill(const Segment& segment, const Json& statistics, const Json& options, std::string& out) {
  std::string_view text = segment.text;
  bool first = true;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t open = text.find('{', pos);
    if (open == std::string_view::npos) {
      out.append(text.substr(pos));
      break;
    }
    out.append(text.substr(pos, open - pos));
    size_t close = text.find('}', open);
    std::string_view field = text.substr(open + 1, close - open - 1);
    pos = close + 1;
    if (!field.empty() && field[0] == '@') {
      const Json* option = options.isObject() ? options.find(field.substr(1)) : nullptr;
      if (option == nullptr || !option->isString()) return false;
      for (char c : option->asString()) out += static_cast<char>(std::toupper(c));
      continue;
    }
    const bool selectOnly = !field.empty() && field[0] == '?';
    if (selectOnly) field.remove_prefix(1);
    const size_t colon = field.find(':');
    const Json* value = statistics.find(field.substr(0, colon));
    if (value == nullptr || !value->isNumber()) return false;
    const int64_t n = count(*value);
    if (first &&
        ((segment.when == When::NonZero && n == 0) || (segment.when == When::Zero && n != 0))) {
      return false;
    }
    first = false;
    if (selectOnly) continue;
    if (colon == std::string_view::npos) {
      out += std::to_string(n);
    } else {
      std::string_view nouns = field.substr(colon + 1);
      const size_t bar = nouns.find('|');
      out += plural(n, nouns.substr(0, bar), nouns.substr(bar + 1));
    }
  }
  return true;
}

}  // namespace

std::string passHeadline(std::string_view name, const Json& statistics, const Json& options) {
  if (!statistics.isObject()) return "";
  for (const Headline& h : headlines()) {
    if (name != h.pass) continue;
    std::string line;
    for (const Segment& segment : h.segments) {
      std::string part;
      if (!fill(segment, statistics, options, part)) continue;
      line += (line.empty() ? "" : "; ") + part;
    }
    return line;
  }
  return "";
}

}  // namespace qopt::analysis
