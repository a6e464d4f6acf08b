#include "render.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>
#include <ctime>
#include <ostream>
#include <sstream>

#include <yaml-cpp/yaml.h>

namespace baton::ctl {

namespace json = boost::json;

std::string number_text(double d) {
  // Shortest text that reads back as the same double: 4.7, not JSON's 4.7E0.
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, d);
  return ec == std::errc() ? std::string(buf, end) : json::serialize(json::value(d));
}

std::string field(const json::object& item, const char* key) {
  auto* v = item.if_contains(key);
  if (!v || v->is_null()) return "-";
  // Whatever a worker, a task or a client put in a field (an error
  // message, a label, a key) is shown, never obeyed by the terminal.
  if (v->is_string()) {
    std::string s(v->as_string());
    // PostgreSQL timestamps ("2026-11-23T20:14:00.123456+00:00"): to the
    // second, with their zone ("Z" for UTC).
    if (s.size() > 19 && s[4] == '-' && s[10] == 'T' && s[13] == ':') return terminal_safe(timestamp_text(s));
    return terminal_safe(s);
  }
  if (v->is_double()) return number_text(v->as_double());
  return terminal_safe(json::serialize(*v));
}

std::string timestamp_text(const std::string& ts) {
  const auto zone = ts.find_first_of("+-Z", 19);
  if (zone == std::string::npos) return ts.substr(0, 19);
  const std::string offset = ts.substr(zone);
  return ts.substr(0, 19) + (offset == "+00:00" || offset == "+00" || offset == "Z" ? "Z" : offset);
}

std::optional<std::int64_t> unix_of_timestamp(const std::string& ts) {
  std::tm tm{};
  if (ts.size() < 19 || !strptime(ts.substr(0, 19).c_str(), "%Y-%m-%dT%H:%M:%S", &tm)) return std::nullopt;
  std::int64_t t = static_cast<std::int64_t>(timegm(&tm));
  const auto zone = ts.find_first_of("+-Z", 19);
  if (zone != std::string::npos && ts[zone] != 'Z') {
    const std::string off = ts.substr(zone + 1);  // HH, HH:MM or HHMM
    if (off.size() < 2 || !std::isdigit(static_cast<unsigned char>(off[0]))) return std::nullopt;
    const int hours = std::stoi(off.substr(0, 2));
    const std::size_t m = off.size() >= 5 ? 3 : 2;
    const int minutes = off.size() >= m + 2 ? std::stoi(off.substr(m, 2)) : 0;
    t -= (ts[zone] == '+' ? 1 : -1) * (hours * 3600 + minutes * 60);
  }
  return t;
}

std::string age_text(std::int64_t seconds) {
  if (seconds < 0) seconds = 0;
  if (seconds < 120) return std::to_string(seconds) + "s";
  if (seconds < 7200) return std::to_string(seconds / 60) + "m";
  if (seconds < 172800) return std::to_string(seconds / 3600) + "h";
  return std::to_string(seconds / 86400) + "d";
}

std::string age_of(const json::object& item, const char* key) {
  auto* v = item.if_contains(key);
  if (!v || !v->is_string()) return "-";
  auto t = unix_of_timestamp(std::string(v->as_string()));
  if (!t) return "-";
  const auto now =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  return age_text(now - *t);
}

std::string duration_text(std::int64_t ms) {
  if (ms < 0) ms = 0;
  if (ms < 1000) return std::to_string(ms) + "ms";
  if (ms < 60000) return number_text(static_cast<double>(ms / 100) / 10) + "s";
  const auto s = ms / 1000;
  if (s < 3600) return std::to_string(s / 60) + "m" + std::to_string(s % 60) + "s";
  return age_text(s);
}

std::string duration_of(const json::object& item) {
  auto* v = item.if_contains("duration_ms");
  return v && v->is_int64() ? duration_text(v->as_int64()) : "-";
}

