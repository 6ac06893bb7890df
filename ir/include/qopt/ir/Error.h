// Errors carry the file, the node or tensor, and the cause, so that every message a user sees
// can be acted on without a debugger. Nothing in qopt aborts: code throws qopt::Error and the
// driver turns it into a one-line message and an exit code.
#pragma once

#include <stdexcept>
#include <string>

namespace qopt {

enum class ErrorKind {
  Input,         // a model, data file or option given by the user is wrong (exit code 2)
  Usage,         // the command line or pipeline is wrong (exit code 2)
  Verification,  // a check or verification failed (exit code 1)
  Internal,      // a qopt bug or a plugin broke a contract (exit code 2)
};

class Error : public std::runtime_error {
 public:
  /// `where` names the file; `subject` names the node or tensor ("node 'conv1' (Conv)").
  Error(ErrorKind kind, std::string where, std::string subject, std::string cause);
  explicit Error(std::string cause, ErrorKind kind = ErrorKind::Input);

  ErrorKind kind() const { return kind_; }
  const std::string& where() const { return where_; }
  const std::string& subject() const { return subject_; }
  const std::string& cause() const { return cause_; }

  /// Returns a copy whose `where` is set to `file` when it was not set yet: lets callers that know
  /// the file name add it to errors raised deeper down.
  Error withFile(const std::string& file) const;

 private:
  static std::string format(const std::string& where, const std::string& subject,
                            const std::string& cause);
  ErrorKind kind_;
  std::string where_;
  std::string subject_;
  std::string cause_;
};

/// Exit codes shared by every qopt tool.
inline constexpr int kExitOk = 0;
inline constexpr int kExitCheckFailed = 1;
inline constexpr int kExitUsageOrInput = 2;

inline int exitCodeFor(ErrorKind kind) {
  return kind == ErrorKind::Verification ? kExitCheckFailed : kExitUsageOrInput;
}

}  // namespace qopt
