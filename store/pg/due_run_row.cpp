#include "due_run_row.h"

#include <boost/json.hpp>

#include <algorithm>

#include "baton/base/weaken.h"

namespace baton::store::pg {

namespace {

std::map<std::string, std::string> parse_selector(const std::string& json_text) {
  std::map<std::string, std::string> out;
  boost::system::error_code ec;
  auto v = boost::json::parse(json_text, ec);
  if (ec || !v.is_object()) return out;
  for (const auto& kv : v.as_object())
    if (kv.value().is_string()) out[std::string(kv.key())] = std::string(kv.value().as_string());
  return out;
}

// An int[] as PostgreSQL prints it: {1,2,3}.
std::vector<int> int_array(const std::string& text) {
  std::vector<int> out;
  int n = 0;
  bool in = false;
  for (char ch : text) {
    if (ch >= '0' && ch <= '9') {
      n = n * 10 + (ch - '0');
      in = true;
    } else if (in) {
      out.push_back(n);
      n = 0;
      in = false;
    }
  }
  if (in) out.push_back(n);
  return out;
}

}  // namespace

PreviousAttempt previous_attempt_of(const std::string& text) {
  // 'fate|attempt|worker' (baton_previous_attempt): the worker id last, so
  // that whatever it holds stays its own.
  PreviousAttempt p;
  const auto a = text.find('|');
  const auto b = a == std::string::npos ? std::string::npos : text.find('|', a + 1);
  if (b == std::string::npos) return p;
  p.fate = text.substr(0, a);
  for (std::size_t i = a + 1; i < b; ++i)
    if (text[i] >= '0' && text[i] <= '9') p.attempt = p.attempt * 10 + (text[i] - '0');
  p.worker = text.substr(b + 1);
  return p;
}

const std::string& due_run_columns() {
  static const std::string sql =
      "r.id, r.version, r.state, r.attempt, r.max_attempts, r.priority, coalesce(j.name, ''),"
      " coalesce(j.tasks::text, '[]'), coalesce(r.timeout_ms, j.timeout_ms, 0), coalesce(j.worker_selector::text, "
      "'{}'),"
      " coalesce(j.retry_base_ms, 1000), coalesce(j.retry_cap_ms, 3600000), r.unstarted_assignments,"
      " baton_instance_limit(j), coalesce(j.mutually_exclusive, false),"
      " (coalesce(j.parameters, '{}'::jsonb) || coalesce(r.payload->'parameters', '{}'::jsonb)"
      " || (r.payload - 'parameters'))::text,"
      // When it may start and the database's clock as the row is made
      // (clock_timestamp, not the statement's start: the leader counts the
      // time left from the read's return, and a read of a slot's hundred
      // runs takes milliseconds, which a clock taken at the statement's start
      // would add to every start at the slot), both in microseconds.
      " (extract(epoch FROM greatest(coalesce(r.scheduled_for, r.created_at),"
      " coalesce(r.start_after, '-infinity'))) * 1000000)::bigint,"
      " (extract(epoch FROM clock_timestamp()) * 1000000)::bigint, coalesce(j.exclusive_execution, false),"
      " coalesce(r.assigned_worker_id, ''),"
      // Keyed concurrency and rate limits (schemas/0035): computed only for
      // a job that has them.
      " " +
      run_key_sql() +
      ", j.concurrency_limit, CASE WHEN j.concurrency_limit IS NOT NULL THEN "
      "baton_key_slots_held(r.job_definition_id, " +
      run_key_sql() +
      ")::text END, j.rate_limit_runs, coalesce(j.rate_limit_per_ms, 0), CASE WHEN j.rate_limit_runs IS NOT NULL "
      "THEN " +
      rate_key_sql() +
      " END, CASE WHEN j.rate_limit_runs IS NOT NULL THEN baton_rate_slots_busy(r.job_definition_id, " +
      rate_key_sql() +
      ")::text END,"
      // What became of the attempt before the one an assignment starts
      // (schemas/0041): read only for a retry or a retry's reassignment,
      // one primary-key probe of the attempt rows; a first attempt pays
      // nothing.
      " CASE WHEN r.attempt > 1 OR r.state = 'RETRY_WAITING' THEN baton_previous_attempt(r.id,"
      " r.attempt + CASE WHEN r.state = 'RETRY_WAITING' THEN 1 ELSE 0 END) END";
  return sql;
}

std::string run_key_sql(const std::string& r, const std::string& j) {
  return "CASE WHEN " + j + ".concurrency_key IS NOT NULL THEN baton_run_key(" + j +
         ".concurrency_key, baton_run_params(" + j + ".parameters, " + r + ".payload)) END";
}

std::string rate_key_sql(const std::string& r, const std::string& j) {
  return "CASE WHEN " + j + ".rate_limit_by_key THEN coalesce(" + run_key_sql(r, j) + ", '') ELSE '' END";
}

std::string keyed_room_sql() {
  return "(j.concurrency_limit IS NULL OR " + std::string(weakened("key_slot") ? "true" : "false") +  // weakened
         " OR cardinality(baton_key_slots_held(r.job_definition_id, " + run_key_sql() +
         ")) < j.concurrency_limit) AND (j.rate_limit_runs IS NULL OR cardinality(baton_rate_slots_busy("
         "r.job_definition_id, " +
         rate_key_sql() + ")) < j.rate_limit_runs)";
}

DueRun due_run_of(const pqxx::row& row, int first) {
  auto at = [&](int i) { return row[first + i]; };
  DueRun d;
  d.id = RunId{at(0).as<std::int64_t>()};
  d.version = Version{at(1).as<std::int64_t>()};
  d.state = parse_run_state(at(2).as<std::string>()).value_or(RunState::pending);
  d.attempt = at(3).as<int>();
  d.max_attempts = at(4).as<int>();
  d.priority = at(5).as<int>();
  d.job_name = at(6).as<std::string>();
  d.tasks_json = at(7).as<std::string>();
  d.timeout_ms = at(8).as<std::int64_t>();
  d.selector = parse_selector(at(9).as<std::string>());
  d.retry_base_ms = at(10).as<std::int64_t>();
  d.retry_cap_ms = at(11).as<std::int64_t>();
  d.unstarted_assignments = at(12).as<int>();
  if (!at(13).is_null()) d.instance_limit = at(13).as<int>();
  d.mutually_exclusive = at(14).as<bool>();
  d.exclusive_execution = at(due_run_clock_column + 1).as<bool>();
  d.previous_worker = at(due_run_clock_column + 2).as<std::string>();
  constexpr int keyed = due_run_clock_column + 3;
  if (!at(keyed).is_null()) d.keyed.concurrency_key = at(keyed).as<std::string>();
  if (!at(keyed + 1).is_null()) d.keyed.key_limit = at(keyed + 1).as<int>();
  if (!at(keyed + 2).is_null()) d.keyed.key_slots_held = int_array(at(keyed + 2).as<std::string>());
  if (!at(keyed + 3).is_null()) d.keyed.rate_limit = at(keyed + 3).as<int>();
  d.keyed.rate_per_ms = at(keyed + 4).as<std::int64_t>();
  if (!at(keyed + 5).is_null()) d.keyed.rate_key = at(keyed + 5).as<std::string>();
  if (!at(keyed + 6).is_null()) d.keyed.rate_slots_busy = int_array(at(keyed + 6).as<std::string>());
  const boost::json::value params = boost::json::parse(at(15).as<std::string>());
  if (params.is_object())
    for (const auto& kv : params.as_object())
      d.parameters[std::string(kv.key())] =
          kv.value().is_string() ? std::string(kv.value().as_string()) : boost::json::serialize(kv.value());
  if (!at(keyed + 7).is_null()) d.previous = previous_attempt_of(at(keyed + 7).as<std::string>());
  d.starts_at_us = at(16).as<std::int64_t>();
  d.starts_in_ms = starts_in_ms(d.starts_at_us, at(due_run_clock_column).as<std::int64_t>());
  return d;
}

std::int64_t starts_in_ms(std::int64_t starts_at_us, std::int64_t clock_us) {
  const std::int64_t left = starts_at_us - clock_us;
  return left <= 0 ? 0 : (left + 999) / 1000;  // rounded up: never short
}

void settle_starts_in(std::vector<DueRun>& runs, const pqxx::result& rows, int first) {
  std::int64_t clock_us = 0;
  for (const auto& r : rows) clock_us = std::max(clock_us, r[first + due_run_clock_column].as<std::int64_t>());
  for (auto& d : runs) d.starts_in_ms = starts_in_ms(d.starts_at_us, clock_us);
}

}  // namespace baton::store::pg
