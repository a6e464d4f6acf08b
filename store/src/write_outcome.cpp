#include "baton/store/write_outcome.h"

namespace baton::store {

std::string_view to_string(WriteOutcome o) {
  switch (o) {
    case WriteOutcome::applied: return "applied";
    case WriteOutcome::conflict: return "conflict";
    case WriteOutcome::fenced: return "fenced";
  }
  return "?";
}

}  // namespace baton::store