std::string iso_utc(std::int64_t unix_seconds) {
  std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::vector<std::string> ordered_keys(const json::object& o) {
  // What names the thing first, then its plain fields alphabetically, then
  // its nested ones (lists, maps) as sections at the end: as `kubectl
  // describe` does, and never in the order the database's jsonb chose.
  static const std::vector<std::string> first{"id",   "name",  "node_id", "worker_id",     "job",
                                              "kind", "state", "status",  "triage_status", "role"};
  std::vector<std::string> out;
  for (const auto& k : first)
    if (o.contains(k)) out.push_back(k);
  std::vector<std::string> plain, nested;
  for (const auto& kv : o) {
    std::string k(kv.key());
    if (std::find(first.begin(), first.end(), k) != first.end()) continue;
    (kv.value().is_object() || kv.value().is_array() ? nested : plain).push_back(std::move(k));
  }
  std::sort(plain.begin(), plain.end());
  std::sort(nested.begin(), nested.end());
  out.insert(out.end(), plain.begin(), plain.end());
  out.insert(out.end(), nested.begin(), nested.end());
  return out;
}

namespace {
bool table_headers = true;
bool table_wide = false;

void emit_yaml(YAML::Emitter& y, const json::value& v) {
  switch (v.kind()) {
    case json::kind::object:
      // {} on its key's line, not on a line of its own.
      if (v.as_object().empty()) y << YAML::Flow;
      y << YAML::BeginMap;
      for (const auto& k : ordered_keys(v.as_object())) {
        y << YAML::Key << k << YAML::Value;
        emit_yaml(y, v.as_object().at(k));
      }
      y << YAML::EndMap;
      break;
    case json::kind::array:
      if (v.as_array().empty()) y << YAML::Flow;
      y << YAML::BeginSeq;
      for (const auto& e : v.as_array()) emit_yaml(y, e);
      y << YAML::EndSeq;
      break;
    case json::kind::string: {
      // Quoted when YAML would read it as something else (a number, true, null).
      const std::string s(v.as_string());
      y << YAML::DoubleQuoted << s;
      break;
    }
    case json::kind::null: y << YAML::Null; break;
    case json::kind::double_: y << number_text(v.as_double()); break;
    default: y << json::serialize(v);
  }
}
}  // namespace

void set_table_style(bool headers, bool wide) {
  table_headers = headers;
  table_wide = wide;
}

void print_as(std::ostream& out, const std::string& printed, const std::string& format) {
  std::istringstream lines(printed);
  bool first = true;
  for (std::string line; std::getline(lines, line);) {
    boost::system::error_code ec;
    json::value v = json::parse(line, ec);
    if (ec || line.empty()) {
      out << line << '\n';
      continue;
    }
    if (format == "jsonl") {
      const auto* items = v.is_object() ? v.as_object().if_contains("items") : nullptr;
      if (items && items->is_array())
        for (const auto& item : items->as_array()) out << json::serialize(item) << '\n';
      else
        out << json::serialize(v) << '\n';
      continue;
    }
    YAML::Emitter y;
    emit_yaml(y, v);
    out << (first ? "" : "---\n") << y.c_str() << '\n';
    first = false;
  }
}

void print_table(std::ostream& out, const std::vector<Column>& columns, const json::array& items) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::size_t> width;
  for (const auto& c : columns) width.push_back(c.header.size());
  for (const auto& v : items) {
    if (!v.is_object()) continue;
    std::vector<std::string> row;
    for (std::size_t i = 0; i < columns.size(); ++i) {
      std::string cell = columns[i].text(v.as_object());
      // One line per row, whatever a worker or a client put in a field.
      std::replace_if(
          cell.begin(), cell.end(), [](char ch) { return ch == '\n' || ch == '\r' || ch == '\t'; }, ' ');
      if (cell.size() > 60 && !table_wide) cell = cell.substr(0, 57) + "...";
      width[i] = std::max(width[i], cell.size());
      row.push_back(std::move(cell));
    }
    rows.push_back(std::move(row));
  }
  auto line = [&](const std::vector<std::string>& cells) {
    std::string s;
    for (std::size_t i = 0; i < cells.size(); ++i) {
      s += cells[i];
      if (i + 1 < cells.size()) s += std::string(width[i] - cells[i].size() + 2, ' ');
    }
    out << s << '\n';
  };
  std::vector<std::string> headers;
  for (const auto& c : columns) headers.push_back(c.header);
  if (table_headers) line(headers);
  for (const auto& r : rows) line(r);
}

