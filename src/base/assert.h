// CAIRVA_ASSERT: invariants that stay on in release builds. Never used on input
// from the network, the config file or the database: those are Result errors.
#pragma once

#include <cstdio>
#include <cstdlib>

#define CAIRVA_ASSERT(cond)                                                             \
  do {                                                                                  \
    if (!(cond)) [[unlikely]] {                                                         \
      std::fprintf(stderr, "%s:%d: assertion failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                     \
    }                                                                                   \
  } while (0)
