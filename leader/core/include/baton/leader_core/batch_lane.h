#pragma once
// BatchLane: one of the book's write lanes (starts, finishes), as a value.
// Rows queue by run id while a batch is being written; when the batch's
// result comes back, everything queued since goes out as the next batch
// (group commit). The rule the book relies on (docs/fencing.md, "one
// statement per run"): at most one batch is in flight per lane, and a run
// has at most one row in the lane -- queued or in the batch being written,
// never both -- so one statement never carries two rows of the same run
// and a resend of a message already queued or being written adds nothing.
//
// A pure value: no I/O, no clock, no effect; the book emits the write and
// feeds its result back (run_book_lanes.cpp).
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "baton/base/assert.h"

namespace baton::leader_core {

/// Nothing kept beside a row (the start lane).
struct NoNote {};

/// `Note` is kept beside each row and handed back with its batch (the
/// finish lane keeps the message a row came from, to judge it again when
/// its row does not apply).
template <class Row, class Note = NoNote>
class BatchLane {
 public:
  struct Batch {
    std::vector<Row> rows;
    std::map<std::int64_t, Note> notes;  ///< by run id
  };

  /// Queues `row` for `run` unless the run already has a row queued or
  /// being written; false then (the row is dropped).
  bool queue(std::int64_t run, Row row, Note note = {}) {
    if (holds(run)) return false;
    queued_ids_.insert(run);
    queued_.rows.push_back(std::move(row));
    queued_.notes.emplace(run, std::move(note));
    return true;
  }
  /// The next batch, when none is in flight and rows wait: the lane is busy
  /// from then on, until written().
  std::optional<Batch> take() {
    if (busy_ || queued_.rows.empty()) return std::nullopt;
    busy_ = true;
    writing_ids_ = std::move(queued_ids_);
    queued_ids_.clear();
    Batch out = std::move(queued_);
    queued_ = Batch{};
    return out;
  }
  /// The batch in flight came back (whatever its outcome).
  void written() {
    BATON_ASSERT(busy_);
    busy_ = false;
    writing_ids_.clear();
  }

  bool busy() const { return busy_; }
  bool queued(std::int64_t run) const { return queued_ids_.count(run) > 0; }
  bool writing(std::int64_t run) const { return writing_ids_.count(run) > 0; }
  bool holds(std::int64_t run) const { return queued(run) || writing(run); }
  std::size_t queued_rows() const { return queued_.rows.size(); }

  /// The lane's rules; aborts when one is broken (RunBook::check_invariants).
  void check() const {
    BATON_ASSERT(queued_ids_.size() == queued_.rows.size());
    BATON_ASSERT(queued_.notes.size() == queued_.rows.size());
    BATON_ASSERT(busy_ || writing_ids_.empty());
    for (auto id : writing_ids_) BATON_ASSERT(!queued_ids_.count(id));
  }

 private:
  Batch queued_;
  std::set<std::int64_t> queued_ids_;
  std::set<std::int64_t> writing_ids_;
  bool busy_ = false;
};

}  // namespace baton::leader_core