#define COL(header, key)                                        \
  Column {                                                      \
    header, [](const json::object& o) { return field(o, key); } \
  }

const std::vector<Column>& run_columns() {
  static const std::vector<Column> c{
      COL("ID", "id"),
      COL("JOB", "job"),
      COL("STATE", "state"),
      {"ATTEMPT", [](const json::object& o) { return field(o, "attempt") + "/" + field(o, "max_attempts"); }},
      COL("WORKER", "worker_id"),
      COL("EPOCH", "leader_epoch"),
      COL("TRIGGER", "trigger_kind"),
      COL("CREATED", "created_at"),
      {"AGE", [](const json::object& o) { return age_of(o, "created_at"); }},
      COL("FINISHED", "finished_at"),
      {"DURATION", [](const json::object& o) { return duration_of(o); }},
      COL("ERROR", "error_code")};
  return c;
}

const std::vector<Column>& job_columns() {
  static const std::vector<Column> c{COL("NAME", "name"),
                                     COL("SCHEDULE", "schedule"),
                                     COL("ZONE", "time_zone"),
                                     COL("PAUSED", "paused"),
                                     {"NEXT FIRE",
                                      [](const json::object& o) {
                                        auto* n = o.if_contains("next_fire_unix");
                                        return n && n->is_int64() ? iso_utc(n->as_int64()) : std::string("-");
                                      }},
                                     {"LAST RUN",
                                      [](const json::object& o) {
                                        auto* l = o.if_contains("last_run");
                                        if (!l || !l->is_object()) return std::string("-");
                                        return field(l->as_object(), "id") + " " + field(l->as_object(), "state");
                                      }},
                                     COL("VERSION", "version")};
  return c;
}

const std::vector<Column>& worker_columns() {
  static const std::vector<Column> c{COL("ID", "worker_id"),
                                     COL("STATE", "state"),
                                     COL("HOLD", "admin_state"),
                                     COL("CAPACITY", "capacity"),
                                     COL("IN FLIGHT", "in_flight"),
                                     COL("LAST HEARTBEAT", "last_heartbeat_at"),
                                     {"AGE", [](const json::object& o) { return age_of(o, "last_heartbeat_at"); }},
                                     COL("NODE", "attached_node_id"),
                                     COL("LABELS", "labels")};
  return c;
}

const std::vector<Column>& dead_letter_columns() {
  static const std::vector<Column> c{COL("ID", "id"),
                                     COL("RUN", "run_id"),
                                     COL("JOB", "job"),
                                     COL("FINAL", "final_state"),
                                     COL("ATTEMPTS", "attempts"),
                                     COL("ERROR", "error_code"),
                                     COL("TRIAGE", "triage_status"),
                                     COL("REPLAYED AS", "replayed_run_ids"),
                                     COL("CREATED", "created_at")};
  return c;
}

const std::vector<Column>& node_columns() {
  static const std::vector<Column> c{COL("NODE", "node_id"),      COL("ROLE", "role"),
                                     COL("LEADS", "leads"),       COL("EPOCH", "epoch"),
                                     COL("ENDPOINT", "endpoint"), COL("HEARTBEAT AGE MS", "heartbeat_age_ms"),
                                     COL("STARTED", "started_at")};
  return c;
}

const std::vector<Column>& epoch_columns() {
  static const std::vector<Column> c{
      COL("EPOCH", "epoch"),        COL("LEADER", "leader_id"), COL("ENDPOINT", "leader_endpoint"),
      COL("ELECTED", "elected_at"), COL("ENDED", "ended_at"),   COL("HOW IT ENDED", "end_reason"),
      COL("CURRENT", "current")};
  return c;
}

