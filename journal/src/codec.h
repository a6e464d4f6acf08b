#pragma once
// The book's configuration and its effects as readable JSON (Boost.JSON over
// Boost.Describe): a book's header, and the replay's account of effects
// (`baton-sim --replay --effects`, a divergence). And the effects' digest,
// which the recorder and the replay both take. Inputs are written by
// fields.h. Private to baton_journal.
//
// Every member of a described type must be listed: codec.cpp checks at
// compile time (Boost.PFR counts the fields) that none is left out.
#include <boost/describe.hpp>
#include <boost/json.hpp>
#include <chrono>
#include <string>

#include "baton/base/clock.h"
#include "baton/base/ids.h"
#include "baton/base/result.h"
#include "baton/base/run_state.h"
#include "baton/leader_core/run_book.h"
#include "baton/leader_core/runtime_config.h"
#include "baton/protocol/codec.h"
#include "baton/store/leader_rows.h"
#include "baton/store/run_rows.h"

// Durations and monotonic times as integers (milliseconds, nanoseconds). The
// conversions for std::chrono types sit where Boost.JSON's tag finds them.
namespace boost::json {
inline void tag_invoke(value_from_tag, value& v, const std::chrono::milliseconds& d) { v = d.count(); }
inline std::chrono::milliseconds tag_invoke(value_to_tag<std::chrono::milliseconds>, const value& v) {
  return std::chrono::milliseconds{v.to_number<std::int64_t>()};
}
}  // namespace boost::json

namespace baton {
template <class Tag, class Rep>
void tag_invoke(boost::json::value_from_tag, boost::json::value& v, const StrongId<Tag, Rep>& id) {
  v = id.value;
}
template <class Tag, class Rep>
StrongId<Tag, Rep> tag_invoke(boost::json::value_to_tag<StrongId<Tag, Rep>>, const boost::json::value& v) {
  return StrongId<Tag, Rep>{v.to_number<Rep>()};
}
inline void tag_invoke(boost::json::value_from_tag, boost::json::value& v, const MonoTime& t) {
  v = static_cast<std::int64_t>(t.since_start.count());
}
inline MonoTime tag_invoke(boost::json::value_to_tag<MonoTime>, const boost::json::value& v) {
  return MonoTime{std::chrono::nanoseconds{v.to_number<std::int64_t>()}};
}
BOOST_DESCRIBE_ENUM(RunState, pending, assigned, running, retry_waiting, orphaned, succeeded, failed, timed_out,
                    canceled)
BOOST_DESCRIBE_ENUM(ContinuationState, none, confirming)
}  // namespace baton

namespace baton::store {
// Effects' rows.
BOOST_DESCRIBE_STRUCT(RunFence, (), (run, expected_version, epoch))
BOOST_DESCRIBE_STRUCT(AttemptFence, (), (worker_id, attempt, lease_token))
BOOST_DESCRIBE_STRUCT(Finish, (), (final_state, exit_code, error_code, error_msg, result_json))
BOOST_DESCRIBE_STRUCT(StartGrant, (), (worker_instance, stale_after))
BOOST_DESCRIBE_STRUCT(AssignRow, (),
                      (run, expected_version, from, worker_id, continuation_timeout, instance_no, exclusive_lock,
                       exclusive_execution, concurrency_key, key_slot, rate_slot, start))
BOOST_DESCRIBE_STRUCT(StartRow, (), (run, expected_version, attempt, worker_instance))
BOOST_DESCRIBE_STRUCT(FinishRow, (), (run, expected_version, attempt, finish, retry_delay))
BOOST_DESCRIBE_STRUCT(HeartbeatRow, (), (id, version, attempt, progress))
BOOST_DESCRIBE_STRUCT(OutputChunk, (), (run, attempt, stream, offset, data))
BOOST_DESCRIBE_STRUCT(SkippedCronSlots, (), (first_unix, last_unix, count, count_at_least, reason))

}  // namespace baton::store

