// Test-only: setting the process environment. setenv and unsetenv are MT-Unsafe (no other
// thread may read the environment meanwhile); tests call these from the test's own thread
// before the code under test starts any other.
#pragma once

#include <cstdlib>

namespace cairva::test_env {

inline void set(const char* name, const char* value) {
  ::setenv(name, value, 1);  // NOLINT(concurrency-mt-unsafe): no other thread runs yet
}

inline void unset(const char* name) {
  ::unsetenv(name);  // NOLINT(concurrency-mt-unsafe): no other thread runs yet
}

}  // namespace cairva::test_env
