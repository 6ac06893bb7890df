// qopt's version, as built into libqopt (a plugin may be built against another release).
#pragma once

namespace qopt {

/// "0.1.0"
const char* versionString();

}  // namespace qopt
