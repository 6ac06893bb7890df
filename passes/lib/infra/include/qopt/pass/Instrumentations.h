// The pass manager observers behind the driver's debugging and reporting switches.
#pragma once

#include <chrono>
#include <iosfwd>
#include <string>
#include <vector>

#include "qopt/pass/Json.h"
#include "qopt/pass/PassManager.h"

namespace qopt {

/// --time-passes: a table of wall time per pipeline position, printed when the pipeline ends.
class PassTimer : public PassInstrumentation {
 public:
  explicit PassTimer(std::ostream& out) : out_(out) {}
  void passFinished(const PassRun& run, const Model& model, PassContext& context) override;
  void pipelineFinished(const Model& model, PassContext& context) override;

 private:
  struct Row {
    const Pass* pass;
    int runs = 0;
    double seconds = 0;
  };
  std::ostream& out_;
  std::vector<Row> rows_;
};

/// --print-after-all / --print-after=<pass>: the IR (Printer.h) after the named passes.
class IrPrinter : public PassInstrumentation {
 public:
  /// Empty `passNames` prints after every pass.
  IrPrinter(std::ostream& out, std::vector<std::string> passNames)
      : out_(out), passNames_(std::move(passNames)) {}
  void passFinished(const PassRun& run, const Model& model, PassContext& context) override;

 private:
  std::ostream& out_;
  std::vector<std::string> passNames_;
};

/// --verify-each: the structural verifier (Verifier.h) on the input, so that a broken input is
/// not blamed on the first pass (qopt::Error, Input), then after every pass; the first problem
/// stops the pipeline with a qopt::Error (Verification) naming the pass.
class EachPassVerifier : public PassInstrumentation {
 public:
  void pipelineStarted(const Pipeline& pipeline, const Model& model, PassContext& context) override;
  void passFinished(const PassRun& run, const Model& model, PassContext& context) override;
};

/// -v: remarks as "qopt: remark: <pass>: <subject>: <kind>: <message>".
class RemarkPrinter : public PassInstrumentation {
 public:
  explicit RemarkPrinter(std::ostream& out) : out_(out) {}
  void passFinished(const PassRun& run, const Model& model, PassContext& context) override;

 private:
  std::ostream& out_;
};

/// --report: collects per pass its name, options, whether it changed the model, statistics,
/// remarks and wall time; report() adds the pipeline, warnings, published results and the
/// input-name -> current-name map. The caller adds file paths and hashes.
class ReportBuilder : public PassInstrumentation {
 public:
  void pipelineStarted(const Pipeline& pipeline, const Model& model, PassContext& context) override;
  void passFinished(const PassRun& run, const Model& model, PassContext& context) override;
  void fixpointFinished(const FixpointRun& run, const Model& model, PassContext& context) override;
  void pipelineFinished(const Model& model, PassContext& context) override;

  /// The report as a JSON object (valid once the pipeline finished).
  const Json& report() const { return report_; }
  Json& report() { return report_; }

  /// An option's value as typed JSON (bool, number, string, array).
  static Json optionJson(const OptionBase& option);

 private:
  Json report_ = Json::object();
  Json passes_ = Json::array();
  std::vector<std::string> inputNames_;
  std::chrono::steady_clock::time_point started_;
};

}  // namespace qopt
