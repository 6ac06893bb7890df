#include "qopt/quant/ScalesFile.h"

#include <cmath>

#include <fmt/format.h>

#include "TextFile.h"
#include "qopt/ir/Error.h"
#include "qopt/pass/Json.h"

namespace qopt::quant {

namespace {

constexpr std::string_view kFormat = "qopt-scales";
constexpr int64_t kVersion = 1;

Json numberList(const std::vector<double>& values, bool perChannel) {
  if (!perChannel) return Json(values.front());
  Json out = Json::array();
  for (double v : values) out.push(Json(v));
  return out;
}

template <class Fail>
Json autoJson(const AutoRecord& record, const Fail& fail) {
  Json candidates = Json::array();
  for (const AutoRecord::Candidate& c : record.candidates) {
    // An unmeasurable candidate (its consumers' float output was all 0) has an infinite error,
    // which JSON cannot hold: written as null, like one not measured.
    const bool finite = c.error && std::isfinite(*c.error);
    if (!std::isfinite(c.amax))
      throw fail(fmt::format("auto candidate amax {} is not finite", c.amax));
    Json item = Json::object();
    item.append("calibrator", Json(c.calibrator));
    item.append("amax", Json(c.amax));
    item.append("error", finite ? Json(*c.error) : Json());
    candidates.push(std::move(item));
  }
  Json out = Json::object();
  out.append("chosen", Json(record.chosen));
  out.append("reason", Json(record.reason));
  out.append("candidates", std::move(candidates));
  return out;
}

Json entryJson(const ScaleEntry& entry) {
  std::string subject = fmt::format("tensor '{}'", entry.tensor);
  auto fail = [&](const std::string& cause) {
    return Error(ErrorKind::Internal, {}, subject, cause);
  };
  bool perChannel = entry.axis.has_value();
  if (entry.amax.empty() || entry.amax.size() != entry.scale.size()) {
    throw fail(fmt::format("{} amax values for {} scales", entry.amax.size(), entry.scale.size()));
  }
  if (!entry.zeroPoint.empty() && entry.zeroPoint.size() != entry.scale.size()) {
    throw fail(
        fmt::format("{} zero points for {} scales", entry.zeroPoint.size(), entry.scale.size()));
  }
  if (!perChannel && entry.scale.size() != 1) {
    throw fail(fmt::format("{} scales but no axis", entry.scale.size()));
  }
  for (size_t i = 0; i < entry.scale.size(); ++i) {
    if (!std::isfinite(entry.amax[i]) || !std::isfinite(entry.scale[i])) {
      throw fail(fmt::format("amax {} / scale {} is not finite", entry.amax[i], entry.scale[i]));
    }
  }
  Json out = Json::object();
  out.append("tensor", Json(entry.tensor));
  out.append("amax", numberList(entry.amax, perChannel));
  out.append("scale", numberList(entry.scale, perChannel));
  // An empty zero-point list means zero everywhere (symmetric quantization).
  std::vector<int64_t> zeroPoint = entry.zeroPoint;
  zeroPoint.resize(entry.scale.size(), 0);
  if (perChannel) {
    Json zp = Json::array();
    for (int64_t z : zeroPoint) zp.push(Json(z));
    out.append("zero_point", std::move(zp));
  } else {
    out.append("zero_point", Json(zeroPoint.front()));
  }
  out.append("type", Json(entry.type));
  out.append("axis", perChannel ? Json(*entry.axis) : Json());
  out.append("calibrator", Json(entry.calibrator));
  out.append("samples", Json(entry.samples));
  if (entry.autoChoice) out.append("auto", autoJson(*entry.autoChoice, fail));
  return out;
}

class EntryReader {
 public:
  EntryReader(const Json& json, std::string_view source, size_t index)
      : json_(json), source_(source), subject_(fmt::format("tensors[{}]", index)) {}

  Error error(const std::string& cause) const {
    return Error(ErrorKind::Input, std::string(source_), subject_, cause);
  }

  ScaleEntry read() {
    if (!json_.isObject()) throw error("is not an object");
    ScaleEntry entry;
    const Json* tensor = json_.find("tensor");
    if (!tensor || !tensor->isString() || tensor->asString().empty()) {
      throw error("has no \"tensor\" name");
    }
    entry.tensor = tensor->asString();
    subject_ = fmt::format("tensor '{}'", entry.tensor);
    if (const Json* axis = json_.find("axis"); axis && !axis->isNull()) {
      if (!axis->isInt()) throw error("\"axis\" is not an integer or null");
      entry.axis = axis->asInt();
    }
    entry.amax = doubles("amax");
    entry.scale = doubles("scale");
    entry.zeroPoint = integers("zero_point");
    if (entry.amax.size() != entry.scale.size() || entry.zeroPoint.size() != entry.scale.size()) {
      throw error(fmt::format("{} amax values, {} scales and {} zero points differ in length",
                              entry.amax.size(), entry.scale.size(), entry.zeroPoint.size()));
    }
    if (!entry.axis && entry.scale.size() != 1) {
      throw error(fmt::format("{} scales but \"axis\" is null", entry.scale.size()));
    }
    entry.type = optionalString("type", "int8");
    entry.calibrator = optionalString("calibrator", "");
    if (const Json* samples = json_.find("samples"); samples && !samples->isNull()) {
      if (!samples->isInt() || samples->asInt() < 0) {
        throw error("\"samples\" is not a non-negative integer");
      }
      entry.samples = static_cast<uint64_t>(samples->asInt());
    }
    if (const Json* record = json_.find("auto"); record && !record->isNull()) {
      entry.autoChoice = readAuto(*record);
    }
    return entry;
  }

