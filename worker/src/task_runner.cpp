#include "baton/worker/task_runner.h"

#include "baton/worker/exit_records.h"

#include "baton/worker/sql_task.h"
#include "baton/worker_core/sql_variables.h"
#include "baton/worker_core/task_parameters.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <thread>

#include <spdlog/spdlog.h>

#include "baton/base/duration.h"
#include "baton/base/utf8.h"
#include "baton/protocol/vocabulary.h"
#include "baton/worker/task_supervisor.h"

extern char** environ;

namespace baton::worker {

namespace {
using Clock = std::chrono::steady_clock;
constexpr auto poll_step = std::chrono::milliseconds(20);
}  // namespace

void TaskRunner::cancel(const std::string& reason, bool as_failure) {
  cancel_reason_ = reason;
  cancel_as_failure_ = as_failure;
  cancel_ = true;
  std::lock_guard lock(control_mutex_);
  kill_tree(control_fd_);
}

void TaskRunner::renew() {
  std::lock_guard lock(control_mutex_);
  renew_switch(control_fd_);
}

void TaskRunner::append(int stream, const char* data, std::size_t n) {
  if (ctx_ && ctx_->on_output) ctx_->on_output(stream, data, n);
  std::string& tail = stream == 0 ? stdout_tail_ : stderr_tail_;
  tail.append(data, n);
  if (tail.size() > protocol::output_tail_bytes_max) tail.erase(0, tail.size() - protocol::output_tail_bytes_max);
}

TaskRunner::TaskOutcome TaskRunner::run_program(const AttemptContext& ctx, const std::vector<std::string>& argv,
                                                const std::map<std::string, std::string>& env, const std::string& cwd,
                                                const protocol::TaskResources& resources, Clock::time_point deadline) {
  int out[2], err[2];
  if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) return {false, -1, false, false, "pipe failed"};
  // Build everything the child needs before fork: only async-signal-safe
  // calls after it.
  std::vector<std::string> worker_env;
  for (char** e = environ; *e; ++e) worker_env.emplace_back(*e);
  std::vector<std::string> env_strings =
      worker_core::task_environment(worker_env, ctx.env_allowlist, ctx.ref, ctx.previous, ctx.parameters, env);
  if (ctx.task_user) {
    // The task user's own identity, not the worker's: a program that
    // writes under $HOME must not aim at the worker's home.
    std::erase_if(env_strings, [](const std::string& e) {
      return e.rfind("HOME=", 0) == 0 || e.rfind("USER=", 0) == 0 || e.rfind("LOGNAME=", 0) == 0;
    });
    env_strings.push_back("HOME=" + ctx.task_user->home);
    env_strings.push_back("USER=" + ctx.task_user->name);
    env_strings.push_back("LOGNAME=" + ctx.task_user->name);
  }
  std::vector<char*> envp, args;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_copy = argv;
  for (auto& a : argv_copy) args.push_back(a.data());
  args.push_back(nullptr);
  // The tree gets a cgroup of its own where the host has them
  // (task_cgroup.h): it is emptied below before this attempt can finish,
  // whatever became of the supervisor.
  TaskCgroups::Group group;
  int procs_fd = -1;
  if (ctx.cgroups && ctx.cgroups->available()) {
    std::string why;
    group = ctx.cgroups->create(&why);
    if (!group.name.empty()) procs_fd = ::open(TaskCgroups::procs_file(group).c_str(), O_WRONLY | O_CLOEXEC);
    if (procs_fd < 0)
      spdlog::warn("task_cgroup_unavailable run={} attempt={} reason='{}'", ctx.ref.run_id, ctx.ref.attempt,
                   group.name.empty() ? why : "cannot open " + TaskCgroups::procs_file(group));
  }
  // Limits go to the tree's cgroup where its controllers are delegated here;
  // otherwise memory becomes each process's address space limit and pids
  // the task user's process limit (per user: only with a task user, and
  // root ignores it). cpu has no per-process equivalent: said in the log.
  TaskProcessLimits limits;
  if (ctx.task_user) {
    limits.switch_user = true;
    limits.uid = ctx.task_user->uid;
    limits.gid = ctx.task_user->gid;
    limits.groups = ctx.task_user->groups.data();
    limits.group_count = ctx.task_user->groups.size();
  }
  if (!resources.empty()) {
    TaskCgroups::Limits in_force;
    if (procs_fd >= 0)
      in_force = TaskCgroups::limit(group, resources.memory_bytes, resources.pids, resources.cpu_millis);
    if (resources.memory_bytes > 0 && !in_force.memory)
      limits.address_space = static_cast<std::uint64_t>(resources.memory_bytes);
    if (resources.pids > 0 && !in_force.pids && ctx.task_user)
      limits.nproc = static_cast<std::uint64_t>(resources.pids);
    const bool pids_unenforced = resources.pids > 0 && !in_force.pids && !ctx.task_user;
    const bool cpu_unenforced = resources.cpu_millis > 0 && !in_force.cpu;
    spdlog::info("task_resources run={} attempt={} memory={} pids={} cpu={}", ctx.ref.run_id, ctx.ref.attempt,
                 resources.memory_bytes == 0 ? "none"
                 : in_force.memory           ? "cgroup"
                                             : "rlimit_as",
                 resources.pids == 0 ? "none"
                 : in_force.pids     ? "cgroup"
                 : pids_unenforced   ? "not_enforced"
                                     : "rlimit_nproc",
                 resources.cpu_millis == 0 ? "none"
                 : cpu_unenforced          ? "not_enforced"
                                           : "cgroup");
  }
  // The task runs under a supervisor (task_supervisor.h) that kills its
  // whole tree when it ends, when it is cancelled, when this worker dies,
  // and when this worker stops renewing the dead-man's switch.
  const SupervisedTask sup = start_supervised(args.data(), envp.data(), cwd.empty() ? nullptr : cwd.c_str(), out[1],
                                              err[1], ctx.switch_timeout, procs_fd, limits, exit_record_fd_);
  const int fork_errno = errno;
  ::close(out[1]);
  ::close(err[1]);
  if (procs_fd >= 0) ::close(procs_fd);
  if (sup.supervisor < 0) {
    ::close(out[0]);
    ::close(err[0]);
    if (!group.name.empty()) ctx.cgroups->kill_and_remove(group, std::chrono::seconds(1));
    return {false, -1, false, false, std::string("fork failed: ") + std::strerror(fork_errno)};
  }
  const pid_t pid = sup.supervisor;
  {
    std::lock_guard lock(control_mutex_);
    control_fd_ = sup.control_fd;
  }
  if (ctx.on_process) ctx.on_process(pid, true);
  if (cancel_) kill_tree(sup.control_fd);

