#include "qopt/pass/Target.h"

#include <charconv>

#include <fmt/format.h>

#include "qopt/ir/Error.h"
#include "qopt/pass/EnumNames.h"
#include "qopt/pass/PassContext.h"
#include "qopt/pass/Suggest.h"

namespace qopt {

std::string TrtVersion::str() const {
  if (patch != 0) return fmt::format("{}.{}.{}", major, minor, patch);
  return fmt::format("{}.{}", major, minor);
}

int TrtVersion::cacheVersionCode() const {
  if (major >= 10) return major * 10000 + minor * 100 + patch;
  return major * 1000 + minor * 100 + patch;
}

TrtVersion parseTrtVersion(std::string_view text) {
  int parts[3] = {0, 0, 0};
  size_t count = 0;
  size_t pos = 0;
  bool ok = !text.empty();
  while (ok && pos <= text.size()) {
    size_t end = text.find('.', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view piece = text.substr(pos, end - pos);
    int value = 0;
    auto [ptr, ec] = std::from_chars(piece.data(), piece.data() + piece.size(), value);
    if (count == 3 || piece.empty() || ec != std::errc() || ptr != piece.data() + piece.size() ||
        value < 0 || value > 99) {
      ok = false;
      break;
    }
    parts[count++] = value;
    pos = end + 1;
  }
  if (!ok || parts[0] == 0) {
    throw Error(ErrorKind::Usage, "", "",
                fmt::format("'{}' is not a TensorRT version (expected MAJOR[.MINOR[.PATCH]], e.g. "
                            "10.3 or 8.6.1)",
                            text));
  }
  return TrtVersion{parts[0], parts[1], parts[2]};
}

std::string_view targetKindName(TargetKind kind) {
  constexpr EnumName<TargetKind> kNames[] = {{TargetKind::TensorRT, "tensorrt"},
                                             {TargetKind::Ort, "ort"},
                                             {TargetKind::Generic, "generic"}};
  return enumName(kNames, kind, "generic");
}

std::string Target::str() const {
  if (kind == TargetKind::TensorRT) return "tensorrt-" + trtVersion.str();
  return std::string(targetKindName(kind));
}

Target parseTarget(std::string_view text) {
  static const std::vector<std::string> kNames = {"tensorrt", "ort", "generic"};
  Target target;
  std::string_view kind = text;
  std::string_view version;
  if (text.starts_with("tensorrt-")) {
    kind = "tensorrt";
    version = text.substr(9);
  }
  if (kind == "tensorrt") {
    target.kind = TargetKind::TensorRT;
    if (!version.empty() || text != "tensorrt") target.trtVersion = parseTrtVersion(version);
  } else if (kind == "ort") {
    target.kind = TargetKind::Ort;
  } else if (kind == "generic") {
    target.kind = TargetKind::Generic;
  } else {
    throw Error(ErrorKind::Usage, "", "",
                fmt::format("unknown target '{}'{} (valid choices: tensorrt, tensorrt-<version>, "
                            "ort, generic)",
                            text, didYouMean(text, kNames)));
  }
  return target;
}

TargetOption::TargetOption(OptionSet& owner, std::string name, std::string help)
    : OptionBase(owner, std::move(name), std::move(help)) {}

Target TargetOption::resolve(const PassContext& context) const {
  if (!override_) return context.target;
  Target target = *override_;
  // "tensorrt" without a version means the command line's TensorRT version.
  if (target.isTensorRT() && !versionGiven_) target.trtVersion = context.target.trtVersion;
  return target;
}

std::vector<std::string> TargetOption::choices() const {
  return {"context", "tensorrt", "tensorrt-<version>", "ort", "generic"};
}

OptionValue TargetOption::value() const {
  if (!override_) return OptionValue::scalar("context");
  if (override_->isTensorRT() && !versionGiven_) return OptionValue::scalar("tensorrt");
  return OptionValue::scalar(override_->str());
}

void TargetOption::parse(const OptionValue& text) {
  const std::string& word = option_detail::scalarText(text);
  if (word == "context") {
    reset();
    markExplicit(true);
    return;
  }
  try {
    override_ = parseTarget(word);
  } catch (const Error& e) {
    if (word.starts_with("tensorrt-")) throw OptionValueError{e.cause()};
    throw OptionValueError{fmt::format("'{}' is not a known target", word)};
  }
  versionGiven_ = word.starts_with("tensorrt-");
  markExplicit(true);
}

void TargetOption::reset() {
  override_.reset();
  versionGiven_ = false;
  markExplicit(false);
}

}  // namespace qopt