const std::vector<Column>& violation_columns() {
  static const std::vector<Column> c{COL("ID", "id"),
                                     COL("FOUND", "found_at"),
                                     COL("INVARIANT", "invariant"),
                                     COL("RUNS", "run_ids"),
                                     COL("BY", "found_by"),
                                     COL("EPOCH", "epoch"),
                                     COL("ACKNOWLEDGED", "acknowledged_at"),
                                     COL("EVIDENCE", "evidence")};
  return c;
}

const std::vector<Column>& audit_columns() {
  static const std::vector<Column> c{COL("ID", "id"),          COL("AT", "at"),           COL("ACTOR", "actor"),
                                     COL("ACTION", "action"),  COL("SUBJECT", "subject"), COL("EPOCH", "epoch"),
                                     COL("DETAILS", "details")};
  return c;
}

const std::vector<Column>& event_columns() {
  static const std::vector<Column> c{COL("ID", "id"),
                                     COL("KIND", "kind"),
                                     COL("KEY", "dedupe_key"),
                                     COL("CREATED", "created_at"),
                                     COL("PROCESSED", "processed_at"),
                                     COL("RUNS", "runs")};
  return c;
}

const std::vector<Column>& decision_columns() {
  static const std::vector<Column> c{
      COL("AT", "at"),          COL("EPOCH", "epoch"),  COL("DECISION", "decision"), COL("REASON", "reason"),
      COL("SLOT", "slot"),      COL("TO", "slot_last"), COL("COUNT", "slot_count"),  COL("RUN", "run_id"),
      COL("DETAILS", "details")};
  return c;
}

const std::vector<Column>& token_columns() {
  static const std::vector<Column> c{COL("ID", "id"),
                                     COL("NAME", "name"),
                                     COL("ROLE", "role"),
                                     COL("CREATED", "created_at"),
                                     COL("BY", "created_by"),
                                     COL("LAST USED", "last_used_at"),
                                     COL("EXPIRES", "expires_at"),
                                     COL("REVOKED", "revoked_at")};
  return c;
}

const std::vector<Column>& webhook_columns() {
  static const std::vector<Column> c{
      COL("NAME", "name"),
      COL("URL", "url"),
      COL("EVENTS", "events"),
      COL("JOBS", "jobs"),
      COL("ENABLED", "enabled"),
      {"PENDING", [](const json::object& o) { return field(o.at("deliveries").as_object(), "pending"); }},
      {"DELIVERED", [](const json::object& o) { return field(o.at("deliveries").as_object(), "delivered"); }},
      {"FAILED", [](const json::object& o) { return field(o.at("deliveries").as_object(), "failed"); }},
      {"LAST ERROR", [](const json::object& o) { return field(o.at("deliveries").as_object(), "last_error"); }}};
  return c;
}

const std::vector<Column>& delivery_columns() {
  static const std::vector<Column> c{COL("ID", "id"),
                                     COL("EVENT", "event_id"),
                                     COL("KIND", "kind"),
                                     COL("STATE", "state"),
                                     COL("ATTEMPTS", "attempts"),
                                     COL("NEXT ATTEMPT", "next_attempt_at"),
                                     COL("STATUS", "last_status"),
                                     COL("ERROR", "last_error"),
                                     COL("CREATED", "created_at")};
  return c;
}

const std::vector<Column>& credential_columns() {
  static const std::vector<Column> c{COL("KIND", "kind"),
                                     COL("ID", "id"),
                                     COL("WORKER", "worker_id"),
                                     COL("CAPACITY", "capacity"),
                                     COL("LABELS", "labels"),
                                     COL("CREATED", "created_at"),
                                     COL("LAST USED", "last_used_at"),
                                     COL("EXPIRES", "expires_at"),
                                     COL("REVOKED", "revoked_at")};
  return c;
}