  TaskOutcome result;
  pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
  int open_fds = 2;
  bool killed = false;
  bool reaped = false;
  int status = 0;
  Clock::time_point drain_until = Clock::time_point::max();
  char buf[4096];
  // Until both pipes close, or shortly after the supervisor exited: the
  // supervisor only exits once the tree is dead (so the pipes close), but a
  // supervisor that was itself killed leaves the task's detached descendants
  // holding them open.
  while (open_fds > 0 && Clock::now() < drain_until) {
    if (!killed && (cancel_ || (deadline != Clock::time_point::max() && Clock::now() >= deadline))) {
      result.timed_out = !cancel_;
      result.canceled = cancel_;
      kill_tree(sup.control_fd);
      killed = true;
    }
    if (!reaped && ::waitpid(pid, &status, WNOHANG) == pid) {
      reaped = true;
      drain_until = Clock::now() + std::chrono::milliseconds(200);
      // Nothing of this attempt may outlive its finish: whatever is left in
      // the tree's group (the supervisor was killed) dies now.
      if (!group.name.empty() && !ctx.cgroups->kill_and_remove(group, std::chrono::seconds(5)))
        spdlog::error("task_cgroup_not_emptied run={} attempt={} group={}", ctx.ref.run_id, ctx.ref.attempt, group.dir);
    }
    int n = ::poll(fds, 2, static_cast<int>(poll_step.count()));
    if (n < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t got = ::read(fds[i].fd, buf, sizeof buf);
      if (got > 0) {
        append(i, buf, static_cast<std::size_t>(got));
      } else {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  for (auto& f : fds)
    if (f.fd >= 0) ::close(f.fd);
  if (!reaped) ::waitpid(pid, &status, 0);  // the supervisor exits once the whole tree is gone
  // A supervisor killed by a signal (not by its own exit with the task's
  // status) may have reaped the task first: then the task's own status, a
  // success included, is the outcome, not the supervisor's death.
  if (WIFSIGNALED(status))
    if (auto reported = reported_task_status(sup.control_fd)) status = *reported;
  // ... or was killed (see above); emptying the group again is a no-op if
  // it is gone already.
  if (!group.name.empty() && !ctx.cgroups->kill_and_remove(group, std::chrono::seconds(5)))
    spdlog::error("task_cgroup_not_emptied run={} attempt={} group={}", ctx.ref.run_id, ctx.ref.attempt, group.dir);
  {
    // Under the lock: a cancel() or renew() on another thread must never
    // write to this descriptor number after it was closed (and reused).
    std::lock_guard lock(control_mutex_);
    control_fd_ = -1;
    ::close(sup.control_fd);
  }
  if (ctx.on_process) ctx.on_process(pid, false);
  if (killed && result.timed_out) {
    result.exit_code = -1;
    result.error = "timed out";
    return result;
  }
  if (killed || cancel_) {  // cancel() may have killed the group before this loop saw the flag
    result.canceled = true;
    result.exit_code = -1;
    result.error = cancel_reason_;
    return result;
  }
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  result.ok = result.exit_code == 0;
  if (!result.ok) result.error = "exit code " + std::to_string(result.exit_code);
  return result;
}

namespace {
// What a PROGRAM task gets as BATON_* variables, as baton.* settings.
std::map<std::string, std::string> sql_settings(const AttemptContext& ctx) {
  std::map<std::string, std::string> out;
  for (const auto& [k, v] : worker_core::attempt_facts(ctx.ref, ctx.previous)) {
    std::string name = "baton.";
    for (char ch : k) name += static_cast<char>(ch >= 'A' && ch <= 'Z' ? ch - 'A' + 'a' : ch);
    out[name] = v;
  }
  return out;
}
}  // namespace

TaskRunner::TaskOutcome TaskRunner::run_sql(const AttemptContext& ctx, const std::string& url, const std::string& sql,
                                            const std::string& run_as, Clock::time_point deadline) {
  auto settings = sql_settings(ctx);
  // `run_as` is the `role` setting, made with the others through
  // set_config (as SET ROLE would, and a value, never SQL text), not a
  // "SET ROLE" in front of the task's text: that made the text two
  // statements, one implicit transaction block, in which PostgreSQL
  // refuses VACUUM, CREATE INDEX CONCURRENTLY, CREATE DATABASE and a CALL
  // that commits.
  if (!run_as.empty()) settings["role"] = run_as;
  const auto r = run_sql_task(
      url, sql, "baton-run-" + std::to_string(ctx.ref.run_id) + "-attempt-" + std::to_string(ctx.ref.attempt), deadline,
      cancel_, [this](int stream, const std::string& text) { append(stream, text.data(), text.size()); }, settings);
  if (r.canceled) return {false, -1, false, true, cancel_reason_};
  return {r.ok, r.exit_code, r.timed_out, false, r.error};
}

TaskRunner::TaskOutcome TaskRunner::run_builtin(const protocol::Task& t, Clock::time_point deadline) {
  if (t.builtin == protocol::Builtin::noop) return {true, 0, false, false, ""};
  if (t.builtin == protocol::Builtin::log) {
    std::string line = t.argument + "\n";
    append(0, line.data(), line.size());
    return {true, 0, false, false, ""};
  }
  if (t.builtin == protocol::Builtin::fail) {
    std::string line = (t.argument.empty() ? "FAIL" : t.argument) + "\n";
    append(1, line.data(), line.size());
    return {false, 1, false, false, t.argument.empty() ? "FAIL" : t.argument};
  }
  if (t.builtin == protocol::Builtin::sleep) {
    std::string why;
    auto d = parse_duration(t.argument.empty() ? "1s" : t.argument, &why);
    if (!d) return {false, 2, false, false, "SLEEP: " + why};
    auto until = Clock::now() + *d;
    while (Clock::now() < until) {
      if (cancel_) return {false, -1, false, true, cancel_reason_};
      if (deadline != Clock::time_point::max() && Clock::now() >= deadline)
        return {false, -1, true, false, "timed out"};
      std::this_thread::sleep_for(std::min<Clock::duration>(poll_step, until - Clock::now()));
    }
    return {true, 0, false, false, ""};
  }
  return {false, 2, false, false, std::string("unknown builtin ") + protocol::to_string(t.builtin)};
}

protocol::Finish TaskRunner::run(const AttemptContext& ctx, const std::vector<protocol::Task>& tasks) {
  const auto start = Clock::now();
  const auto deadline = ctx.timeout.count() > 0 ? start + ctx.timeout : Clock::time_point::max();
  ctx_ = &ctx;
  protocol::Finish fin;
  fin.ref = ctx.ref;
  fin.outcome = protocol::Outcome::succeeded;
  std::optional<std::string> failed_on;  // the first failure of an on_error: continue task
  int failed_exit = 0;
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    const auto& t = tasks[i];
    const auto t0 = Clock::now();
    TaskOutcome o;
    // The task's own knobs (docs/scheduling.md, "Chains"): its parameter
    // values over the run's, and its timeout within the run's.
    const AttemptContext* task_ctx = &ctx;
    AttemptContext with_own_parameters;
    if (!t.parameters.empty()) {
      with_own_parameters = ctx;
      for (const auto& [k, v] : t.parameters) with_own_parameters.parameters[k] = v;
      task_ctx = &with_own_parameters;
    }
    const bool own_deadline = t.timeout_ms > 0 && t0 + std::chrono::milliseconds(t.timeout_ms) < deadline;
    const auto task_deadline = own_deadline ? t0 + std::chrono::milliseconds(t.timeout_ms) : deadline;
    // {{param.NAME}} in arguments, env values and a builtin's argument.
    protocol::Task expanded = t;
    std::optional<std::string> bad_reference;
    auto expand = [&](std::string& text) {
      auto r = worker_core::substitute_parameters(text, task_ctx->parameters);
      if (auto* e = std::get_if<worker_core::SubstitutionError>(&r)) {
        if (!bad_reference) bad_reference = e->message;
      } else {
        text = std::get<std::string>(r);
      }
    };
    for (auto& a : expanded.command) expand(a);
    for (auto& [k, v] : expanded.env) expand(v);
    expand(expanded.argument);
    if (cancel_) {
      o = {false, -1, false, true, cancel_reason_};
    } else if (bad_reference) {
      o = {false, 2, false, false, "parameters: " + *bad_reference};
    } else if (t.kind == protocol::TaskKind::program) {
      // The chain's last task, with nothing failed before it: its end is
      // the attempt's, and its supervisor records it (exit_record.h) before
      // anything else can happen to this worker.
      const bool last = i + 1 == tasks.size() && !failed_on && !ctx.exit_record_dir.empty();
      if (last)
        exit_record_fd_ = open_exit_record(ctx.exit_record_dir, ctx.ref,
                                           t.ignore_error || t.on_error == protocol::TaskOnError::ignore);
      o = run_program(*task_ctx, expanded.command, expanded.env, expanded.cwd, t.resources, task_deadline);
      if (exit_record_fd_ >= 0) ::close(exit_record_fd_);
      exit_record_fd_ = -1;
    } else if (t.kind == protocol::TaskKind::sql) {
      auto c = ctx.sql_connections.find(t.connection);
      if (c == ctx.sql_connections.end()) {
        o = {false, 2, false, false, "SQL: no connection named '" + t.connection + "' in this worker's config"};
      } else {
        // Parameters are interpolated as psql would (:'NAME' a quoted
        // literal, :"NAME" an identifier), by the worker: nothing is
        // spliced into the SQL text, and no psql (no shell escape).
        auto text = worker_core::interpolate_sql_variables(t.sql, task_ctx->parameters);
        if (auto* e = std::get_if<worker_core::SqlVariableError>(&text))
          o = {false, 2, false, false, "SQL: " + e->message};
        else
          o = run_sql(ctx, c->second, std::get<std::string>(text), t.run_as, task_deadline);
      }
    } else {
      o = run_builtin(expanded, task_deadline);
    }
    // The task's own timeout is a failure of the task, which its on_error
    // handles; the run's timeout ends the run (TIMED_OUT), below.
    if (o.timed_out && own_deadline) {
      o.timed_out = false;
      o.exit_code = -1;
      o.error = "timed out after its timeout of " + std::to_string(t.timeout_ms) + "ms";
    }
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
    fin.tasks.push_back({t.name.empty() ? "task" + std::to_string(i) : t.name, o.exit_code, ms, o.ok});
    fin.exit_code = o.exit_code;
    if (o.ok) continue;
    if (o.canceled) {
      fin.outcome = cancel_as_failure_ ? protocol::Outcome::failed : protocol::Outcome::canceled;
      fin.error = o.error;
      break;
    }
    if (o.timed_out) {
      fin.outcome = protocol::Outcome::timed_out;
      fin.error = "run timed out after " + std::to_string(ctx.timeout.count()) + "ms";
      break;
    }
    // on_error (docs/scheduling.md, "Chains"): ignore -- the failure does
    // not count; continue -- the chain goes on and the run fails at its end
    // (with the first such error); stop -- the run fails now.
    const bool ignore = t.ignore_error || t.on_error == protocol::TaskOnError::ignore;
    if (ignore) continue;
    const std::string error = (t.name.empty() ? "task " + std::to_string(i) : t.name) + ": " + o.error;
    if (t.on_error == protocol::TaskOnError::continue_) {
      if (!failed_on) {
        failed_on = error;
        failed_exit = o.exit_code;
      }
      continue;
    }
    fin.outcome = protocol::Outcome::failed;
    fin.error = error;
    break;
  }
  if (failed_on && fin.outcome == protocol::Outcome::succeeded) {
    fin.outcome = protocol::Outcome::failed;
    fin.error = *failed_on;
    fin.exit_code = failed_exit;
  }
  fin.duration_ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
  // Whatever bytes the task printed, the tails are valid UTF-8 on a
  // character boundary: a finish must always encode into a text frame.
  fin.stdout_tail = utf8_tail(stdout_tail_, protocol::output_tail_bytes_max);
  fin.stderr_tail = utf8_tail(stderr_tail_, protocol::output_tail_bytes_max);
  fin.error = to_valid_utf8(fin.error);
  ctx_ = nullptr;
  return fin;
}

}  // namespace baton::worker
