#pragma once
// The log archive: every byte an attempt's tasks printed, in files under the
// node's log_archive_dir (docs/scheduling.md, "Output and the log archive").
// The database keeps the first output_db_bytes of each stream for the API
// and the dashboard; the archive keeps all of it, for its own retention,
// whether or not the run's row has been pruned.
//
// The leader writes what workers stream (ControlLoop); any node reads
// (GET /api/v1/runs/{id}/output) and sweeps its own directory. Text lands at
// its offset in the stream (leader_core/output_archive_path.h names the
// file), so a chunk written twice -- resent after a reconnect, or by two
// leaders sharing the directory -- writes the same bytes to the same place,
// and an archive on storage shared by every node is complete across
// failovers. A node with a directory of its own holds what it received
// while it led.
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "baton/base/result.h"
#include "baton/store/leader_store.h"

namespace baton::archive {

class LogArchive {
 public:
  explicit LogArchive(std::string dir) : dir_(std::move(dir)) {}
  const std::string& dir() const { return dir_; }

  /// Writes every chunk at its offset. The first failure is returned (the
  /// rest are still tried): a full disk costs output, never dispatch.
  Result<void> write(const std::vector<store::OutputChunk>& chunks) const;

  struct Stream {
    int attempt = 0;
    std::string stream;
    std::int64_t size = 0;
  };
  /// The streams this archive holds of a run, by attempt then name.
  std::vector<Stream> streams(std::int64_t run_id) const;

  struct Slice {
    std::int64_t offset = 0;
    std::string data;
    std::int64_t size = 0;  ///< the stream's length in this archive
  };
  /// At most `limit` bytes of a stream from `offset`, cut back to a
  /// character boundary (the next read starts there). nullopt: this archive
  /// does not hold the stream.
  std::optional<Slice> read(std::int64_t run_id, int attempt, std::string_view stream, std::int64_t offset,
                            std::size_t limit) const;

  /// Removes the directories of runs whose newest file is older than
  /// `retention`; returns how many. Never touches anything else.
  int sweep(std::chrono::system_clock::duration retention) const;

 private:
  std::string dir_;
};

}  // namespace baton::archive