 private:
  /// A number or a non-empty array of numbers.
  const Json::Array* listOf(std::string_view key, const Json*& single) const {
    const Json* value = json_.find(key);
    if (!value) throw error(fmt::format("has no \"{}\"", key));
    if (value->isArray()) {
      if (value->asArray().empty()) throw error(fmt::format("\"{}\" is an empty array", key));
      return &value->asArray();
    }
    single = value;
    return nullptr;
  }

  /// `take` (which checks one number and returns it) over the number or the array at `key`.
  template <class T, class Take>
  std::vector<T> numbers(std::string_view key, Take take) const {
    const Json* single = nullptr;
    const Json::Array* list = listOf(key, single);
    std::vector<T> out;
    if (list) {
      for (const Json& v : *list) out.push_back(take(v));
    } else {
      out.push_back(take(*single));
    }
    return out;
  }

  std::vector<double> doubles(std::string_view key) const {
    return numbers<double>(key, [&](const Json& v) {
      if (!v.isNumber() || !std::isfinite(v.asDouble())) {
        throw error(fmt::format("\"{}\" holds a value that is not a finite number", key));
      }
      return v.asDouble();
    });
  }

  std::vector<int64_t> integers(std::string_view key) const {
    return numbers<int64_t>(key, [&](const Json& v) {
      if (!v.isInt()) throw error(fmt::format("\"{}\" holds a value that is not an integer", key));
      return v.asInt();
    });
  }

  std::string optionalString(std::string_view key, std::string fallback) const {
    const Json* value = json_.find(key);
    if (!value || value->isNull()) return fallback;
    if (!value->isString()) throw error(fmt::format("\"{}\" is not a string", key));
    return value->asString();
  }

  AutoRecord readAuto(const Json& json) const {
    if (!json.isObject()) throw error("\"auto\" is not an object");
    auto text = [&](const Json& object, std::string_view key) {
      const Json* value = object.find(key);
      if (!value || !value->isString()) {
        throw error(fmt::format("\"auto\" has no string \"{}\"", key));
      }
      return value->asString();
    };
    AutoRecord record;
    record.chosen = text(json, "chosen");
    record.reason = text(json, "reason");
    const Json* candidates = json.find("candidates");
    if (!candidates || !candidates->isArray()) {
      throw error("\"auto\" has no \"candidates\" array");
    }
    for (const Json& item : candidates->asArray()) {
      if (!item.isObject()) throw error("an \"auto\" candidate is not an object");
      AutoRecord::Candidate c;
      c.calibrator = text(item, "calibrator");
      const Json* amax = item.find("amax");
      if (!amax || !amax->isNumber() || !std::isfinite(amax->asDouble())) {
        throw error("an \"auto\" candidate's \"amax\" is not a finite number");
      }
      c.amax = amax->asDouble();
      if (const Json* e = item.find("error"); e && !e->isNull()) {
        if (!e->isNumber() || !std::isfinite(e->asDouble())) {
          throw error("an \"auto\" candidate's \"error\" is not a finite number or null");
        }
        c.error = e->asDouble();
      }
      record.candidates.push_back(std::move(c));
    }
    return record;
  }

  const Json& json_;
  std::string_view source_;
  std::string subject_;
};

}  // namespace

std::string formatScales(const std::vector<ScaleEntry>& entries) {
  Json tensors = Json::array();
  for (const ScaleEntry& entry : entries) tensors.push(entryJson(entry));
  Json root = Json::object();
  root.append("format", Json(kFormat));
  root.append("version", Json(kVersion));
  root.append("tensors", std::move(tensors));
  return root.dump(2) + "\n";
}

std::vector<ScaleEntry> parseScales(std::string_view text, std::string_view source) {
  Json root = Json::parse(text, source);
  auto fail = [&](const std::string& cause) {
    return Error(ErrorKind::Input, std::string(source), {}, cause);
  };
  if (!root.isObject()) throw fail("not a qopt-scales file: the top level is not an object");
  const Json* format = root.find("format");
  if (!format || !format->isString() || format->asString() != kFormat) {
    throw fail("not a qopt-scales file: \"format\" is not \"qopt-scales\"");
  }
  const Json* version = root.find("version");
  if (!version || !version->isInt()) throw fail("\"version\" is missing or not an integer");
  if (version->asInt() != kVersion) {
    throw fail(fmt::format("qopt-scales version {} is not supported (this qopt reads version {})",
                           version->asInt(), kVersion));
  }
  const Json* tensors = root.find("tensors");
  if (!tensors || !tensors->isArray()) throw fail("\"tensors\" is missing or not an array");
  std::vector<ScaleEntry> entries;
  entries.reserve(tensors->size());
  size_t index = 0;
  for (const Json& item : tensors->asArray()) {
    entries.push_back(EntryReader(item, source, index++).read());
  }
  return entries;
}

void writeScales(const std::vector<ScaleEntry>& entries, const std::filesystem::path& path) {
  detail::writeTextFile(path, [&] { return formatScales(entries); });
}

std::vector<ScaleEntry> readScales(const std::filesystem::path& path) {
  return parseScales(detail::readTextFile(path), path.string());
}

}  // namespace qopt::quant