#undef COL

void print_object(std::ostream& out, const json::object& o) {
  std::size_t width = 0;
  for (const auto& kv : o) width = std::max(width, kv.key().size());
  for (const auto& k : ordered_keys(o))
    out << terminal_safe(k) << ':' << std::string(width - k.size() + 1, ' ') << field(o, k.c_str()) << '\n';
}

void print_job(std::ostream& out, const json::object& job) {
  json::object fields = job;
  const auto* cadence = job.if_contains("cadence");
  fields.erase("cadence");
  print_object(out, fields);
  if (!cadence || !cadence->is_object()) return;
  json::array windows;
  for (const char* w : {"last_hour", "last_day"}) {
    const auto* row = cadence->as_object().if_contains(w);
    if (!row || !row->is_object()) continue;
    json::object r = row->as_object();
    r["window"] = w;
    windows.push_back(r);
  }
  static const std::vector<Column> columns{
      {"CADENCE", [](const json::object& r) { return field(r, "window"); }},
      {"DUE", [](const json::object& r) { return field(r, "due"); }},
      {"FIRED", [](const json::object& r) { return field(r, "fired"); }},
      {"LATE", [](const json::object& r) { return field(r, "late"); }},
      {"SKIPPED", [](const json::object& r) { return field(r, "skipped"); }},
      {"UNDECIDED", [](const json::object& r) { return field(r, "undecided"); }},
      {"EVERY (S)", [](const json::object& r) { return field(r, "configured_interval_s"); }},
      {"EFFECTIVE (S)", [](const json::object& r) { return field(r, "effective_interval_s"); }},
      {"DELAY P50 / P99 MS",
       [](const json::object& r) { return field(r, "delay_ms_p50") + " / " + field(r, "delay_ms_p99"); }},
      {"EPOCHS", [](const json::object& r) { return field(r, "epochs"); }}};
  out << '\n';
  print_table(out, columns, windows);
}

void print_job_stats(std::ostream& out, const json::object& stats) {
  json::array windows;
  for (const char* w : {"1h", "24h"}) {
    auto row = stats.at("windows").as_object().at(w).as_object();
    row["window"] = w;
    windows.push_back(row);
  }
  static const std::vector<Column> columns{
      {"WINDOW", [](const json::object& r) { return field(r, "window"); }},
      {"RUNS", [](const json::object& r) { return field(r, "runs"); }},
      {"SUCCEEDED", [](const json::object& r) { return field(r, "succeeded"); }},
      {"FAILED", [](const json::object& r) { return field(r, "failed"); }},
      {"TIMED OUT", [](const json::object& r) { return field(r, "timed_out"); }},
      {"CANCELED", [](const json::object& r) { return field(r, "canceled"); }},
      {"P50 MS", [](const json::object& r) { return field(r, "duration_p50_ms"); }},
      {"P95 MS", [](const json::object& r) { return field(r, "duration_p95_ms"); }}};
  print_table(out, columns, windows);
  const auto& b = stats.at("backlog").as_object();
  out << "backlog: " << field(b, "pending") << " pending, " << field(b, "scheduled_ahead") << " scheduled ahead, "
      << field(b, "orphaned") << " orphaned, " << field(b, "retry_waiting") << " waiting to retry, "
      << field(b, "assigned") << " assigned, " << field(b, "running") << " running; oldest waiting "
      << field(b, "oldest_waiting_s") << " s\n";
}

