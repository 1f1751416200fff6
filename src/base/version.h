// The build's identity, printed by `cairva --version` and exported on /metrics: the
// project version and the git commit the executable was built from ("unknown" outside a
// checkout, "-dirty" when tracked files differed). Defined in a source file generated at
// every build (cmake/version_info.cmake).
#pragma once

namespace cairva {

const char* version_number();
const char* version_commit();

}  // namespace cairva
