#pragma once
// DELIBERATELY BROKEN behaviour, for the chaos checker's self-test only.
// In a build configured with -DBATON_CHAOS_WEAKEN=ON (refused for Release),
// `weakened("x")` is true when the environment variable BATON_WEAKEN lists
// "x" (comma-separated); each weakening switches off one safety mechanism,
// and a test shows the checker catches the damage (docs/chaos.md). In every
// other build it is a constant false and the broken branches compile away.
#include <cstdlib>
#include <string>

namespace baton {

// The weakened build defines BATON_CHAOS_WEAKEN only for the files that
// include this header (CMakeLists.txt, baton_weaken_sources), so the two
// definitions live in different inline namespaces: the linker can never
// take one file's `weakened` for another's.
#ifdef BATON_CHAOS_WEAKEN
inline namespace chaos_weakened {
inline bool weakened(const char* what) {
  const char* list = std::getenv("BATON_WEAKEN");
  return list && ("," + std::string(list) + ",").find("," + std::string(what) + ",") != std::string::npos;
}
}  // namespace chaos_weakened
#else
inline namespace never_weakened {
constexpr bool weakened(const char*) { return false; }
}  // namespace never_weakened
#endif

}  // namespace baton
