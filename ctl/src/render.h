#pragma once
// Internal to ctl: how answers of the admin API are printed as tables.
#include <boost/json.hpp>
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace baton::ctl {

/// A column: its header and how to get its text from an item.
struct Column {
  std::string header;
  std::string (*text)(const boost::json::object& item);
};

/// The text of item[key]: strings as they are (timestamps to the second),
/// null as "-", anything else as compact JSON; control characters shown as
/// terminal_safe shows them (every table, `runs show`, `key: value` lines).
std::string field(const boost::json::object& item, const char* key);
/// A number as a person reads it: the shortest text that is the same
/// double (4.7, 0.25, 1e+21), never JSON's exponent form (4.7E0).
std::string number_text(double d);
/// Seconds since the epoch as "YYYY-MM-DDTHH:MM:SSZ".
std::string iso_utc(std::int64_t unix_seconds);

/// `text` with every control character but newline and tab shown in caret
/// notation (ESC as "^[", DEL as "^?") and the C1 controls (U+0080-U+009F,
/// which some terminals obey as escapes) as "\u0080"-style text: output a
/// task printed cannot drive the terminal that shows it.
std::string terminal_safe(std::string_view text);

/// A database timestamp as shown: to the second with its zone, "Z" for
/// UTC ("2026-11-23T20:14:00Z", "2026-11-23T21:14:00+01:00").
std::string timestamp_text(const std::string& ts);
/// A database or RFC 3339 timestamp as unix seconds; nothing if not one.
std::optional<std::int64_t> unix_of_timestamp(const std::string& ts);
/// kubectl's AGE: 45s, 12m, 3h, 5d.
std::string age_text(std::int64_t seconds);
/// The age of an item's timestamp field from now, "-" without one.
std::string age_of(const boost::json::object& item, const char* key);
void print_table(std::ostream& out, const std::vector<Column>& columns, const boost::json::array& items);
/// How tables print in this invocation: with a header line (unless
/// --no-headers), and cells cut at 60 characters (not with -o wide).
void set_table_style(bool headers, bool wide);
/// What a verb printed as JSON documents, one per line, printed again as
/// `format`: jsonl (a list's items one per line, anything else on one line)
/// or yaml (documents separated by ---). A line that is not JSON is passed on.
void print_as(std::ostream& out, const std::string& printed, const std::string& format);

/// The columns of each resource's list.
const std::vector<Column>& run_columns();
const std::vector<Column>& job_columns();
const std::vector<Column>& worker_columns();
const std::vector<Column>& dead_letter_columns();
const std::vector<Column>& node_columns();
const std::vector<Column>& epoch_columns();
const std::vector<Column>& audit_columns();
/// The history checker's violations (GET /api/v1/verify).
const std::vector<Column>& violation_columns();
const std::vector<Column>& event_columns();
/// Decision-ledger entries (baton ctl why).
const std::vector<Column>& decision_columns();
const std::vector<Column>& token_columns();
const std::vector<Column>& credential_columns();
const std::vector<Column>& webhook_columns();
const std::vector<Column>& delivery_columns();

/// A run in detail: its fields, attempts, transitions and (with `logs`) output.
void print_run(std::ostream& out, const boost::json::object& run, bool logs);
/// An object's keys in the order ctl shows them (`show` verbs, YAML): what
/// names it (id, name, job, state, ...), then its plain fields
/// alphabetically, then its lists and maps.
std::vector<std::string> ordered_keys(const boost::json::object& o);
/// A run's PARAMETERS section (its payload's parameters a line each, the
/// rest of its payload and its result as JSON), every value escaped.
void print_given(std::ostream& out, const boost::json::object& run);
/// 350ms, 4.2s, 3m7s, 5h: a run's or an attempt's length.
std::string duration_text(std::int64_t ms);
/// duration_text of an item's "duration_ms", "-" without one.
std::string duration_of(const boost::json::object& item);
/// A job's statistics (GET /api/v1/jobs/{name}/stats): a row per window,
/// then its backlog on one line.
void print_job_stats(std::ostream& out, const boost::json::object& stats);
/// One job (`jobs show`): its fields, then a cron job's cadence over the
/// last hour and day as a table.
void print_job(std::ostream& out, const boost::json::object& job);
/// One object as "key: value" lines.
void print_object(std::ostream& out, const boost::json::object& o);

}  // namespace baton::ctl
