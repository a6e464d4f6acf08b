#include "baton/protocol/codec.h"

#include <boost/json.hpp>
#include <limits>

#include "baton/base/ids.h"
#include "baton/base/utf8.h"
#include "baton/protocol/vocabulary.h"

namespace baton::protocol {

namespace json = boost::json;

namespace {

// Internal only: decode() catches it and returns a DecodeError.
struct Invalid {
  std::string message;
};

class Fields {
 public:
  Fields(const json::object& o, std::string where) : o_(o), where_(std::move(where)) {}

  const json::value* find(const char* key) const {
    auto it = o_.find(key);
    return it == o_.end() || it->value().is_null() ? nullptr : &it->value();
  }
  bool has(const char* key) const { return find(key) != nullptr; }
  const json::object& object_of(const char* key) const {
    const json::value* v = find(key);
    if (!v) fail(key, "is required");
    if (!v->is_object()) fail(key, "must be an object");
    return v->as_object();
  }
  [[noreturn]] void fail(const char* key, const std::string& what) const {
    throw Invalid{where_ + "." + key + ": " + what};
  }
  std::string str(const char* key, bool required = true, std::size_t max = 4096) const {
    const json::value* v = find(key);
    if (!v) {
      if (required) fail(key, "is required");
      return {};
    }
    if (!v->is_string()) fail(key, "must be a string");
    if (v->as_string().size() > max) fail(key, "is longer than " + std::to_string(max) + " bytes");
    return std::string(v->as_string());
  }
  std::int64_t integer(const char* key, std::int64_t min, std::int64_t max, std::optional<std::int64_t> dflt) const {
    const json::value* v = find(key);
    if (!v) {
      if (!dflt) fail(key, "is required");
      return *dflt;
    }
    std::int64_t n = 0;
    if (v->is_int64())
      n = v->as_int64();
    else if (v->is_uint64() && v->as_uint64() <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
      n = static_cast<std::int64_t>(v->as_uint64());
    else
      fail(key, "must be an integer");
    if (n < min || n > max)
      fail(key,
           "must be between " + std::to_string(min) + " and " + std::to_string(max) + ", got " + std::to_string(n));
    return n;
  }
  bool boolean(const char* key, bool dflt) const {
    const json::value* v = find(key);
    if (!v) return dflt;
    if (!v->is_bool()) fail(key, "must be true or false");
    return v->as_bool();
  }
  const json::array* array(const char* key, std::size_t max) const {
    const json::value* v = find(key);
    if (!v) return nullptr;
    if (!v->is_array()) fail(key, "must be an array");
    if (v->as_array().size() > max) fail(key, "has more than " + std::to_string(max) + " entries");
    return &v->as_array();
  }
  const json::object& object(const json::value& v, const std::string& what) const {
    if (!v.is_object()) throw Invalid{where_ + "." + what + ": must be an object"};
    return v.as_object();
  }
  std::map<std::string, std::string> string_map(const char* key) const {
    std::map<std::string, std::string> out;
    const json::value* v = find(key);
    if (!v) return out;
    if (!v->is_object()) fail(key, "must be an object of strings");
    if (v->as_object().size() > 256) fail(key, "has more than 256 entries");
    for (const auto& kv : v->as_object()) {
      if (!kv.value().is_string()) fail(key, "value of '" + std::string(kv.key()) + "' must be a string");
      out[std::string(kv.key())] = std::string(kv.value().as_string());
    }
    return out;
  }
  std::string where() const { return where_; }

 private:
  const json::object& o_;
  std::string where_;
};

constexpr std::int64_t int_max = std::numeric_limits<int>::max();
constexpr std::int64_t ms_max = std::int64_t{1} << 40;
constexpr std::int64_t bytes_max = std::int64_t{1} << 50;  // an offset in a task's output

AttemptRef read_ref(const Fields& f) {
  AttemptRef r;
  r.run_id = f.integer("run_id", 1, std::numeric_limits<std::int64_t>::max(), std::nullopt);
  r.attempt = static_cast<int>(f.integer("attempt", 1, 1000, std::nullopt));
  r.lease_token = f.str("lease_token", true, 64);
  return r;
}

std::vector<AttemptRef> read_refs(const Fields& f, const char* key) {
  std::vector<AttemptRef> out;
  if (const json::array* a = f.array(key, running_per_worker_max)) {
    for (std::size_t i = 0; i < a->size(); ++i) {
      Fields item(f.object((*a)[i], std::string(key) + "[" + std::to_string(i) + "]"),
                  f.where() + "." + key + "[" + std::to_string(i) + "]");
      out.push_back(read_ref(item));
    }
  }
  return out;
}

Task read_task(const Fields& f) {
  Task t;
  std::string kind = f.str("kind");
  if (kind == "PROGRAM")
    t.kind = TaskKind::program;
  else if (kind == "SQL")
    t.kind = TaskKind::sql;
  else if (kind == "BUILTIN")
    t.kind = TaskKind::builtin;
  else
    f.fail("kind", "must be PROGRAM, SQL or BUILTIN, got '" + kind + "'");
  t.name = f.str("name", false, 200);
  if (const json::array* a = f.array("command", 1024)) {
    for (const auto& v : *a) {
      if (!v.is_string()) f.fail("command", "must be an array of strings");
      t.command.emplace_back(v.as_string());
    }
  }
  t.env = f.string_map("env");
  t.cwd = f.str("cwd", false);
  t.connection = f.str("connection", false, 200);
  t.sql = f.str("sql", false, 256 * 1024);
  const std::string builtin = f.str("builtin", false, 32);
  t.argument = f.str("argument", false, 64 * 1024);
  t.ignore_error = f.boolean("ignore_error", false);
  const std::string on_error = f.str("on_error", false, 16);
  if (on_error == "continue")
    t.on_error = TaskOnError::continue_;
  else if (on_error == "ignore")
    t.on_error = TaskOnError::ignore;
  else if (!on_error.empty() && on_error != "stop")
    f.fail("on_error", "must be stop, continue or ignore");
  if (f.has("resources")) {
    const Fields r(f.object_of("resources"), f.where() + ".resources");
    t.resources.memory_bytes = r.integer("memory_bytes", 0, std::int64_t{1} << 50, 0);
    t.resources.pids = r.integer("pids", 0, 1 << 22, 0);
    t.resources.cpu_millis = r.integer("cpu_millis", 0, 1 << 20, 0);
  }
  t.timeout_ms = f.integer("timeout_ms", 0, std::int64_t{1} << 40, 0);
  t.parameters = f.string_map("parameters");
  t.run_as = f.str("run_as", false, 63);
  if (!t.run_as.empty() && t.kind != TaskKind::sql) f.fail("run_as", "applies to a SQL task only");
  if (t.kind == TaskKind::program && t.command.empty()) f.fail("command", "PROGRAM needs a non-empty command");
  if (t.kind == TaskKind::sql && (t.connection.empty() || t.sql.empty()))
    f.fail("sql", "SQL needs both connection and sql");
  if (t.kind == TaskKind::builtin) {
    if (auto b = parse_builtin(builtin))
      t.builtin = *b;
    else
      f.fail("builtin", "must be NOOP, SLEEP, LOG or FAIL, got '" + builtin + "'");
  }
  return t;
}

Message read_message(const std::string& type, const Fields& f, int frame_version) {
  if (type == "hello") {
    Hello m;
    m.worker_id = f.str("worker_id", true, 200);
    if (m.worker_id.empty()) f.fail("worker_id", "must not be empty");
    if (!id_alphabet(m.worker_id)) f.fail("worker_id", "may hold only letters, digits, '-', '_' and '.'");
    m.token = f.str("token", true, 4096);
    m.capacity = static_cast<int>(f.integer("capacity", 0, 100000, std::nullopt));
    m.prefetch = static_cast<int>(f.integer("prefetch", 0, 100000, 0));
    if (m.prefetch > m.capacity) f.fail("prefetch", "must not be more than capacity");
    m.labels = f.string_map("labels");
    m.running = read_refs(f, "running");
    m.finished = read_refs(f, "finished");
    m.unreachable_leader = f.str("unreachable_leader", false, 512);
    m.instance = f.str("instance", false, 64);
    m.succeeds = f.str("succeeds", false, 64);
    m.protocol_min = m.protocol_max = frame_version;
    if (frame_version >= 2 || f.has("protocol")) {
      // A range: what the worker speaks. Older versions did not send it.
      const Fields p(f.object_of("protocol"), "hello.protocol");
      m.protocol_min = static_cast<int>(p.integer("min", 1, 1000000, std::nullopt));
      m.protocol_max = static_cast<int>(p.integer("max", 1, 1000000, std::nullopt));
      if (m.protocol_min > m.protocol_max) p.fail("min", "must not be more than max");
    }
    return m;
  }
  if (type == "welcome") {
    Welcome m;
    m.node_id = f.str("node_id");
    m.epoch = f.integer("epoch", 0, std::numeric_limits<std::int64_t>::max(), std::nullopt);
    m.heartbeat_interval_ms = f.integer("heartbeat_interval_ms", 1, ms_max, 1000);
    m.heartbeat_timeout_ms = f.integer("heartbeat_timeout_ms", 1, ms_max, 5000);
    m.continuation_timeout_ms = f.integer("continuation_timeout_ms", 1, ms_max, 30000);
    m.continuation_margin_ms = f.integer("continuation_margin_ms", 1, ms_max, 10000);
    m.adopted = read_refs(f, "adopted");
    m.protocol = static_cast<int>(f.integer("protocol", 1, 1000000, frame_version));
    return m;
  }
  if (type == "redirect") {
    Redirect m;
    m.leader_endpoint = f.str("leader_endpoint", false, 512);
    m.epoch = f.integer("epoch", 0, std::numeric_limits<std::int64_t>::max(), 0);
    return m;
  }
  if (type == "error")
    return Error{f.str("code", true, 64), f.str("message", false), f.integer("retry_after_ms", 0, ms_max, 0)};
  if (type == "assign") {
    Assign m;
    m.ref = read_ref(f);
    if (const json::array* a = f.array("tasks", tasks_per_run_max)) {
      for (std::size_t i = 0; i < a->size(); ++i)
        m.tasks.push_back(read_task(Fields(f.object((*a)[i], "tasks[" + std::to_string(i) + "]"),
                                           f.where() + ".tasks[" + std::to_string(i) + "]")));
    }
    if (m.tasks.empty()) f.fail("tasks", "must hold at least one task");
    m.timeout_ms = f.integer("timeout_ms", 0, ms_max, 0);
    m.continuation_timeout_ms = f.integer("continuation_timeout_ms", 0, ms_max, 0);
    m.parameters = f.string_map("parameters");
    // Version 4: the start granted with the assignment. A frame of an older
    // version cannot carry it (no node of that version wrote the start).
    if (f.has("start_granted") && frame_version < start_grant_version_min)
      f.fail("start_granted", "needs protocol version " + std::to_string(start_grant_version_min) + " or later, got " +
                                  std::to_string(frame_version));
    m.start_granted = f.boolean("start_granted", false);
    if (f.has("previous")) {
      if (frame_version < provenance_version_min)
        f.fail("previous", "needs protocol version " + std::to_string(provenance_version_min) + " or later, got " +
                               std::to_string(frame_version));
      Fields p(f.object_of("previous"), f.where() + ".previous");
      m.previous.fate = p.str("fate", true, 32);
      if (!is_attempt_fate(m.previous.fate))
        p.fail("fate", "must be one of succeeded_unacknowledged, fenced_out, lost_contact, timed_out, failed");
      m.previous.attempt = static_cast<int>(p.integer("attempt", 1, 1000000, 1));
      m.previous.worker = p.str("worker", false, 256);
    }
    return m;
  }
  if (type == "start") return Start{read_ref(f)};
  if (type == "start_granted") return StartGranted{read_ref(f)};
  if (type == "start_denied") return StartDenied{read_ref(f), f.str("reason", false)};
  if (type == "heartbeat") {
    Heartbeat m{read_refs(f, "running"), read_refs(f, "finished"), read_refs(f, "assigned"), {}};
    if (f.has("progress") && frame_version < progress_version_min)
      f.fail("progress", "needs protocol version " + std::to_string(progress_version_min) + " or later, got " +
                             std::to_string(frame_version));
    if (const json::array* a = f.array("progress", running_per_worker_max)) {
      for (std::size_t i = 0; i < a->size(); ++i) {
        Fields item(f.object((*a)[i], "progress[" + std::to_string(i) + "]"),
                    f.where() + ".progress[" + std::to_string(i) + "]");
        m.progress.push_back(Progress{read_ref(item), item.str("text", false, progress_text_bytes_max)});
      }
    }
    return m;
  }
  if (type == "finish") {
    Finish m;
    m.ref = read_ref(f);
    const std::string outcome = f.str("outcome", true, 32);
    if (auto o = parse_outcome(outcome))
      m.outcome = *o;
    else
      f.fail("outcome", "must be SUCCEEDED, FAILED, TIMED_OUT or CANCELED, got '" + outcome + "'");
    if (f.find("exit_code")) m.exit_code = static_cast<int>(f.integer("exit_code", -int_max, int_max, 0));
    m.error = f.str("error", false, 4096);
    m.stdout_tail = f.str("stdout_tail", false, output_tail_bytes_max);
    m.stderr_tail = f.str("stderr_tail", false, output_tail_bytes_max);
    m.duration_ms = f.integer("duration_ms", 0, ms_max, 0);
    if (f.find("stdout_bytes")) m.stdout_bytes = f.integer("stdout_bytes", 0, bytes_max, 0);
    if (f.find("stderr_bytes")) m.stderr_bytes = f.integer("stderr_bytes", 0, bytes_max, 0);
    if (const json::array* a = f.array("tasks", tasks_per_run_max)) {
      for (std::size_t i = 0; i < a->size(); ++i) {
        Fields t(f.object((*a)[i], "tasks[" + std::to_string(i) + "]"),
                 f.where() + ".tasks[" + std::to_string(i) + "]");
        m.tasks.push_back(TaskResult{t.str("name", false, 200),
                                     static_cast<int>(t.integer("exit_code", -int_max, int_max, 0)),
                                     t.integer("duration_ms", 0, ms_max, 0), t.boolean("ok", true)});
      }
    }
    return m;
  }
  if (type == "finish_ack") return FinishAck{read_ref(f)};
  if (type == "cancel") return Cancel{read_ref(f), f.str("reason", false)};
  if (type == "drain") return Drain{};
  if (type == "output") {
    Output m;
    m.ref = read_ref(f);
    m.stream = f.str("stream", true, 16);
    if (m.stream != "stdout" && m.stream != "stderr")
      f.fail("stream", "must be stdout or stderr, got '" + m.stream + "'");
    m.offset = f.integer("offset", 0, bytes_max, std::nullopt);
    m.data = f.str("data", true, output_chunk_bytes_max);
    return m;
  }
  throw Invalid{"unknown message type '" + type.substr(0, 64) + "'"};
}

json::object ref_json(const AttemptRef& r) {
  return {{"run_id", r.run_id}, {"attempt", r.attempt}, {"lease_token", r.lease_token}};
}
json::array refs_json(const std::vector<AttemptRef>& refs) {
  json::array a;
  for (const auto& r : refs) a.push_back(ref_json(r));
  return a;
}
json::object map_json(const std::map<std::string, std::string>& m) {
  json::object o;
  for (const auto& [k, v] : m) o[k] = v;
  return o;
}

json::object resources_json(const TaskResources& r) {
  json::object o;
  if (r.memory_bytes > 0) o["memory_bytes"] = r.memory_bytes;
  if (r.pids > 0) o["pids"] = r.pids;
  if (r.cpu_millis > 0) o["cpu_millis"] = r.cpu_millis;
  return o;
}
void put_ref(json::object& o, const AttemptRef& r) {
  o["run_id"] = r.run_id;
  o["attempt"] = r.attempt;
  o["lease_token"] = r.lease_token;
}

struct Encoder {
  json::object& o;
  int version = protocol_version_min;
  void operator()(const Hello& m) {
    // Every version of a hello carries the range; a version-1 node ignores
    // the key it does not know.
    o["protocol"] = json::object{{"min", m.protocol_min}, {"max", m.protocol_max}};
    o["worker_id"] = m.worker_id;
    o["token"] = m.token;
    o["capacity"] = m.capacity;
    if (m.prefetch > 0) o["prefetch"] = m.prefetch;
    o["labels"] = map_json(m.labels);
    o["running"] = refs_json(m.running);
    if (!m.finished.empty()) o["finished"] = refs_json(m.finished);
    if (!m.unreachable_leader.empty()) o["unreachable_leader"] = m.unreachable_leader;
    if (!m.instance.empty()) o["instance"] = m.instance;
    if (!m.succeeds.empty()) o["succeeds"] = m.succeeds;
  }
  void operator()(const Welcome& m) {
    o["node_id"] = m.node_id;
    o["epoch"] = m.epoch;
    o["heartbeat_interval_ms"] = m.heartbeat_interval_ms;
    o["heartbeat_timeout_ms"] = m.heartbeat_timeout_ms;
    o["continuation_timeout_ms"] = m.continuation_timeout_ms;
    o["continuation_margin_ms"] = m.continuation_margin_ms;
    if (!m.adopted.empty()) o["adopted"] = refs_json(m.adopted);
    if (version >= 2) o["protocol"] = m.protocol;
  }
  void operator()(const Redirect& m) {
    o["leader_endpoint"] = m.leader_endpoint;
    o["epoch"] = m.epoch;
  }
  void operator()(const Error& m) {
    o["code"] = m.code;
    o["message"] = m.message;
    if (version >= 2 && m.retry_after_ms > 0) o["retry_after_ms"] = m.retry_after_ms;
  }
  void operator()(const Assign& m) {
    put_ref(o, m.ref);
    if (!m.parameters.empty()) o["parameters"] = map_json(m.parameters);
    json::array tasks;
    for (const Task& t : m.tasks) {
      json::object j;
      j["kind"] = t.kind == TaskKind::program ? "PROGRAM" : t.kind == TaskKind::sql ? "SQL" : "BUILTIN";
      if (!t.name.empty()) j["name"] = t.name;
      if (!t.command.empty()) {
        json::array c;
        for (const auto& s : t.command) c.push_back(json::string(s));
        j["command"] = std::move(c);
      }
      if (!t.env.empty()) j["env"] = map_json(t.env);
      if (!t.cwd.empty()) j["cwd"] = t.cwd;
      if (!t.connection.empty()) j["connection"] = t.connection;
      if (!t.sql.empty()) j["sql"] = t.sql;
      if (t.kind == TaskKind::builtin) j["builtin"] = to_string(t.builtin);
      if (!t.argument.empty()) j["argument"] = t.argument;
      if (t.ignore_error) j["ignore_error"] = true;
      if (t.on_error == TaskOnError::continue_) j["on_error"] = "continue";
      if (t.on_error == TaskOnError::ignore) j["on_error"] = "ignore";
      if (!t.resources.empty()) j["resources"] = resources_json(t.resources);
      if (t.timeout_ms > 0) j["timeout_ms"] = t.timeout_ms;
      if (!t.parameters.empty()) j["parameters"] = map_json(t.parameters);
      if (!t.run_as.empty()) j["run_as"] = t.run_as;
      tasks.push_back(std::move(j));
    }
    o["tasks"] = std::move(tasks);
    o["timeout_ms"] = m.timeout_ms;
    if (m.continuation_timeout_ms > 0) o["continuation_timeout_ms"] = m.continuation_timeout_ms;
    // Never to an older peer (its decoder would refuse the frame). Without
    // the field such a worker asks for the start, which a leader grants
    // again for a run already RUNNING with its token: slower, still safe.
    if (m.start_granted && version >= start_grant_version_min) o["start_granted"] = true;
    // Never to an older peer: it would not know the field (and a reader of
    // version 7 refuses it in an older frame). Such a worker's tasks are
    // told nothing of the previous attempt.
    if (!m.previous.fate.empty() && version >= provenance_version_min) {
      json::object p;
      p["fate"] = m.previous.fate;
      p["attempt"] = m.previous.attempt;
      p["worker"] = m.previous.worker;
      o["previous"] = std::move(p);
    }
  }
  void operator()(const Start& m) { put_ref(o, m.ref); }
  void operator()(const StartGranted& m) { put_ref(o, m.ref); }
  void operator()(const StartDenied& m) {
    put_ref(o, m.ref);
    o["reason"] = m.reason;
  }
  void operator()(const Heartbeat& m) {
    o["running"] = refs_json(m.running);
    if (!m.finished.empty()) o["finished"] = refs_json(m.finished);
    if (!m.assigned.empty()) o["assigned"] = refs_json(m.assigned);
    // Never to an older peer (its decoder would refuse the frame).
    if (!m.progress.empty() && version >= progress_version_min) {
      json::array a;
      for (const auto& p : m.progress) {
        json::object item = ref_json(p.ref);
        item["text"] = utf8_tail(p.text, progress_text_bytes_max);
        a.push_back(std::move(item));
      }
      o["progress"] = std::move(a);
    }
  }
  void operator()(const Finish& m) {
    put_ref(o, m.ref);
    o["outcome"] = to_string(m.outcome);
    if (m.exit_code) o["exit_code"] = *m.exit_code;
    // Free text from a task: never let invalid UTF-8 make the frame unsendable.
    if (!m.error.empty()) o["error"] = to_valid_utf8(m.error);
    if (!m.stdout_tail.empty()) o["stdout_tail"] = utf8_tail(m.stdout_tail, output_tail_bytes_max);
    if (!m.stderr_tail.empty()) o["stderr_tail"] = utf8_tail(m.stderr_tail, output_tail_bytes_max);
    o["duration_ms"] = m.duration_ms;
    json::array tasks;
    for (const auto& t : m.tasks)
      tasks.push_back(
          json::object{{"name", t.name}, {"exit_code", t.exit_code}, {"duration_ms", t.duration_ms}, {"ok", t.ok}});
    o["tasks"] = std::move(tasks);
    if (m.stdout_bytes) o["stdout_bytes"] = *m.stdout_bytes;
    if (m.stderr_bytes) o["stderr_bytes"] = *m.stderr_bytes;
  }
  void operator()(const FinishAck& m) { put_ref(o, m.ref); }
  void operator()(const Output& m) {
    put_ref(o, m.ref);
    o["stream"] = m.stream;
    o["offset"] = m.offset;
    o["data"] = m.data;
  }
  void operator()(const Cancel& m) {
    put_ref(o, m.ref);
    o["reason"] = m.reason;
  }
  void operator()(const Drain&) {}
};

}  // namespace

const char* type_name(const Message& m) {
  static const char* names[] = {"hello",      "welcome",       "redirect",     "error",     "assign",
                                "start",      "start_granted", "start_denied", "heartbeat", "finish",
                                "finish_ack", "cancel",        "drain",        "output"};
  static_assert(std::variant_size_v<Message> == 14);
  return names[m.index()];
}

namespace {

/// The frame parsed, if it is a JSON object within the size limit.
std::variant<json::value, DecodeError> parse_frame(std::string_view frame) {
  if (frame.size() > frame_bytes_max)
    return DecodeError{"too_large", "frame of " + std::to_string(frame.size()) + " bytes exceeds the limit of " +
                                        std::to_string(frame_bytes_max)};
  boost::system::error_code ec;
  json::parse_options opts;
  opts.max_depth = 18;  // a message inside a batch is two levels deeper
  json::value v = json::parse(frame, ec, {}, opts);
  if (ec) return DecodeError{"bad_frame", "invalid JSON: " + ec.message()};
  if (!v.is_object()) return DecodeError{"bad_frame", "a frame must be a JSON object"};
  return v;
}

/// The frame's version, if this binary speaks it (else bad_version).
std::variant<int, DecodeError> version_of(const Fields& f) {
  std::int64_t version = f.integer("version", 0, 1000000, std::nullopt);
  if (version < protocol_version_min || version > protocol_version_max)
    return DecodeError{"bad_version",
                       "protocol version " + std::to_string(version) + " is not supported (this binary speaks " +
                           std::to_string(protocol_version_min) + " to " + std::to_string(protocol_version_max) + ")"};
  return static_cast<int>(version);
}

std::variant<Message, DecodeError> message_of(const json::object& o) {
  try {
    Fields f(o, "frame");
    auto version = version_of(f);
    if (auto* err = std::get_if<DecodeError>(&version)) return *err;
    std::string type = f.str("type", true, 64);
    return read_message(type, Fields(o, type), std::get<int>(version));
  } catch (const Invalid& e) {
    return DecodeError{"bad_frame", e.message};
  } catch (const std::exception& e) {
    return DecodeError{"bad_frame", e.what()};
  }
}

bool is_batch(const json::object& o) {
  auto it = o.find("type");
  return it != o.end() && it->value().is_string() && it->value().as_string() == "batch";
}

std::variant<std::vector<Message>, DecodeError> batch_of(const json::object& o) {
  std::vector<Message> out;
  try {
    Fields f(o, "batch");
    auto version = version_of(f);
    if (auto* err = std::get_if<DecodeError>(&version)) return *err;
    if (std::get<int>(version) < batch_version_min)
      f.fail("version", "a batch needs protocol version " + std::to_string(batch_version_min) + " or later, got " +
                            std::to_string(std::get<int>(version)));
    const json::array* messages = f.array("messages", batch_messages_max);
    if (!messages) f.fail("messages", "is required");
    if (messages->empty()) f.fail("messages", "must not be empty");
    out.reserve(messages->size());
    for (std::size_t i = 0; i < messages->size(); ++i) {
      const std::string where = "batch.messages[" + std::to_string(i) + "]";
      const json::value& v = (*messages)[i];
      if (!v.is_object()) return DecodeError{"bad_frame", where + ": must be an object"};
      auto m = message_of(v.as_object());
      if (auto* err = std::get_if<DecodeError>(&m)) return DecodeError{err->code, where + ": " + err->message};
      if (std::holds_alternative<Hello>(std::get<Message>(m)))
        return DecodeError{"bad_frame", where + ": a hello is never batched"};
      out.push_back(std::move(std::get<Message>(m)));
    }
  } catch (const Invalid& e) {
    return DecodeError{"bad_frame", e.message};
  } catch (const std::exception& e) {
    return DecodeError{"bad_frame", e.what()};
  }
  return out;
}

}  // namespace

std::variant<Message, DecodeError> decode(std::string_view frame) {
  auto v = parse_frame(frame);
  if (auto* err = std::get_if<DecodeError>(&v)) return *err;
  return message_of(std::get<json::value>(v).as_object());
}

std::variant<std::vector<Message>, DecodeError> decode_frame(std::string_view frame) {
  auto v = parse_frame(frame);
  if (auto* err = std::get_if<DecodeError>(&v)) return *err;
  const json::object& o = std::get<json::value>(v).as_object();
  if (is_batch(o)) return batch_of(o);
  auto m = message_of(o);
  if (auto* err = std::get_if<DecodeError>(&m)) return *err;
  return std::vector<Message>{std::move(std::get<Message>(m))};
}

std::string next_frame(std::deque<std::string>& queue, int version) {
  // The frames are joined as text: each is already a whole JSON object of
  // this version, so the batch costs no re-encoding.
  std::size_t count = 0, bytes = 0;
  if (version >= batch_version_min)
    for (const auto& f : queue) {
      if (count == batch_messages_max || bytes + f.size() + 1 > batch_bytes_max) break;
      bytes += f.size() + 1;
      count++;
    }
  if (count < 2) {
    std::string front = std::move(queue.front());
    queue.pop_front();
    return front;
  }
  std::string out = R"({"type":"batch","version":)" + std::to_string(version) + R"(,"messages":[)";
  out.reserve(out.size() + bytes + 2);
  for (std::size_t i = 0; i < count; ++i) {
    if (i > 0) out += ',';
    out += queue.front();
    queue.pop_front();
  }
  out += "]}";
  return out;
}

std::variant<std::vector<Task>, DecodeError> decode_tasks(std::string_view json_array) {
  boost::system::error_code ec;
  json::value v = json::parse(json_array, ec);
  if (ec) return DecodeError{"bad_frame", "tasks: invalid JSON: " + ec.message()};
  if (!v.is_array()) return DecodeError{"bad_frame", "tasks: must be an array"};
  if (v.as_array().size() > tasks_per_run_max)
    return DecodeError{"bad_frame", "tasks: more than " + std::to_string(tasks_per_run_max) + " tasks"};
  std::vector<Task> out;
  try {
    for (std::size_t i = 0; i < v.as_array().size(); ++i) {
      const json::value& t = v.as_array()[i];
      std::string where = "tasks[" + std::to_string(i) + "]";
      if (!t.is_object()) return DecodeError{"bad_frame", where + ": must be an object"};
      out.push_back(read_task(Fields(t.as_object(), where)));
    }
  } catch (const Invalid& e) {
    return DecodeError{"bad_frame", e.message};
  }
  return out;
}

std::string encode_tasks(const std::vector<Task>& tasks) {
  json::object o;
  Encoder{o, protocol_version_min}(Assign{AttemptRef{}, tasks, 0});
  return json::serialize(o["tasks"]);
}

std::string encode(const Message& m, int version) {
  json::object o;
  o["type"] = type_name(m);
  o["version"] = version;
  std::visit(Encoder{o, version}, m);
  return json::serialize(o);
}

}  // namespace baton::protocol
