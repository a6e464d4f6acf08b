#pragma once
// Where streamed output goes in the run's log (run_logs), decided without
// SQL so it is tested without a database. Each stream of an attempt is one
// text whose bytes have fixed offsets (protocol Output); the log holds rows
// [start_offset, end_offset) of it, in order. A chunk is placed against
// `have`, the end of what the log already holds of its stream:
//
//   - text before `have` is already there (a resend after a reconnect, a
//     finish's tail): dropped, so nothing is logged twice;
//   - a chunk starting after `have` leaves a gap (frames lost with a leader,
//     or dropped by a worker that was detached too long): a note says how
//     many bytes are missing, then the text;
//   - text past `cap` bytes is not kept in the database (the log archive
//     has it): the last row stops at the cap and one note says so; its
//     offsets end at the cap, so nothing more is placed after it.
//
// Notes are rows of the same stream without offsets.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "baton/store/leader_store.h"

namespace baton::store {

struct LogRow {
  std::string text;
  std::optional<std::int64_t> start_offset{};  ///< none: a note
  std::optional<std::int64_t> end_offset{};
};

/// The rows to append for `chunk` when the log holds its stream up to
/// `have`. The new end is the largest end_offset among them (or `have`).
std::vector<LogRow> place_output(std::int64_t have, const OutputChunk& chunk, std::int64_t cap);

}  // namespace baton::store
