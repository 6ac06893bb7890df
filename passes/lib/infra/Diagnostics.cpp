#include "qopt/pass/Diagnostics.h"

#include <ostream>

namespace qopt {

void Diagnostics::warning(const std::string& message) {
  warnings_.push_back(message);
  if (sink_ && verbosity_ != Verbosity::Quiet) *sink_ << "qopt: warning: " << message << '\n';
}

void Diagnostics::note(const std::string& message) {
  if (sink_ && verbosity_ == Verbosity::Verbose) *sink_ << "qopt: note: " << message << '\n';
}

void Diagnostics::report(const std::string& text) {
  if (sink_ && verbosity_ != Verbosity::Quiet) *sink_ << text;
}

}  // namespace qopt
