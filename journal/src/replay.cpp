#include "baton/journal/replay.h"

#include <istream>
#include <memory>
#include <ostream>
#include <string>

#include "baton/base/log.h"
#include "codec.h"

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
Result<T> result_of(const json::object& line) {
  if (const auto* ok = line.if_contains("ok")) return json::value_to<T>(*ok);
  return Result<T>(boost::system::in_place_error, json::value_to<Error>(line.at("error")));
}

MonoTime now_of(const json::object& line) { return json::value_to<MonoTime>(line.at("now")); }

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
  auto m = message_of(line.at(key).as_string());
  if (!m) throw std::runtime_error(m.error().message);
  return std::move(*m);
}

}  // namespace

ReplayReport replay(std::istream& in, const ReplayWindow& asked, bool effects, std::ostream& out) {
  ReplayReport report;
  ReplayWindow window = asked;
  std::unique_ptr<lc::RunBook> book;
  std::string node;  // the process name the node logs under
  std::int64_t input_wall = 0;
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
      const json::object line = json::parse(text).as_object();
      const auto kind = line.at("k").as_string();
      if (kind == "window") {  // an export's first line: the window asked for, unless this replay asks its own
        if (!window.from_ms && !window.to_ms) {
          window.from_ms = line.at("from_ms").to_number<std::int64_t>();
          window.to_ms = line.at("to_ms").to_number<std::int64_t>();
        }
        continue;
      }
      if (kind == "gap")
        return fail("the journal lost " + std::to_string(line.at("lost").to_number<std::int64_t>()) +
                    " lines here (the node's disk fell behind its control loop): nothing after it can be replayed");
      const std::int64_t wall = line.at("w").to_number<std::int64_t>();
      const bool shown = (!window.from_ms || wall >= *window.from_ms) && (!window.to_ms || wall <= *window.to_ms);
      if (kind == "book") {
        report.books++;
        book = std::make_unique<lc::RunBook>(
            Epoch{line.at("epoch").to_number<std::int64_t>()}, std::string(line.at("node").as_string()),
            json::value_to<lc::RuntimeConfig>(line.at("cfg")), line.at("seed").to_number<std::uint64_t>(),
            json::value_to<MonoTime>(line.at("started")));
        node = std::string(line.at("node").as_string());
        if (shown) out << "# book epoch=" << line.at("epoch").as_int64() << " node=" << node << "\n";
        continue;
      }
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
        auto m = message_in(line, "hello");
        book->attached(line.at("link").to_number<lc::LinkId>(), std::get<protocol::Hello>(m), now_of(line));
      } else if (kind == "detached")
        book->detached(line.at("link").to_number<lc::LinkId>(), std::string(line.at("worker").as_string()),
                       std::string(line.at("why").as_string()), now_of(line));
      else if (kind == "message")
        book->message(line.at("link").to_number<lc::LinkId>(), std::string(line.at("worker").as_string()),
                      message_in(line, "m"), now_of(line));
      else if (kind == "cancel")
        book->cancel(RunId{line.at("run").to_number<std::int64_t>()}, std::string(line.at("reason").as_string()),
                     now_of(line));
      else if (kind == "dispatch_now")
        book->dispatch_now();
      else if (kind == "inbox_noticed")
        book->inbox_noticed();
      else if (kind == "created")
        book->created(json::value_to<std::vector<store::DueRun>>(line.at("runs")), now_of(line));
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
