#include "baton/journal/book_recorder.h"

#include <utility>

#include "codec.h"
#include "fields.h"

namespace baton::journal {
namespace json = boost::json;
namespace lc = leader_core;

namespace {

/// One line being written: {"k": kind, "w": wall ms[, "now": ns], ...}.
/// "k" and "w" come first: the ring finds a line's time without parsing it.
class Line {
 public:
  Line(const char* kind, std::int64_t wall_ms, const MonoTime* now) {
    text_.reserve(256);
    text_ += "{\"k\":\"";
    text_ += kind;
    text_ += "\",\"w\":";
    fields::write(text_, wall_ms);
    if (now) {
      text_ += ",\"now\":";
      fields::write(text_, now->since_start.count());
    }
  }
  template <class T>
  Line& add(const char* key, const T& v) {
    text_ += ",\"";
    text_ += key;
    text_ += "\":";
    fields::write(text_, v);
    return *this;
  }
  /// A value already JSON.
  Line& raw(const char* key, const std::string& json_text) {
    text_ += ",\"";
    text_ += key;
    text_ += "\":";
    text_ += json_text;
    return *this;
  }
  std::string done() {
    text_ += '}';
    return std::move(text_);
  }

 private:
  std::string text_;
};

}  // namespace

BookRecorder::BookRecorder(const BookHeader& header, std::function<std::int64_t()> wall_ms, LineSink& sink)
    : wall_ms_(std::move(wall_ms)), sink_(sink) {
  // Once a book, by name: what it was made with, readable.
  sink_.line(Line("book", wall_ms_(), nullptr)
                 .add("epoch", header.epoch.value)
                 .add("node", header.node_id)
                 .add("seed", header.seed)
                 .add("started", header.started.since_start.count())
                 .raw("cfg", json::serialize(json::value_from(header.cfg)))
                 .done());
}

void BookRecorder::start(MonoTime now) { sink_.line(Line("start", wall_ms_(), &now).done()); }
void BookRecorder::attached(lc::LinkId link, const protocol::Hello& hello, MonoTime now) {
  // Never its token: a secret, and the book does not read it.
  protocol::Hello without = hello;
  without.token.clear();
  sink_.line(Line("attached", wall_ms_(), &now).add("link", link).add("hello", without).done());
}
void BookRecorder::detached(lc::LinkId link, const std::string& worker, const std::string& why, MonoTime now) {
  sink_.line(Line("detached", wall_ms_(), &now).add("link", link).add("worker", worker).add("why", why).done());
}
void BookRecorder::message(lc::LinkId link, const std::string& worker, const protocol::Message& m, MonoTime now) {
  sink_.line(Line("message", wall_ms_(), &now).add("link", link).add("worker", worker).add("m", m).done());
}
void BookRecorder::cancel(RunId run, const std::string& reason, MonoTime now) {
  sink_.line(Line("cancel", wall_ms_(), &now).add("run", run).add("reason", reason).done());
}
void BookRecorder::recheck(const std::vector<RunId>& runs, const std::string& invariant, MonoTime now) {
  sink_.line(Line("recheck", wall_ms_(), &now).add("runs", runs).add("invariant", invariant).done());
}
void BookRecorder::dispatch_now() { sink_.line(Line("dispatch_now", wall_ms_(), nullptr).done()); }
void BookRecorder::inbox_noticed() { sink_.line(Line("inbox_noticed", wall_ms_(), nullptr).done()); }
void BookRecorder::created(const std::vector<store::DueRun>& runs, MonoTime now) {
  sink_.line(Line("created", wall_ms_(), &now).add("runs", runs).done());
}
void BookRecorder::tick(MonoTime now) { sink_.line(Line("tick", wall_ms_(), &now).done()); }

template <class T>
void BookRecorder::record_result(const char* type, lc::OpId op, const Result<T>& r, MonoTime now) {
  Line line("result", wall_ms_(), &now);
  line.add("type", std::string(type)).add("op", op);
  if (r)
    line.add("ok", *r);
  else
    line.add("error", r.error());
  sink_.line(line.done());
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
  sink_.line(
      Line("effects", wall_ms_(), nullptr).add("n", effects.size()).add("digest", effects_digest(effects)).done());
}

}  // namespace baton::journal
