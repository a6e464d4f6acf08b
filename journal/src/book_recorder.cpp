#include "baton/journal/book_recorder.h"

#include <utility>

#include "codec.h"

namespace baton::journal {
namespace json = boost::json;
namespace lc = leader_core;

BookRecorder::BookRecorder(const BookHeader& header, std::function<std::int64_t()> wall_ms, LineSink& sink)
    : wall_ms_(std::move(wall_ms)), sink_(sink) {
  emit("book",
       json::object{{"epoch", header.epoch.value},
                    {"node", header.node_id},
                    {"seed", header.seed},
                    {"started", json::value_from(header.started)},
                    {"cfg", json::value_from(header.cfg)}},
       nullptr);
}

void BookRecorder::emit(const char* kind, json::object&& line, const MonoTime* now) {
  // "k" and "w" first: the ring finds a line's time without parsing it.
  std::string text = "{\"k\":\"";
  text += kind;
  text += "\",\"w\":";
  text += std::to_string(wall_ms_());
  if (now) {
    text += ",\"now\":";
    text += std::to_string(now->since_start.count());
  }
  if (!line.empty()) {
    text += ',';
    const std::string rest = json::serialize(line);
    text.append(rest, 1, rest.size() - 1);  // without its '{'
  } else {
    text += '}';
  }
  sink_.line(std::move(text));
}

void BookRecorder::start(MonoTime now) { emit("start", {}, &now); }
void BookRecorder::attached(lc::LinkId link, const protocol::Hello& hello, MonoTime now) {
  emit("attached", {{"link", link}, {"hello", message_text(protocol::Message{hello})}}, &now);
}
void BookRecorder::detached(lc::LinkId link, const std::string& worker, const std::string& why, MonoTime now) {
  emit("detached", {{"link", link}, {"worker", worker}, {"why", why}}, &now);
}
void BookRecorder::message(lc::LinkId link, const std::string& worker, const protocol::Message& m, MonoTime now) {
  emit("message", {{"link", link}, {"worker", worker}, {"m", message_text(m)}}, &now);
}
void BookRecorder::cancel(RunId run, const std::string& reason, MonoTime now) {
  emit("cancel", {{"run", run.value}, {"reason", reason}}, &now);
}
void BookRecorder::dispatch_now() { emit("dispatch_now", {}, nullptr); }
void BookRecorder::inbox_noticed() { emit("inbox_noticed", {}, nullptr); }
void BookRecorder::created(const std::vector<store::DueRun>& runs, MonoTime now) {
  emit("created", {{"runs", json::value_from(runs)}}, &now);
}
void BookRecorder::tick(MonoTime now) { emit("tick", {}, &now); }

template <class T>
void BookRecorder::record_result(const char* type, lc::OpId op, const Result<T>& r, MonoTime now) {
  json::object line{{"type", type}, {"op", op}};
  if (r)
    line["ok"] = json::value_from(*r);
  else
    line["error"] = json::value_from(r.error());
  emit("result", std::move(line), &now);
}

void BookRecorder::result(lc::OpId op, const Result<std::vector<store::ActiveRun>>& r, MonoTime now) {
  record_result("active", op, r, now);
}
void BookRecorder::result(lc::OpId op, const Result<std::optional<store::RunRow>>& r, MonoTime now) {
  record_result("run", op, r, now);
}
void BookRecorder::result(lc::OpId op, const Result<std::vector<store::DueRun>>& r, MonoTime now) {
  record_result("due", op, r, now);
}
void BookRecorder::result(lc::OpId op, const Result<std::vector<store::ScheduledJob>>& r, MonoTime now) {
  record_result("jobs", op, r, now);
}
void BookRecorder::result(lc::OpId op, const Result<store::WriteResult>& r, MonoTime now) {
  record_result("write", op, r, now);
}
void BookRecorder::result(lc::OpId op, const Result<store::BatchWriteResult>& r, MonoTime now) {
  record_result("batch", op, r, now);
}
void BookRecorder::result(lc::OpId op, const Result<store::HeartbeatBatchResult>& r, MonoTime now) {
  record_result("heartbeats", op, r, now);
}
void BookRecorder::result(lc::OpId op, const Result<store::CreateResult>& r, MonoTime now) {
  record_result("create", op, r, now);
}
void BookRecorder::result(lc::OpId op, const Result<store::Controls>& r, MonoTime now) {
  record_result("controls", op, r, now);
}
void BookRecorder::result(lc::OpId op, const Result<store::EventsProcessed>& r, MonoTime now) {
  record_result("events", op, r, now);
}
void BookRecorder::result(lc::OpId op, const Result<store::SubmissionsProcessed>& r, MonoTime now) {
  record_result("submissions", op, r, now);
}
void BookRecorder::result(lc::OpId op, const Result<store::Pruned>& r, MonoTime now) {
  record_result("pruned", op, r, now);
}

void BookRecorder::effects_taken(const std::vector<lc::Effect>& effects) {
  emit("effects", {{"n", effects.size()}, {"digest", effects_digest(effects)}}, nullptr);
}

}  // namespace baton::journal
