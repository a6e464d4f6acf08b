#include "baton/base/log.h"

#include <spdlog/sinks/stdout_sinks.h>

namespace baton {

void init_logging(const std::string& process_name, const std::string& level) {
  auto logger = spdlog::stderr_logger_mt(process_name);
  logger->set_pattern("%Y-%m-%dT%H:%M:%S.%f %^%l%$ [%n] %v");
  logger->set_level(spdlog::level::from_str(level));
  logger->flush_on(spdlog::level::trace);
  spdlog::set_default_logger(logger);
}

}  // namespace baton
