#pragma once
// The incident journal's reading side: each book's recorded inputs fed to a
// new leader_core::RunBook made as the node made it, and each batch of
// effects it takes compared with the recorded one (count and digest). The
// same core, the same inputs, in the same order: the same decisions, which
// is what `baton-sim --replay` shows (docs/assurance.md, "Incident replay").
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>

namespace baton::journal {

/// Which part of the journal to show: lines whose wall clock ("w") is in
/// [from_ms, to_ms]. Every line is replayed either way (a book's state is
/// made by all its inputs since its header).
struct ReplayWindow {
  std::optional<std::int64_t> from_ms;
  std::optional<std::int64_t> to_ms;
};

struct ReplayReport {
  std::int64_t lines = 0;
  std::int64_t books = 0;    ///< headers: one per epoch this node led
  std::int64_t inputs = 0;   ///< inputs fed
  std::int64_t batches = 0;  ///< batches of effects compared, all identical unless `divergence`
  std::int64_t effects = 0;
  std::int64_t shown = 0;  ///< log lines (and effects) written to the account
  /// Books cut short where the node lost lines of its journal ("gap"): the
  /// rest of each was skipped, not compared.
  std::int64_t gaps = 0;
  /// Empty when every batch matched; else what differed, at `line` (1-based).
  std::string divergence;
  std::int64_t line = 0;
};

/// Replays the journal read from `in`. A line {"k": "window", "from_ms",
/// "to_ms"} (an export's first) sets the window when `window` sets none. To
/// `out`, for the window: each log line the book produced, as the node
/// logged it in the text format ("ts=... level=info process=n2
/// event=run_assigned run=7 ..."), its time stamp the wall clock of the
/// input that made it (to the millisecond; the node's is when it logged
/// it), debug lines too; and with `effects` also every input line and every
/// effect as JSON. Stops at the first batch that
/// differs, or at a line that does not parse (both in `divergence`).
ReplayReport replay(std::istream& in, const ReplayWindow& window, bool effects, std::ostream& out);

}  // namespace baton::journal
