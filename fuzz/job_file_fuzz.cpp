// libFuzzer target: a job definition as the API takes it (a YAML or JSON
// document: PUT /api/v1/jobs/{name}, ctl apply), parsed and validated.
#include <cstddef>
#include <cstdint>
#include <string>

#include "baton/admin/job_files.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto job = baton::admin::parse_job_document(text, "fuzz");
  if (job) (void)baton::admin::job_changes(*job, *job);
  return 0;
}