namespace baton::leader_core {
BOOST_DESCRIBE_STRUCT(RuntimeConfig, (),
                      (heartbeat_interval, heartbeat_timeout, reassign_after, reassign_detached_after,
                       continuation_timeout, continuation_margin, max_unstarted_assignments, timeout_grace,
                       dispatch_every, assign_ahead, assign_with_start, reap_every, cron_every, controls_every,
                       workers_seen_every, workers_seen_rows_per_second, max_heartbeats_per_second, retry_jitter_max,
                       prune_every, reassign_rate, reassign_burst, dispatch_batch, output_db_bytes, log_archive,
                       payload_denylist))
BOOST_DESCRIBE_ENUM(LogLevel, debug, info, warn, error)
BOOST_DESCRIBE_ENUM(Counter, fenced_writes, conflict_writes, runs_assigned, runs_started, runs_finished, runs_orphaned,
                    runs_requeued, runs_created_by_cron, cron_slots_skipped, protocol_errors)
BOOST_DESCRIBE_ENUM(RunWriteKind, adopt, orphan, requeue, begin_confirming, finish, retry_later, cancel, cancel_attempt,
                    request_cancel, fail_unrunnable, late_success, record_late_report)
BOOST_DESCRIBE_STRUCT(Close, (), (link, reason))
BOOST_DESCRIBE_STRUCT(Log, (), (level, text))
BOOST_DESCRIBE_STRUCT(Count, (), (counter, n))
BOOST_DESCRIBE_STRUCT(ObserveRunFinished, (), (job, outcome, duration_ms))
BOOST_DESCRIBE_STRUCT(ObserveDispatchLatency, (), (us))
BOOST_DESCRIBE_STRUCT(ObserveCronSlotDelay, (), (ms))
BOOST_DESCRIBE_STRUCT(RecordWorker, (), (worker_id, attached, labels_json, capacity))
BOOST_DESCRIBE_STRUCT(RecordWorkersSeen, (), (worker_ids))
BOOST_DESCRIBE_STRUCT(AppendRunLog, (), (run, attempt, stream, chunk))
BOOST_DESCRIBE_STRUCT(AppendRunOutput, (), (chunk))
BOOST_DESCRIBE_STRUCT(ReadActive, (), (op, continuation_margin))
BOOST_DESCRIBE_STRUCT(ReadRun, (), (op, run))
BOOST_DESCRIBE_STRUCT(ReadDue, (), (op, limit, labels, ahead, taking))
BOOST_DESCRIBE_STRUCT(ReadScheduledJobs, (), (op))
BOOST_DESCRIBE_STRUCT(ReadControls, (), (op))
BOOST_DESCRIBE_STRUCT(WriteRun, (), (op, kind, fence, attempt, finish, from, delay, reason, error_code))
BOOST_DESCRIBE_STRUCT(WriteAssigns, (), (op, rows))
BOOST_DESCRIBE_STRUCT(WriteStarts, (), (op, rows, stale_after))
BOOST_DESCRIBE_STRUCT(WriteFinishes, (), (op, rows))
BOOST_DESCRIBE_STRUCT(WriteHeartbeats, (), (op, rows, stale_after))
BOOST_DESCRIBE_STRUCT(CreateCronRun, (), (op, job, slot_unix, caught_up, jitter_ms))
BOOST_DESCRIBE_STRUCT(Prune, (), (op, batch))
BOOST_DESCRIBE_STRUCT(ProcessEvents, (), (op, limit))
BOOST_DESCRIBE_STRUCT(ProcessSubmissions, (), (op, limit, payload_denylist))
BOOST_DESCRIBE_STRUCT(ReadUnmatched, (), (op, label_sets, limit))
BOOST_DESCRIBE_STRUCT(ReadWaiting, (), (op, limit, for_keys))
BOOST_DESCRIBE_STRUCT(RecordDecision, (), (op, run, decision, reason, details_json))
BOOST_DESCRIBE_STRUCT(SkipCronSlots, (), (op, job, ranges, details_json))
/// A message sent: its link and its frame in the newest protocol version.
void tag_invoke(boost::json::value_from_tag, boost::json::value& v, const Send& s);
}  // namespace baton::leader_core

namespace baton::journal {

/// A message sent, as the frame the newest protocol version makes of it
/// (the replay's account of a Send).
std::string message_text(const protocol::Message& m);

/// `{"e": <the effect's name>, ...its members}`: one line of the replay's
/// account, and what the effects' digest is taken over.
boost::json::value effect_json(const leader_core::Effect& e);
/// FNV-1a 64 of the effects' JSON, as 16 hex digits.
std::string effects_digest(const std::vector<leader_core::Effect>& effects);

}  // namespace baton::journal
