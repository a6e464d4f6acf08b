#include "baton/journal/replay.h"

#include <istream>
#include <memory>
#include <ostream>
#include <string>

#include "baton/base/log.h"
#include "codec.h"
#include "fields.h"

namespace baton::journal {
namespace json = boost::json;
namespace lc = leader_core;

namespace {

/// The level the control loop logs a book's line at (control_loop.cpp).
spdlog::level::level_enum level_of(lc::LogLevel l) {
  switch (l) {
    case lc::LogLevel::debug: return spdlog::level::debug;
    case lc::LogLevel::info: return spdlog::level::info;
    case lc::LogLevel::warn: return spdlog::level::warn;
    case lc::LogLevel::error: return spdlog::level::err;
  }
  return spdlog::level::info;
}

template <class T>
T value_of(const json::value& v) {
  T x{};
  fields::read(v, x);
  return x;
}

template <class T>
Result<T> result_of(const json::object& line) {
  if (const auto* ok = line.if_contains("ok")) return value_of<T>(*ok);
  return Result<T>(boost::system::in_place_error, value_of<Error>(line.at("error")));
}

MonoTime now_of(const json::object& line) { return value_of<MonoTime>(line.at("now")); }

void feed_result(lc::RunBook& book, const json::object& line) {
  const auto type = line.at("type").as_string();
  const auto op = line.at("op").to_number<lc::OpId>();
  const MonoTime now = now_of(line);
  if (type == "active") return book.result(op, result_of<std::vector<store::ActiveRun>>(line), now);
  if (type == "run") return book.result(op, result_of<std::optional<store::RunRow>>(line), now);
  if (type == "due") return book.result(op, result_of<std::vector<store::DueRun>>(line), now);
  if (type == "jobs") return book.result(op, result_of<std::vector<store::ScheduledJob>>(line), now);
  if (type == "write") return book.result(op, result_of<store::WriteResult>(line), now);
  if (type == "batch") return book.result(op, result_of<store::BatchWriteResult>(line), now);
  if (type == "heartbeats") return book.result(op, result_of<store::HeartbeatBatchResult>(line), now);
  if (type == "create") return book.result(op, result_of<store::CreateResult>(line), now);
  if (type == "controls") return book.result(op, result_of<store::Controls>(line), now);
  if (type == "events") return book.result(op, result_of<store::EventsProcessed>(line), now);
  if (type == "submissions") return book.result(op, result_of<store::SubmissionsProcessed>(line), now);
  if (type == "pruned") return book.result(op, result_of<store::Pruned>(line), now);
  throw std::runtime_error("unknown result type " + std::string(type));
}

protocol::Message message_in(const json::object& line, const char* key) {
  return value_of<protocol::Message>(line.at(key));
}

}  // namespace

ReplayReport replay(std::istream& in, const ReplayWindow& asked, bool effects, std::ostream& out) {
  ReplayReport report;
  ReplayWindow window = asked;
  std::unique_ptr<lc::RunBook> book;
  std::string node;  // the process name the node logs under
  std::int64_t input_wall = 0;
  bool skipping = false;  // after a gap, until the next book
  std::string text;
  auto fail = [&](std::string why) {
    report.divergence = std::move(why);
    report.line = report.lines;
    return report;
  };
  while (std::getline(in, text)) {
    report.lines++;
    if (text.empty()) continue;
    try {
      // Texts are copied into the journal as the book saw them.
      json::parse_options bytes_as_they_are;
      bytes_as_they_are.allow_invalid_utf8 = true;
      const json::object line = json::parse(text, {}, bytes_as_they_are).as_object();
      const auto kind = line.at("k").as_string();
      if (kind == "window") {  // an export's first line: the window asked for, unless this replay asks its own
        if (!window.from_ms && !window.to_ms) {
          window.from_ms = line.at("from_ms").to_number<std::int64_t>();
          window.to_ms = line.at("to_ms").to_number<std::int64_t>();
        }
        continue;
      }
      if (kind == "gap") {
        // Lines of this book were lost (the node's disk fell behind its
        // loop, or a write failed): the rest of it cannot be replayed; the
        // next book can.
        report.gaps++;
        book.reset();
        skipping = true;
        if (effects) out << "# gap: the rest of this book was not recorded\n";
        continue;
      }
      const std::int64_t wall = line.at("w").to_number<std::int64_t>();
      const bool shown = (!window.from_ms || wall >= *window.from_ms) && (!window.to_ms || wall <= *window.to_ms);
      if (kind == "book") {
        report.books++;
        skipping = false;
        book = std::make_unique<lc::RunBook>(
            Epoch{line.at("epoch").to_number<std::int64_t>()}, std::string(line.at("node").as_string()),
            json::value_to<lc::RuntimeConfig>(line.at("cfg")), line.at("seed").to_number<std::uint64_t>(),
            MonoTime{std::chrono::nanoseconds{line.at("started").to_number<std::int64_t>()}});
        node = std::string(line.at("node").as_string());
        if (shown) out << "# book epoch=" << line.at("epoch").as_int64() << " node=" << node << "\n";
        continue;
      }
      if (!book && skipping) continue;
      if (!book)
        return fail(
            "the journal begins inside a book: its first line is not a book's header (an export whose "
            "epoch began before the oldest file the ring kept)");
      if (shown && effects) out << "> " << text << "\n";
      if (kind == "effects") {
        auto taken = book->take_effects();
        const auto n = line.at("n").to_number<std::size_t>();
        const std::string digest = effects_digest(taken);
        report.batches++;
        report.effects += static_cast<std::int64_t>(taken.size());
        if (taken.size() != n || digest != line.at("digest").as_string()) {
          std::string why = "effects differ: recorded " + std::to_string(n) + " with digest " +
                            std::string(line.at("digest").as_string()) + ", replayed " + std::to_string(taken.size()) +
                            " with digest " + digest + ":";
          for (const auto& e : taken) why += "\n  " + json::serialize(effect_json(e));
          return fail(std::move(why));
        }
        if (!shown) continue;
        for (const auto& e : taken) {
          if (const auto* log = std::get_if<lc::Log>(&e)) {
            // As the node's log has it (text format), stamped with the
            // wall clock of the input that made it.
            out << format_log_line(LogFormat::text, node, level_of(log->level),
                                   std::chrono::system_clock::time_point{std::chrono::milliseconds{input_wall}},
                                   log->text)
                << "\n";
            report.shown++;
          } else if (effects) {
            out << "  " << json::serialize(effect_json(e)) << "\n";
            report.shown++;
          }
        }
        continue;
      }
      report.inputs++;
      input_wall = wall;
      if (kind == "start")
        book->start(now_of(line));
      else if (kind == "attached") {
        book->attached(line.at("link").to_number<lc::LinkId>(), value_of<protocol::Hello>(line.at("hello")),
                       now_of(line));
      } else if (kind == "detached")
        book->detached(line.at("link").to_number<lc::LinkId>(), std::string(line.at("worker").as_string()),
                       std::string(line.at("why").as_string()), now_of(line));
      else if (kind == "message")
        book->message(line.at("link").to_number<lc::LinkId>(), std::string(line.at("worker").as_string()),
                      message_in(line, "m"), now_of(line));
      else if (kind == "cancel")
        book->cancel(value_of<RunId>(line.at("run")), std::string(line.at("reason").as_string()), now_of(line));
      else if (kind == "recheck")
        book->recheck(value_of<std::vector<RunId>>(line.at("runs")), std::string(line.at("invariant").as_string()),
                      now_of(line));
      else if (kind == "dispatch_now")
        book->dispatch_now();
      else if (kind == "inbox_noticed")
        book->inbox_noticed();
      else if (kind == "created")
        book->created(value_of<std::vector<store::DueRun>>(line.at("runs")), now_of(line));
      else if (kind == "tick")
        book->tick(now_of(line));
      else if (kind == "result")
        feed_result(*book, line);
      else
        return fail("unknown line kind \"" + std::string(kind) + "\"");
    } catch (const std::exception& e) {
      return fail(std::string("a line that does not parse as a journal entry: ") + e.what());
    }
  }
  return report;
}

}  // namespace baton::journal
