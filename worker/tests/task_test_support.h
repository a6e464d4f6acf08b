#pragma once
// What the task runner's tests build: tasks of each kind and an attempt's
// context.
#include <chrono>
#include <string>
#include <vector>

#include "baton/protocol/vocabulary.h"
#include "baton/worker/task_runner.h"

namespace baton::worker::testing {

inline protocol::Task program(std::vector<std::string> argv) {
  protocol::Task t;
  t.kind = protocol::TaskKind::program;
  t.command = std::move(argv);
  return t;
}

inline protocol::Task builtin(const std::string& b, const std::string& arg = "") {
  protocol::Task t;
  t.kind = protocol::TaskKind::builtin;
  t.builtin = protocol::parse_builtin(b).value();
  t.argument = arg;
  return t;
}

inline AttemptContext ctx(std::chrono::milliseconds timeout = std::chrono::milliseconds{0}) {
  AttemptContext c;
  c.ref = {77, 2, "11111111-2222-4333-8444-555555555555"};
  c.timeout = timeout;
  return c;
}

}  // namespace baton::worker::testing
