#pragma once
// One cgroup v2 group per PROGRAM task, so that nothing of a task outlives
// its attempt even when its supervisor (task_supervisor.h) is gone.
//
// The supervisor kills the task's whole tree, but it is a process like any
// other: `kill -9` of it, or the OOM killer, re-parents the task's detached
// descendants (double fork, setsid) to init, where no process walk of ours
// can tell them from anything else. A cgroup holds every descendant however
// it detaches, and `cgroup.kill` kills them all at once. So the supervisor
// moves itself into a fresh group before it forks the task, and the worker
// empties and removes the group once the supervisor has exited, before it
// reports the attempt's finish: a finish (and so any retry) never precedes
// the death of the tree.
//
// Each group is recorded in the worker's spool (`trees/cg-NAME`, holding the
// group's directory) before anything runs in it, so that a new incarnation
// of the worker kills the groups the old one left (worker killed, and its
// supervisors with it) before it attaches.
//
// Where no writable cgroup v2 hierarchy exists (or `task_cgroup: off`),
// groups are not used and the supervisor alone contains the tree; the agent
// logs why at start (docs/operations.md).
#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

namespace baton::worker {

class TaskCgroups {
 public:
  struct Group {
    std::string name;  ///< empty: no group (unavailable, or creating it failed)
    std::string dir;
  };

  /// `setting` is "off", "auto" (a `baton-tasks` directory in the cgroup v2
  /// hierarchy this process belongs to) or a directory inside a cgroup v2
  /// mount; `records_dir` is where groups are recorded (the spool's trees/).
  TaskCgroups(const std::string& setting, std::string records_dir);

  bool available() const { return !base_.empty(); }
  /// The parent directory of the groups, or why there are none.
  const std::string& base() const { return base_; }
  const std::string& unavailable_reason() const { return why_; }

  /// Creates and records a fresh group. Thread-safe. An empty Group if
  /// groups are unavailable or the directory could not be made.
  Group create(std::string* why = nullptr) const;
  /// The path a process writes "0" to in order to join `g` (its
  /// cgroup.procs).
  static std::string procs_file(const Group& g) { return g.dir + "/cgroup.procs"; }
  /// Writes the limits that are not 0 to the group's memory.max, pids.max
  /// and cpu.max (period 100 ms), before anything joins it. Each field of
  /// the result says whether that limit is now in force; a controller the
  /// hierarchy does not delegate here leaves its field false, and the
  /// runner falls back to a per-process limit (task_runner.cpp).
  struct Limits {
    bool memory = false, pids = false, cpu = false;
  };
  static Limits limit(const Group& g, std::int64_t memory_bytes, std::int64_t pids, std::int64_t cpu_millis);
  /// Kills everything left in the group (cgroup.kill, or SIGKILL of each
  /// member where the kernel has no cgroup.kill), waits up to `grace` for it
  /// to empty, removes it and its record. Returns true if it emptied; a
  /// group that did not keeps its record, so the next incarnation retries.
  bool kill_and_remove(const Group& g, std::chrono::milliseconds grace) const;
  /// Kills and removes every group recorded by a previous incarnation.
  /// Returns how many still held processes.
  int kill_leftovers(std::chrono::milliseconds grace) const;

 private:
  std::string records_dir_;
  std::string base_;
  std::string why_;
  mutable std::atomic<unsigned> next_{0};
};

/// What a worker started with `setting` (task_cgroup) would find on this
/// host, read without changing anything (`baton doctor`): where its task
/// groups would go, and which of the memory, pids and cpu controllers the
/// hierarchy offers there; or why there would be no groups.
struct CgroupOutlook {
  std::string base;  ///< empty: no groups
  std::string why;   ///< why not, when base is empty
  bool memory = false, pids = false, cpu = false;
};
CgroupOutlook cgroup_outlook(const std::string& setting);

}  // namespace baton::worker
