#include "qopt/ir/Error.h"

namespace qopt {

Error::Error(ErrorKind kind, std::string where, std::string subject, std::string cause)
    : std::runtime_error(format(where, subject, cause)),
      kind_(kind),
      where_(std::move(where)),
      subject_(std::move(subject)),
      cause_(std::move(cause)) {}

Error::Error(std::string cause, ErrorKind kind) : Error(kind, {}, {}, std::move(cause)) {}

Error Error::withFile(const std::string& file) const {
  if (!where_.empty() || file.empty()) return *this;
  return Error(kind_, file, subject_, cause_);
}

std::string Error::format(const std::string& where, const std::string& subject,
                          const std::string& cause) {
  std::string message;
  if (!where.empty()) message += where + ": ";
  if (!subject.empty()) message += subject + ": ";
  message += cause;
  return message;
}

}  // namespace qopt
