#include "qopt/pass/Version.h"

namespace qopt {

const char* versionString() {
  return QOPT_VERSION_STRING;
}

}  // namespace qopt
