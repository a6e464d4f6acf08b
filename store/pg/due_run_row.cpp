#include "due_run_row.h"

#include <boost/json.hpp>

#include <algorithm>

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

/// Each member of `object` into `out` (replacing what was there), a string
/// as itself and anything else as its JSON text.
void overlay(std::map<std::string, std::string>& out, const boost::json::object& object) {
  for (const auto& kv : object)
    out[std::string(kv.key())] =
        kv.value().is_string() ? std::string(kv.value().as_string()) : boost::json::serialize(kv.value());
}

// More jobs than this held means jobs come and go (each version of a job
// is one entry); the dispatcher then reads them again as it meets them.
constexpr std::size_t due_job_cache_max = 10000;

}  // namespace

const std::string& due_job_columns() {
  static const std::string sql =
      "coalesce(j.name, ''), coalesce(j.tasks::text, '[]'), coalesce(j.timeout_ms, 0),"
      " coalesce(j.worker_selector::text, '{}'), coalesce(j.retry_base_ms, 1000), coalesce(j.retry_cap_ms, 3600000),"
      " baton_instance_limit(j), coalesce(j.exclusive_execution, false), coalesce(j.parameters::text, '{}')";
  return sql;
}

DueJob due_job_of(const pqxx::row& row, int first) {
  auto at = [&](int i) { return row[first + i]; };
  DueJob j;
  j.name = at(0).as<std::string>();
  j.tasks_json = at(1).as<std::string>();
  j.timeout_ms = at(2).as<std::int64_t>();
  j.selector = parse_selector(at(3).as<std::string>());
  j.retry_base_ms = at(4).as<std::int64_t>();
  j.retry_cap_ms = at(5).as<std::int64_t>();
  if (!at(6).is_null()) j.instance_limit = at(6).as<int>();
  j.exclusive = at(7).as<bool>();
  boost::system::error_code ec;
  const boost::json::value params = boost::json::parse(at(8).as<std::string>(), ec);
  if (!ec && params.is_object()) overlay(j.parameters, params.as_object());
  return j;
}

const std::string& due_run_own_columns() {
  static const std::string sql =
      "r.id, r.version, r.state, r.attempt, r.max_attempts, r.priority, r.unstarted_assignments,"
      // NULL for the empty payload most runs have: nothing to parse.
      " nullif(r.payload, '{}'::jsonb)::text,"
      // When it may start and the database's clock as the row is made
      // (clock_timestamp, not the statement's start: the leader counts the
      // time left from the read's return, and a read of a slot's hundred
      // runs takes milliseconds, which a clock taken at the statement's start
      // would add to every start at the slot), both in microseconds.
      " (extract(epoch FROM greatest(coalesce(r.scheduled_for, r.created_at),"
      " coalesce(r.start_after, '-infinity'))) * 1000000)::bigint,"
      " (extract(epoch FROM clock_timestamp()) * 1000000)::bigint";
  return sql;
}

const std::string& due_run_columns() {
  static const std::string sql = due_run_own_columns() + ", " + due_job_columns();
  return sql;
}

void overlay_payload(std::map<std::string, std::string>& parameters, const std::string& payload_json) {
  boost::system::error_code ec;
  const boost::json::value payload = boost::json::parse(payload_json, ec);
  if (ec || !payload.is_object()) {
    parameters.clear();
    return;
  }
  const auto& object = payload.as_object();
  if (const auto* given = object.if_contains("parameters")) {
    if (!given->is_object()) {
      parameters.clear();
      return;
    }
    overlay(parameters, given->as_object());
  }
  for (const auto& kv : object)
    if (kv.key() != "parameters")
      parameters[std::string(kv.key())] =
          kv.value().is_string() ? std::string(kv.value().as_string()) : boost::json::serialize(kv.value());
}

DueRun due_run_of(const pqxx::row& row, int first, const DueJob& job) {
  auto at = [&](int i) { return row[first + i]; };
  DueRun d;
  d.id = RunId{at(0).as<std::int64_t>()};
  d.version = Version{at(1).as<std::int64_t>()};
  d.state = parse_run_state(at(2).as<std::string>()).value_or(RunState::pending);
  d.attempt = at(3).as<int>();
  d.max_attempts = at(4).as<int>();
  d.priority = at(5).as<int>();
  d.unstarted_assignments = at(6).as<int>();
  d.job_name = job.name;
  d.tasks_json = job.tasks_json;
  d.timeout_ms = job.timeout_ms;
  d.selector = job.selector;
  d.retry_base_ms = job.retry_base_ms;
  d.retry_cap_ms = job.retry_cap_ms;
  d.instance_limit = job.instance_limit;
  d.exclusive = job.exclusive;
  d.parameters = job.parameters;
  if (!at(7).is_null()) overlay_payload(d.parameters, at(7).as<std::string>());
  d.starts_at_us = at(8).as<std::int64_t>();
  d.starts_in_ms = starts_in_ms(d.starts_at_us, at(due_run_clock_column).as<std::int64_t>());
  return d;
}

DueRun due_run_of(const pqxx::row& row, int first) {
  return due_run_of(row, first, due_job_of(row, first + due_run_own_width));
}

const DueJob* DueJobCache::find(std::int64_t job_id, std::int64_t row_version) const {
  const auto it = jobs_.find(job_id);
  return it != jobs_.end() && it->second.row_version == row_version ? &it->second.job : nullptr;
}

void DueJobCache::put(std::int64_t job_id, std::int64_t row_version, DueJob job) {
  if (jobs_.size() >= due_job_cache_max && !jobs_.count(job_id)) jobs_.clear();
  jobs_[job_id] = Entry{row_version, std::move(job)};
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
