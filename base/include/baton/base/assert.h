#pragma once
// BATON_ASSERT: programmer errors crash the process, in every build type.
// Operating errors (database down, bad input) are values, never assertions.
#include <cstdio>
#include <cstdlib>

#define BATON_ASSERT(cond)                                                                       \
  do {                                                                                           \
    if (!(cond)) {                                                                               \
      std::fprintf(stderr, "baton: assertion failed: %s at %s:%d\n", #cond, __FILE__, __LINE__); \
      std::abort();                                                                              \
    }                                                                                            \
  } while (0)
