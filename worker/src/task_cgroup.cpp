#include "baton/worker/task_cgroup.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

namespace baton::worker {

namespace fs = std::filesystem;

namespace {

/// The mount point of the cgroup v2 hierarchy, from /proc/self/mountinfo.
std::string cgroup2_mount() {
  std::ifstream in("/proc/self/mountinfo");
  std::string line;
  while (std::getline(in, line)) {
    // "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER"
    auto dash = line.find(" - ");
    if (dash == std::string::npos) continue;
    std::istringstream tail(line.substr(dash + 3));
    std::string fstype;
    tail >> fstype;
    if (fstype != "cgroup2") continue;
    std::istringstream head(line.substr(0, dash));
    std::string id, parent, dev, root, mount;
    head >> id >> parent >> dev >> root >> mount;
    return mount;
  }
  return {};
}

/// This process's group in the v2 hierarchy ("0::/path" in /proc/self/cgroup).
std::string own_cgroup() {
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("0::", 0) == 0) return line.substr(3);
  return {};
}

bool write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  out.flush();
  return static_cast<bool>(out);
}

std::vector<pid_t> members(const std::string& dir) {
  std::vector<pid_t> out;
  std::ifstream in(dir + "/cgroup.procs");
  long pid = 0;
  while (in >> pid)
    if (pid > 0) out.push_back(static_cast<pid_t>(pid));
  return out;
}

bool populated(const std::string& dir) {
  std::ifstream in(dir + "/cgroup.events");
  std::string key;
  int value = 0;
  while (in >> key >> value)
    if (key == "populated") return value != 0;
  return !members(dir).empty();  // no cgroup.events: ask for the members
}

}  // namespace

CgroupOutlook cgroup_outlook(const std::string& setting) {
  CgroupOutlook out;
  if (setting == "off") {
    out.why = "task_cgroup is off";
    return out;
  }
  // Where the controllers a group could enable for its children are
  // listed: the base's own cgroup.controllers, or (not made yet) the
  // group above it, whose children the base would be among.
  std::string offered_at;
  if (setting.empty() || setting == "auto") {
    const std::string mount = cgroup2_mount();
    if (mount.empty()) {
      out.why = "no cgroup2 file system is mounted";
      return out;
    }
    std::string own = own_cgroup();
    if (own.empty()) {
      out.why = "this process has no cgroup v2 group (/proc/self/cgroup)";
      return out;
    }
    if (own == "/") own.clear();
    out.base = mount + own + "/baton-tasks";
    offered_at = mount + own;
  } else {
    out.base = setting;
    offered_at = fs::path(setting).parent_path().string();
  }
  std::error_code ec;
  if (fs::exists(out.base + "/cgroup.controllers", ec)) offered_at = out.base;
  if (!fs::exists(offered_at + "/cgroup.controllers", ec) && !fs::exists(offered_at + "/cgroup.procs", ec)) {
    out.why = "'" + offered_at + "' is not a cgroup v2 directory";
    out.base.clear();
    return out;
  }
  std::ifstream in(offered_at + "/cgroup.controllers");
  std::string controller;
  while (in >> controller) {
    out.memory = out.memory || controller == "memory";
    out.pids = out.pids || controller == "pids";
    out.cpu = out.cpu || controller == "cpu";
  }
  return out;
}

TaskCgroups::TaskCgroups(const std::string& setting, std::string records_dir) : records_dir_(std::move(records_dir)) {
  if (setting == "off") {
    why_ = "task_cgroup is off";
    return;
  }
  std::string base = setting;
  if (setting.empty() || setting == "auto") {
    const std::string mount = cgroup2_mount();
    if (mount.empty()) {
      why_ = "no cgroup2 file system is mounted";
      return;
    }
    std::string own = own_cgroup();
    if (own.empty()) {
      why_ = "this process has no cgroup v2 group (/proc/self/cgroup)";
      return;
    }
    if (own == "/") own.clear();
    // A previous start of this process image moved itself into the leaf
    // below (a restart from inside it): the group is the leaf's parent.
    if (own.size() > 13 && own.compare(own.size() - 13, 13, "/baton-worker") == 0) own.resize(own.size() - 13);
    base = mount + own + "/baton-tasks";
    // Task limits need the memory, pids and cpu controllers enabled in this
    // group's subtree, which cgroup v2 allows only while the group itself
    // holds no process ("no internal processes"): below the root, the
    // worker moves into a leaf of its own first (what systemd asks of a
    // service with Delegate=yes). Failing that, the limits fall back to
    // per-process ones (task_runner.cpp).
    if (!own.empty()) {
      const std::string leaf = mount + own + "/baton-worker";
      if ((::mkdir(leaf.c_str(), 0755) == 0 || errno == EEXIST) && write_file(leaf + "/cgroup.procs", "0"))
        for (const char* controller : {"+memory", "+pids", "+cpu"})
          (void)write_file(mount + own + "/cgroup.subtree_control", controller);
    }
  }
  std::error_code ec;
  fs::create_directories(base, ec);
  if (ec || !fs::exists(base + "/cgroup.procs")) {
    why_ = "cannot use '" + base + "' as a cgroup v2 directory: " + (ec ? ec.message() : "no cgroup.procs in it");
    return;
  }
  // A probe group: creating and removing one proves the hierarchy is
  // writable here (a read-only or delegated-elsewhere mount is not).
  const std::string probe = base + "/probe-" + std::to_string(::getpid());
  if (::mkdir(probe.c_str(), 0755) != 0 && errno != EEXIST) {
    why_ = "cannot create a group in '" + base + "': " + std::strerror(errno);
    return;
  }
  ::rmdir(probe.c_str());
  // Task limits (`resources`) need the memory, pids and cpu controllers in
  // the groups: enabled below the base where the hierarchy offers them to
  // it (each on its own: one missing must not cost the others).
  for (const char* controller : {"+memory", "+pids", "+cpu"})
    (void)write_file(base + "/cgroup.subtree_control", controller);
  base_ = base;
}

