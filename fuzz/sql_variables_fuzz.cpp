// libFuzzer target: an SQL task's text with :NAME, :'NAME' and :"NAME"
// variables, scanned and interpolated with parameters (the worker's
// sql_variables, before the statement reaches the database). The input's
// first line names the parameters' values.
#include <cstddef>
#include <cstdint>
#include <string>

#include "baton/worker_core/sql_variables.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  const auto newline = input.find('\n');
  const std::string value = newline == std::string::npos ? "" : input.substr(0, newline);
  const std::string sql = newline == std::string::npos ? input : input.substr(newline + 1);
  baton::worker_core::Parameters params{{"a", value}, {"name", value}, {"x", "it's"}, {"id", "42"}};
  (void)baton::worker_core::interpolate_sql_variables(sql, params);
  (void)baton::worker_core::sql_literal(value);
  (void)baton::worker_core::sql_identifier(value);
  return 0;
}
