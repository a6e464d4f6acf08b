#include "baton/worker/sql_task.h"

#include <libpq-fe.h>
#include <poll.h>

#include <memory>
#include <vector>

namespace baton::worker {

namespace {

using Clock = std::chrono::steady_clock;
constexpr auto poll_step = std::chrono::milliseconds(20);
constexpr auto cancel_grace = std::chrono::seconds(5);

struct Output {
  const std::function<void(int, const std::string&)>& emit;
};

void on_notice(void* arg, const PGresult* r) {
  auto* out = static_cast<Output*>(arg);
  out->emit(1, PQresultErrorMessage(r));
}

void print_rows(const PGresult* r, const Output& out) {
  const int cols = PQnfields(r);
  const int rows = PQntuples(r);
  std::string text;
  for (int c = 0; c < cols; ++c) text += (c ? "|" : "") + std::string(PQfname(r, c));
  text += '\n';
  for (int row = 0; row < rows; ++row) {
    for (int c = 0; c < cols; ++c) {
      if (c) text += '|';
      if (!PQgetisnull(r, row, c)) text.append(PQgetvalue(r, row, c), static_cast<std::size_t>(PQgetlength(r, row, c)));
    }
    text += '\n';
    if (text.size() >= 64 * 1024) {  // stream big results as they are printed
      out.emit(0, text);
      text.clear();
    }
  }
  text += "(" + std::to_string(rows) + (rows == 1 ? " row)\n" : " rows)\n");
  out.emit(0, text);
}

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

}  // namespace

SqlTaskOutcome run_sql_task(const std::string& url, const std::string& sql, const std::string& application_name,
                            Clock::time_point deadline, const std::atomic<bool>& cancel,
                            const std::function<void(int, const std::string&)>& output,
                            const std::map<std::string, std::string>& settings) {
  SqlTaskOutcome o;
  Output out{output};
  const char* keys[] = {"dbname", "application_name", "connect_timeout", nullptr};
  const char* values[] = {url.c_str(), application_name.c_str(), "10", nullptr};
  std::unique_ptr<PGconn, decltype(&PQfinish)> conn(PQconnectdbParams(keys, values, /*expand_dbname=*/1), &PQfinish);
  if (!conn || PQstatus(conn.get()) != CONNECTION_OK) {
    // libpq's message names the host, never the password.
    o.exit_code = 2;
    o.error = "SQL: cannot connect: " + trimmed(conn ? PQerrorMessage(conn.get()) : "out of memory");
    output(1, o.error + "\n");
    return o;
  }
  PQsetNoticeReceiver(conn.get(), on_notice, &out);
  // Literals made by sql_variables.h assume it (PostgreSQL's default since
  // 9.1): a server that will not have it is not given the task's SQL
  // (security review L7).
  {
    std::unique_ptr<PGresult, decltype(&PQclear)> set(PQexec(conn.get(), "SET standard_conforming_strings = on"),
                                                      &PQclear);
    if (!set || PQresultStatus(set.get()) != PGRES_COMMAND_OK) {
      o.exit_code = 2;
      o.error = "SQL: cannot set standard_conforming_strings = on, which the task's quoted parameters need: " +
                trimmed(PQerrorMessage(conn.get()));
      output(1, o.error + "\n");
      return o;
    }
  }
  if (!settings.empty()) {
    // One statement, every name and value a parameter: nothing a run or a
    // worker supplied becomes SQL text. current_setting('baton.run_id')
    // then answers in the task's SQL.
    std::string text = "SELECT ";
    std::vector<const char*> values;
    int n = 0;
    for (const auto& [name, value] : settings) {
      if (n > 0) text += ", ";
      text += "set_config($" + std::to_string(n + 1) + ", $" + std::to_string(n + 2) + ", false)";
      values.push_back(name.c_str());
      values.push_back(value.c_str());
      n += 2;
    }
    PGresult* r = PQexecParams(conn.get(), text.c_str(), n, nullptr, values.data(), nullptr, nullptr, 0);
    const bool set = PQresultStatus(r) == PGRES_TUPLES_OK;
    if (!set) {
      o.exit_code = 2;
      o.error = "SQL: cannot set the attempt's session settings: " + trimmed(PQresultErrorMessage(r));
    }
    PQclear(r);
    if (!set) {
      output(1, o.error + "\n");
      return o;
    }
  }
  if (!PQsendQuery(conn.get(), sql.c_str())) {
    o.exit_code = 2;
    o.error = "SQL: " + trimmed(PQerrorMessage(conn.get()));
    output(1, o.error + "\n");
    return o;
  }
  const int fd = PQsocket(conn.get());
  bool cancel_sent = false;
  Clock::time_point give_up = Clock::time_point::max();
  std::string first_error;
  for (;;) {
    if (!cancel_sent && (cancel.load() || (deadline != Clock::time_point::max() && Clock::now() >= deadline))) {
      o.canceled = cancel.load();
      o.timed_out = !o.canceled;
      if (PGcancel* c = PQgetCancel(conn.get())) {
        char err[256];
        PQcancel(c, err, sizeof err);
        PQfreeCancel(c);
      }
      cancel_sent = true;
      give_up = Clock::now() + cancel_grace;
    }
    if (Clock::now() >= give_up) break;  // the server ignores the cancel: drop the connection
    if (PQisBusy(conn.get())) {
      pollfd p{fd, POLLIN, 0};
      ::poll(&p, 1, static_cast<int>(poll_step.count()));
      if (!PQconsumeInput(conn.get())) {
        if (first_error.empty()) first_error = trimmed(PQerrorMessage(conn.get()));
        break;
      }
      continue;
    }
    PGresult* r = PQgetResult(conn.get());
    if (!r) break;
    switch (PQresultStatus(r)) {
      case PGRES_TUPLES_OK: print_rows(r, out); break;
      case PGRES_FATAL_ERROR:
      case PGRES_NONFATAL_ERROR:
        if (first_error.empty()) first_error = trimmed(PQresultErrorMessage(r));
        output(1, PQresultErrorMessage(r));
        break;
      case PGRES_COPY_OUT: {
        char* buf = nullptr;
        for (int n; (n = PQgetCopyData(conn.get(), &buf, 0)) > 0;) {
          output(0, std::string(buf, static_cast<std::size_t>(n)));
          PQfreemem(buf);
        }
        break;
      }
      case PGRES_COPY_IN: PQputCopyEnd(conn.get(), "COPY FROM STDIN is not supported in an SQL task"); break;
      default: break;
    }
    PQclear(r);
  }
  if (o.canceled || o.timed_out) {
    o.exit_code = -1;
    o.error = o.canceled ? "canceled" : "timed out";
    return o;
  }
  if (!first_error.empty()) {
    o.exit_code = 3;
    o.error = "SQL: " + first_error;
    return o;
  }
  o.ok = true;
  return o;
}

}  // namespace baton::worker
