#include "baton/checker/faults.h"

namespace baton::checker {

// Each row in the table at the place of its enumerator: name_of indexes it.
static_assert([] {
  for (std::size_t i = 0; i < std::size(fault_kinds); ++i)
    if (static_cast<std::size_t>(fault_kinds[i].fault) != i) return false;
  return true;
}());

std::string name_of(Fault fault) { return std::string(fault_kinds[static_cast<std::size_t>(fault)].name); }

std::optional<Fault> fault_named(std::string_view name) {
  for (const auto& k : fault_kinds)
    if (k.name == name) return k.fault;
  return std::nullopt;
}

std::vector<std::string> harness_fault_names() {
  std::vector<std::string> out;
  for (const auto& k : fault_kinds)
    if (k.harness) out.emplace_back(k.name);
  return out;
}

}  // namespace baton::checker