void print_given(std::ostream& out, const json::object& run) {
  // What the run was given, escaped like every other field: the trigger's
  // parameters a line each (the job's defaults fill in the ones not named
  // here), then whatever else its payload holds (an event's, a rerun's) and
  // the result the task recorded, as JSON.
  json::object payload;
  if (auto* p = run.if_contains("payload"); p && p->is_object()) payload = p->as_object();
  out << "\nPARAMETERS\n";
  auto* params = payload.if_contains("parameters");
  if (params && params->is_object() && !params->as_object().empty()) {
    for (const auto& kv : params->as_object()) {
      const std::string value =
          kv.value().is_string() ? std::string(kv.value().as_string()) : json::serialize(kv.value());
      out << terminal_safe(kv.key()) << ": " << terminal_safe(value) << '\n';
    }
  } else {
    out << "(none given: the job's defaults)\n";
  }
  payload.erase("parameters");
  if (!payload.empty()) out << "payload: " << terminal_safe(json::serialize(payload)) << '\n';
  if (auto* r = run.if_contains("result"); r && !r->is_null())
    out << "result: " << terminal_safe(r->is_string() ? std::string(r->as_string()) : json::serialize(*r)) << '\n';
}

void print_run(std::ostream& out, const json::object& run, bool logs) {
  for (const char* k : {"id", "job", "state", "attempt", "max_attempts", "assigned_worker_id", "leader_epoch",
                        "continuation_state", "trigger_kind", "rerun_of", "idempotency_key", "created_at", "started_at",
                        "finished_at", "error_code", "error_msg", "progress", "progress_at"})
    out << k << ": " << field(run, k) << '\n';
  out << "duration: " << duration_of(run) << '\n';
  if (auto* d = run.if_contains("dead_letter"); d && d->is_object())
    out << "dead_letter: " << field(d->as_object(), "id") << " (" << field(d->as_object(), "triage_status") << ")\n";
  print_given(out, run);
  auto list = [&](const char* key) {
    auto* v = run.if_contains(key);
    return v && v->is_array() ? v->as_array() : json::array{};
  };
  out << "\nATTEMPTS\n";
  static const std::vector<Column> attempts{
      {"ATTEMPT", [](const json::object& o) { return field(o, "attempt"); }},
      {"WORKER", [](const json::object& o) { return field(o, "worker_id"); }},
      {"EPOCH", [](const json::object& o) { return field(o, "leader_epoch"); }},
      {"OUTCOME", [](const json::object& o) { return field(o, "outcome"); }},
      {"EXIT", [](const json::object& o) { return field(o, "exit_code"); }},
      {"DURATION MS", [](const json::object& o) { return field(o, "duration_ms"); }},
      {"FINISHED", [](const json::object& o) { return field(o, "finished_at"); }}};
  print_table(out, attempts, list("attempts"));
  out << "\nTRANSITIONS\n";
  static const std::vector<Column> transitions{
      {"AT", [](const json::object& o) { return field(o, "at"); }},
      {"FROM", [](const json::object& o) { return field(o, "from"); }},
      {"TO", [](const json::object& o) { return field(o, "to"); }},
      {"ATTEMPT", [](const json::object& o) { return field(o, "attempt"); }},
      {"EPOCH", [](const json::object& o) { return field(o, "leader_epoch"); }},
      {"CONTINUATION", [](const json::object& o) { return field(o, "continuation_state"); }}};
  print_table(out, transitions, list("transitions"));
  if (!logs) return;
  out << "\nLOGS\n";
  for (const auto& l : list("logs")) {
    const auto& o = l.as_object();
    auto* c = o.if_contains("chunk");
    const std::string chunk = c && c->is_string() ? std::string(c->as_string()) : "";
    out << "[attempt " << field(o, "attempt") << ' ' << field(o, "stream") << "] " << terminal_safe(chunk);
    if (chunk.empty() || chunk.back() != '\n') out << '\n';
  }
}

std::string terminal_safe(std::string_view text) {
  static const char hex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == '\n' || c == '\t') {
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      out += '^';
      out += static_cast<char>(c + 64);
    } else if (c == 0x7f) {
      out += "^?";
    } else if (c == 0xc2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
               static_cast<unsigned char>(text[i + 1]) <= 0x9f) {
      const auto c1 = static_cast<unsigned char>(text[++i]);
      out += "\\u00";
      out += hex[c1 >> 4];
      out += hex[c1 & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

}  // namespace baton::ctl
