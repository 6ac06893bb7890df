// Warnings and notes raised while a pipeline runs. They go to one stream (stderr in the driver)
// in the format "qopt: warning: <message>", and warnings are kept for reports.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace qopt {

enum class Verbosity { Quiet, Normal, Verbose };

class Diagnostics {
 public:
  /// `sink` must outlive this object; nullptr discards the text (warnings are still kept).
  explicit Diagnostics(std::ostream* sink = nullptr) : sink_(sink) {}

  void setSink(std::ostream* sink) { sink_ = sink; }
  void setVerbosity(Verbosity verbosity) { verbosity_ = verbosity; }
  Verbosity verbosity() const { return verbosity_; }
  bool verbose() const { return verbosity_ == Verbosity::Verbose; }

  /// Printed unless quiet; kept for reports.
  void warning(const std::string& message);
  /// Printed only when verbose.
  void note(const std::string& message);
  /// Text a pass reports to the user as is (a results table, already formatted, ending in a
  /// newline): printed unless quiet, not kept (passes publish results in PassContext::results).
  void report(const std::string& text);
  const std::vector<std::string>& warnings() const { return warnings_; }

 private:
  std::ostream* sink_;
  Verbosity verbosity_ = Verbosity::Normal;
  std::vector<std::string> warnings_;
};

}  // namespace qopt
