// What the output model is for. Passes whose choices depend on the deployment target (which
// quantized types and axes are accepted, how FP16 fallback is expressed) read it from the
// PassContext, and accept a `target=` option that overrides it for one pipeline position.
#pragma once

#include <compare>
#include <optional>
#include <string>
#include <string_view>

#include "qopt/pass/Options.h"

namespace qopt {

class PassContext;

struct TrtVersion {
  int major = 10;
  int minor = 3;
  int patch = 0;

  auto operator<=>(const TrtVersion&) const = default;
  /// "10.3" (patch shown when non-zero: "8.6.1").
  std::string str() const;
  /// The number TensorRT writes in calibration cache headers: 8601 for 8.6.1, 100300 for 10.3
  /// (TensorRT 10 changed the scheme from M*1000+m*100+p to M*10000+m*100+p).
  int cacheVersionCode() const;
};

/// Parses "10", "10.3" or "8.6.1"; throws qopt::Error (Usage) on anything else.
TrtVersion parseTrtVersion(std::string_view text);

enum class TargetKind { TensorRT, Ort, Generic };

struct Target {
  TargetKind kind = TargetKind::TensorRT;
  TrtVersion trtVersion;  // meaningful when kind == TensorRT

  bool isTensorRT() const { return kind == TargetKind::TensorRT; }
  /// True for a TensorRT target of at least major.minor.
  bool trtAtLeast(int major, int minor = 0) const {
    return isTensorRT() && trtVersion >= TrtVersion{major, minor, 0};
  }
  /// "tensorrt-10.3", "ort", "generic": the form TargetOption reads.
  std::string str() const;
  bool operator==(const Target&) const = default;
};

/// "tensorrt", "ort", "generic".
std::string_view targetKindName(TargetKind kind);
/// Reads "tensorrt", "tensorrt-10.3", "ort", "generic"; throws qopt::Error (Usage) naming the
/// valid choices (with a did-you-mean).
Target parseTarget(std::string_view text);

/// The `target=` option of passes that depend on the target. Its default, "context", means the
/// target given on the command line (--target, --trt-version); any other value overrides it:
/// `insert-qdq{target=tensorrt-8.6}`; plain "tensorrt" keeps the command line's TensorRT version.
class TargetOption : public OptionBase {
 public:
  explicit TargetOption(OptionSet& owner, std::string name = "target",
                        std::string help =
                            "Deployment target: context (the command line's), "
                            "tensorrt, tensorrt-<version>, ort or generic");

  /// The target this pass works for: the override, else the context's.
  Target resolve(const PassContext& context) const;
  /// nullopt when left at "context".
  const std::optional<Target>& explicitTarget() const { return override_; }

  std::string typeName() const override { return "target"; }
  std::vector<std::string> choices() const override;
  OptionValue value() const override;
  OptionValue defaultValue() const override { return OptionValue::scalar("context"); }
  void parse(const OptionValue& text) override;
  void reset() override;

 private:
  std::optional<Target> override_;
  bool versionGiven_ = false;  // "tensorrt-8.6" rather than "tensorrt"
};

}  // namespace qopt