TaskCgroups::Limits TaskCgroups::limit(const Group& g, std::int64_t memory_bytes, std::int64_t pids,
                                       std::int64_t cpu_millis) {
  Limits in_force;
  if (g.name.empty()) return in_force;
  if (memory_bytes > 0) in_force.memory = write_file(g.dir + "/memory.max", std::to_string(memory_bytes));
  if (pids > 0) in_force.pids = write_file(g.dir + "/pids.max", std::to_string(pids));
  // cpu.max is "QUOTA PERIOD" in microseconds: thousandths of a CPU times
  // 100 per 100 ms period.
  if (cpu_millis > 0) in_force.cpu = write_file(g.dir + "/cpu.max", std::to_string(cpu_millis * 100) + " 100000");
  return in_force;
}

TaskCgroups::Group TaskCgroups::create(std::string* why) const {
  if (!available()) {
    if (why) *why = why_;
    return {};
  }
  Group g;
  g.name = "w" + std::to_string(::getpid()) + "-" + std::to_string(next_.fetch_add(1));
  g.dir = base_ + "/" + g.name;
  std::error_code ec;
  fs::create_directories(records_dir_, ec);
  // Recorded before the group exists: a worker killed at any point after
  // this line leaves a record its next incarnation acts on.
  const std::string record = records_dir_ + "/cg-" + g.name;
  {
    std::ofstream out(record);
    out << g.dir << '\n';
    out.flush();
    if (!out) {
      if (why) *why = "cannot write '" + record + "'";
      return {};
    }
  }
  if (::mkdir(g.dir.c_str(), 0755) != 0 && errno != EEXIST) {
    if (why) *why = "cannot create '" + g.dir + "': " + std::strerror(errno);
    fs::remove(record, ec);
    return {};
  }
  return g;
}

bool TaskCgroups::kill_and_remove(const Group& g, std::chrono::milliseconds grace) const {
  if (g.name.empty()) return true;
  std::error_code ec;
  const std::string record = records_dir_ + "/cg-" + g.name;
  if (!fs::exists(g.dir, ec)) {
    fs::remove(record, ec);
    return true;
  }
  // cgroup.kill (Linux 5.14+) kills every member at once, including ones
  // forking while it runs; without it, SIGKILL each member until none is
  // left.
  const bool has_kill = fs::exists(g.dir + "/cgroup.kill", ec);
  const auto step = std::chrono::milliseconds(5);
  for (std::int64_t steps = grace / step + 1; steps > 0; --steps) {
    if (!populated(g.dir)) break;
    if (!has_kill || !write_file(g.dir + "/cgroup.kill", "1"))
      for (pid_t pid : members(g.dir)) ::kill(pid, SIGKILL);
    std::this_thread::sleep_for(step);
  }
  if (populated(g.dir)) return false;
  // An emptied group can still be briefly busy while the kernel finishes
  // tearing down its last member: retry the removal a few times.
  for (int i = 0; i < 200 && ::rmdir(g.dir.c_str()) != 0 && errno == EBUSY; ++i) std::this_thread::sleep_for(step);
  fs::remove(record, ec);
  return true;
}

int TaskCgroups::kill_leftovers(std::chrono::milliseconds grace) const {
  std::error_code ec;
  int held = 0;
  for (const auto& entry : fs::directory_iterator(records_dir_, ec)) {
    const std::string file = entry.path().filename().string();
    if (file.rfind("cg-", 0) != 0) continue;
    Group g;
    g.name = file.substr(3);
    std::ifstream(entry.path()) >> g.dir;
    // Only a directory under a cgroup2 mount named like ours is touched: a
    // damaged record must not make us write into an arbitrary path.
    if (g.dir.empty() || fs::path(g.dir).filename() != g.name || !fs::exists(g.dir + "/cgroup.procs", ec)) {
      fs::remove(entry.path(), ec);
      continue;
    }
    if (populated(g.dir)) ++held;
    kill_and_remove(g, grace);
  }
  return held;
}

}  // namespace baton::worker
