#include "baton/store/receipt_anchor.h"

#include <boost/json.hpp>
#include <charconv>
#include <map>

namespace baton::store {

namespace {

constexpr std::string_view head_marker = "receipts_head";
constexpr std::string_view checkpoint_marker = "receipts_checkpoint";

/// Where `marker` starts a word of `line` (at its start, after a space, or
/// as the value of a text log line's `event=`) and is followed by a space:
/// npos otherwise.
std::size_t word_at(std::string_view line, std::string_view marker) {
  for (std::size_t at = line.find(marker); at != std::string_view::npos; at = line.find(marker, at + 1)) {
    const bool starts = at == 0 || line[at - 1] == ' ' || (at >= 7 && line.substr(at - 7, 7) == " event=");
    const std::size_t end = at + marker.size();
    if (starts && end < line.size() && line[end] == ' ') return at;
  }
  return std::string_view::npos;
}

bool is_hex64(std::string_view s) {
  if (s.size() != 64) return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

std::optional<std::int64_t> number_of(std::string_view s) {
  std::int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || end != s.data() + s.size() || v < 0) return std::nullopt;
  return v;
}

/// A lane is a connection's application_name and backend pid: printable,
/// no spaces, bounded.
bool is_lane(std::string_view s) {
  if (s.empty() || s.size() > 200) return false;
  for (unsigned char c : s)
    if (c <= ' ' || c >= 0x7f || c == '=') return false;
  return true;
}

}  // namespace

std::string anchor_line(const ReceiptAnchor& a) {
  if (a.kind == "checkpoint")
    return std::string(checkpoint_marker) + " epoch=" + std::to_string(a.epoch) + " sha256=" + a.hash;
  std::string out = std::string(head_marker) + " kind=" + a.kind;
  if (a.kind == "runs") out += " epoch=" + std::to_string(a.epoch);
  return out + " lane=" + a.lane + " seq=" + std::to_string(a.seq) + " hash=" + a.hash;
}

std::optional<Result<ReceiptAnchor>> parse_anchor_line(std::string_view line, int number) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  std::map<std::string, std::string, std::less<>> fields;
  bool head = false;
  std::string_view what;
  auto bad = [&](const std::string& why) -> std::optional<Result<ReceiptAnchor>> {
    return Result<ReceiptAnchor>{
        make_error(Errc::bad_input, "line " + std::to_string(number) + ": " + std::string(what) + " " + why)};
  };
  // A node's JSON log line (log_format: json): its "event" and its members,
  // each a string, after the journal's "<N>" priority if there is one.
  const std::size_t brace = line.find('{');
  if (brace != std::string_view::npos && line.find_first_not_of("<>0123456789 ") == brace) {
    boost::system::error_code ec;
    const boost::json::value v = boost::json::parse(line.substr(brace), ec);
    const boost::json::object* o = ec ? nullptr : v.if_object();
    const boost::json::value* event = o ? o->if_contains("event") : nullptr;
    if (!event || !event->is_string()) return std::nullopt;
    if (event->as_string() == head_marker)
      head = true, what = head_marker;
    else if (event->as_string() == checkpoint_marker)
      what = checkpoint_marker;
    else
      return std::nullopt;
    for (const auto& [key, value] : *o)
      if (value.is_string()) fields.emplace(std::string(key), std::string(value.as_string()));
  }
  std::size_t at = std::string_view::npos;
  if (what.empty()) {
    at = word_at(line, head_marker);
    head = at != std::string_view::npos;
    if (!head) at = word_at(line, checkpoint_marker);
    if (at == std::string_view::npos) return std::nullopt;
    what = head ? head_marker : checkpoint_marker;
  }
  std::string_view rest = at == std::string_view::npos ? std::string_view{} : line.substr(at + what.size());
  while (!rest.empty()) {
    const std::size_t space = rest.find(' ');
    const std::string_view word = rest.substr(0, space);
    rest = space == std::string_view::npos ? std::string_view{} : rest.substr(space + 1);
    if (word.empty()) continue;
    const std::size_t eq = word.find('=');
    if (eq == std::string_view::npos || eq == 0) return bad("has a word that is not key=value");
    if (!fields.emplace(std::string(word.substr(0, eq)), std::string(word.substr(eq + 1))).second)
      return bad("names " + std::string(word.substr(0, eq)) + "= twice");
  }
  auto field = [&](std::string_view key) -> const std::string* {
    auto it = fields.find(key);
    return it == fields.end() ? nullptr : &it->second;
  };
  ReceiptAnchor a;
  a.line = number;
  if (!head) {
    const std::string* epoch = field("epoch");
    const std::string* sha = field("sha256");
    if (!epoch || !number_of(*epoch)) return bad("without a number for epoch=");
    if (!sha || !is_hex64(*sha)) return bad("without 64 lowercase hex digits for sha256=");
    a.kind = "checkpoint";
    a.epoch = *number_of(*epoch);
    a.hash = *sha;
    return Result<ReceiptAnchor>{a};
  }
  const std::string* kind = field("kind");
  if (!kind || (*kind != "runs" && *kind != "audit")) return bad("without kind=runs or kind=audit");
  a.kind = *kind;
  if (a.kind == "runs") {
    const std::string* epoch = field("epoch");
    if (!epoch || !number_of(*epoch)) return bad("of kind=runs without a number for epoch=");
    a.epoch = *number_of(*epoch);
  }
  const std::string* lane = field("lane");
  const std::string* seq = field("seq");
  const std::string* hash = field("hash");
  if (!lane || !is_lane(*lane)) return bad("without a lane= (a connection's name and pid, no spaces)");
  if (!seq || !number_of(*seq) || *number_of(*seq) < 1) return bad("without a link number of 1 or more for seq=");
  if (!hash || !is_hex64(*hash)) return bad("without 64 lowercase hex digits for hash=");
  a.lane = *lane;
  a.seq = *number_of(*seq);
  a.hash = *hash;
  return Result<ReceiptAnchor>{a};
}

}  // namespace baton::store
