#include "codec.h"

#include <array>
#include <boost/mp11.hpp>
#include <boost/pfr.hpp>
#include <chrono>
#include <cstdio>
#include <optional>
#include <type_traits>
#include <utility>
#include <variant>

#include "fields.h"

namespace baton {
namespace {
/// Every member of T is described: a member added to one of these types
/// without its description here fails the build instead of going unrecorded.
template <class T>
constexpr bool all_members_described() {
  return boost::pfr::tuple_size_v<T> ==
         boost::mp11::mp_size<boost::describe::describe_members<T, boost::describe::mod_public>>::value;
}
static_assert(all_members_described<store::RunFence>());
static_assert(all_members_described<store::AttemptFence>());
static_assert(all_members_described<store::Finish>());
static_assert(all_members_described<store::StartGrant>());
static_assert(all_members_described<store::AssignRow>());
static_assert(all_members_described<store::StartRow>());
static_assert(all_members_described<store::FinishRow>());
static_assert(all_members_described<store::HeartbeatRow>());
static_assert(all_members_described<store::OutputChunk>());
static_assert(all_members_described<store::SkippedCronSlots>());
static_assert(all_members_described<leader_core::RuntimeConfig>());
static_assert(all_members_described<leader_core::Close>());
static_assert(all_members_described<leader_core::Log>());
static_assert(all_members_described<leader_core::Count>());
static_assert(all_members_described<leader_core::ObserveRunFinished>());
static_assert(all_members_described<leader_core::ObserveDispatchLatency>());
static_assert(all_members_described<leader_core::ObserveCronSlotDelay>());
static_assert(all_members_described<leader_core::RecordWorker>());
static_assert(all_members_described<leader_core::RecordWorkersSeen>());
static_assert(all_members_described<leader_core::AppendRunLog>());
static_assert(all_members_described<leader_core::AppendRunOutput>());
static_assert(all_members_described<leader_core::ReadActive>());
static_assert(all_members_described<leader_core::ReadRun>());
static_assert(all_members_described<leader_core::ReadDue>());
static_assert(all_members_described<leader_core::ReadScheduledJobs>());
static_assert(all_members_described<leader_core::ReadControls>());
static_assert(all_members_described<leader_core::WriteRun>());
static_assert(all_members_described<leader_core::WriteAssigns>());
static_assert(all_members_described<leader_core::WriteStarts>());
static_assert(all_members_described<leader_core::WriteFinishes>());
static_assert(all_members_described<leader_core::WriteHeartbeats>());
static_assert(all_members_described<leader_core::CreateCronRun>());
static_assert(all_members_described<leader_core::Prune>());
static_assert(all_members_described<leader_core::ProcessEvents>());
static_assert(all_members_described<leader_core::ProcessSubmissions>());
static_assert(all_members_described<leader_core::ReadUnmatched>());
static_assert(all_members_described<leader_core::ReadWaiting>());
static_assert(all_members_described<leader_core::RecordDecision>());
static_assert(all_members_described<leader_core::SkipCronSlots>());
static_assert(boost::pfr::tuple_size_v<leader_core::Send> == 2);  // by hand, below
}  // namespace
}  // namespace baton

namespace baton::leader_core {
void tag_invoke(boost::json::value_from_tag, boost::json::value& v, const Send& s) {
  v = boost::json::object{{"link", s.link}, {"message", journal::message_text(s.message)}};
}
}  // namespace baton::leader_core

namespace baton::journal {
namespace json = boost::json;
namespace lc = leader_core;

std::string message_text(const protocol::Message& m) { return protocol::encode(m, protocol::protocol_version_max); }

namespace {
// In the order of leader_core::Effect's alternatives.
constexpr std::array<const char*, 29> effect_names{"Send",
                                                   "Close",
                                                   "Log",
                                                   "Count",
                                                   "ObserveDispatchLatency",
                                                   "RecordWorker",
                                                   "AppendRunLog",
                                                   "ReadActive",
                                                   "ReadRun",
                                                   "ReadDue",
                                                   "ReadScheduledJobs",
                                                   "WriteRun",
                                                   "WriteAssigns",
                                                   "WriteStarts",
                                                   "WriteFinishes",
                                                   "WriteHeartbeats",
                                                   "CreateCronRun",
                                                   "SkipCronSlots",
                                                   "RecordDecision",
                                                   "ReadUnmatched",
                                                   "ProcessEvents",
                                                   "ProcessSubmissions",
                                                   "Prune",
                                                   "ReadControls",
                                                   "RecordWorkersSeen",
                                                   "ObserveRunFinished",
                                                   "AppendRunOutput",
                                                   "ReadWaiting",
                                                   "ObserveCronSlotDelay"};
static_assert(effect_names.size() == std::variant_size_v<lc::Effect>);
}  // namespace

json::value effect_json(const lc::Effect& e) {
  json::value v = std::visit([](const auto& x) { return json::value_from(x); }, e);
  json::object out;
  out["e"] = effect_names[e.index()];
  for (auto& [k, m] : v.as_object()) out[k] = std::move(m);
  return out;
}

namespace {

using fields::detail::is_duration;
using fields::detail::is_optional;
using fields::detail::is_pair;
using fields::detail::is_variant;

/// FNV-1a over every member of a value, walked as Boost.PFR sees an
/// aggregate (every field, in order: nothing to list, nothing to forget),
/// with no allocation: the digest is taken on the control loop's thread
/// for every batch of effects.
struct Digest {
  std::uint64_t h = 1469598103934665603ull;
  void bytes(const void* p, std::size_t n) {
    const auto* c = static_cast<const unsigned char*>(p);
    for (std::size_t i = 0; i < n; ++i) {
      h ^= c[i];
      h *= 1099511628211ull;
    }
  }
  template <class T>
  void operator()(const T& v) {
    if constexpr (std::is_arithmetic_v<T> || std::is_enum_v<T>) {
      bytes(&v, sizeof v);
    } else if constexpr (std::is_same_v<T, std::string>) {
      const std::size_t n = v.size();
      bytes(&n, sizeof n);
      bytes(v.data(), n);
    } else if constexpr (is_optional<T>::value) {
      const bool has = v.has_value();
      (*this)(has);
      if (has) (*this)(*v);
    } else if constexpr (is_variant<T>::value) {
      const std::size_t i = v.index();
      (*this)(i);
      std::visit([this](const auto& x) { (*this)(x); }, v);
    } else if constexpr (is_duration<T>::value) {
      const auto c = static_cast<std::int64_t>(v.count());
      (*this)(c);
    } else if constexpr (is_pair<T>::value) {
      (*this)(v.first);
      (*this)(v.second);
    } else if constexpr (requires {
                           v.begin();
                           v.size();
                         }) {  // vector, map, set
      const std::size_t n = v.size();
      (*this)(n);
      for (const auto& x : v) (*this)(x);
    } else {
      boost::pfr::for_each_field(v, [this](const auto& f) { (*this)(f); });
    }
  }
};

}  // namespace

std::string effects_digest(const std::vector<lc::Effect>& effects) {
  Digest d;
  for (const auto& e : effects) d(e);
  const std::uint64_t h = d.h;
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return hex;
}

}  // namespace baton::journal
