#pragma once
// What an operator keeps of the receipts outside the database
// (docs/assurance.md, "Anchors"): a chain's head as it stood at some time,
// or an epoch's checkpoint by its digest. The nodes log both
// (`receipts_head`, `receipts_checkpoint`), `baton verify --receipts
// --export-anchors` prints them, and `baton verify --receipts --anchors FILE`
// checks the chains against them: a history rewritten consistently, link,
// later links and head together, still differs from what was kept.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "baton/base/result.h"

namespace baton::store {

struct ReceiptAnchor {
  /// "runs" (a chain of run ends, one per epoch and writing connection),
  /// "audit" (a chain of audit entries), or "checkpoint" (an epoch's).
  std::string kind;
  std::int64_t epoch = 0;  ///< runs and checkpoint; 0 for audit
  std::string lane;        ///< runs and audit: the writing connection
  std::int64_t seq = 0;    ///< runs and audit: the head's link (entry) number
  /// runs and audit: the head's hash; checkpoint: the sha256 of the
  /// checkpoint's JSON text. Lowercase hex.
  std::string hash;
  int line = 0;  ///< where it was read from (0: not read from a file)
};

// Their text, one line each, as the nodes log them and an export prints
// them, read back from a file an operator kept: a node's log (other lines
// are passed over) or an export.
//
//   receipts_head kind=runs epoch=7 lane=baton-node-n1-loop/4242 seq=118 hash=<64 hex>
//   receipts_head kind=audit lane=baton-node-n1-api/4250 seq=31 hash=<64 hex>
//   receipts_checkpoint epoch=6 chains=3 sha256=<64 hex> by_epoch=7

/// One anchor's line (without a log's prefix). A checkpoint's line names
/// only its epoch and digest.
std::string anchor_line(const ReceiptAnchor& a);

/// The anchor a line records, if it holds one; nullopt for a line that
/// holds none; an error naming line `number` and what is wrong with it for
/// a `receipts_head` or `receipts_checkpoint` line that cannot be read.
std::optional<Result<ReceiptAnchor>> parse_anchor_line(std::string_view line, int number);

}  // namespace baton::store
