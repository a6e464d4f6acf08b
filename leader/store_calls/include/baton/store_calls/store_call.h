#pragma once
// The book's store effects as calls of the store ports: one interpreter,
// shared by the control loop (leader/src/control_loop.cpp) and the simulator
// (sim/), so that the simulator runs the statement each effect becomes in
// production, not a copy of the loop's switch. What stays in each shell is
// where and when a call runs (the loop's thread or one of its lanes, now or
// later) and, in the simulator, the faults its fake stores inject.
#include <cstddef>
#include <functional>
#include <optional>
#include <string>

#include "baton/base/clock.h"
#include "baton/base/ids.h"
#include "baton/leader_core/run_book.h"
#include "baton/store/leader_store.h"
#include "baton/store/run_store.h"

namespace baton::store_calls {

/// Where a call's statement runs (leader/control_loop.h says why each has
/// its own thread and connection).
enum class Lane {
  loop,      ///< on the loop's own thread; its result is fed back at once
  assigns,   ///< the assign lane, or the loop's thread when no input waits
  starts,    ///< the start lane
  finishes,  ///< the finish lane
  reads,     ///< the read lane; its result comes back after other inputs
};

/// The stores of one leader's epoch.
struct Stores {
  store::RunStore& main;       ///< single-run writes and reads, loop thread
  store::RunStore& assigns;    ///< Lane::assigns
  store::RunStore& starts;     ///< Lane::starts
  store::RunStore& finishes;   ///< Lane::finishes
  store::LeaderStore& leader;  ///< the loop thread's own statements
  store::LeaderStore& reads;   ///< Lane::reads
};

/// A statement's result, ready for the book.
struct Returned {
  /// Feeds the result to the book. `waited`: how long it waited between
  /// its statement's return and this call; the rows of a read move their
  /// ages by it (leader_core/read_age.h). Empty for a call whose result the
  /// book does not wait for.
  std::function<void(leader_core::RunBook& book, MonoTime now, Millis waited)> deliver;
  std::size_t rows = 0;  ///< rows written or read, for the slow-statement log
  /// A call without a result that failed (best effort: the worker registry):
  /// the line the shell logs as a warning. Empty otherwise.
  std::string failure;
};

/// One store effect as a call.
struct Call {
  const char* statement = "";  ///< its name in the slow-statement logs
  Lane lane = Lane::loop;
  std::size_t rows = 0;  ///< rows it writes (0 for a read: Returned::rows says)
  /// Runs the statement. It touches only the stores it was made with, so a
  /// shell may run it on any thread, once.
  std::function<Returned()> run;
};

/// The call `effect` becomes, or nothing when it is not a store effect
/// (messages, closes, log lines, counts, observations, and output, which
/// the control loop gathers for one statement per step). The effect's rows
/// move into the call. `epoch` fences its writes; `node_id` is the leader's,
/// recorded beside a worker it registers.
std::optional<Call> call_of(leader_core::Effect& effect, const Stores& stores, Epoch epoch, const std::string& node_id);

}  // namespace baton::store_calls
