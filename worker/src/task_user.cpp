#include "baton/worker/task_user.h"

#include <grp.h>
#include <linux/capability.h>
#include <pwd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace baton::worker {

std::optional<TaskUser> resolve_task_user(const std::string& name, std::string* why) {
  auto fail = [&](std::string w) -> std::optional<TaskUser> {
    if (why) *why = std::move(w);
    return std::nullopt;
  };
  if (name.empty()) return fail("is empty");
  std::vector<char> buf(16384);
  passwd pw{};
  passwd* found = nullptr;
  const int rc = ::getpwnam_r(name.c_str(), &pw, buf.data(), buf.size(), &found);
  if (rc != 0) return fail("cannot look up user '" + name + "': " + std::strerror(rc));
  if (!found) return fail("no user named '" + name + "' on this host");
  if (pw.pw_uid == 0) return fail("'" + name + "' is root: tasks would hold every right the worker has and more");
  if (pw.pw_uid == ::geteuid())
    return fail("'" + name + "' is the user the worker runs as: tasks could read its credential and spool");
  TaskUser u;
  u.name = name;
  u.uid = pw.pw_uid;
  u.gid = pw.pw_gid;
  u.home = pw.pw_dir ? pw.pw_dir : "/";
  int count = 64;
  for (int tries = 0; tries < 4; ++tries) {
    u.groups.assign(static_cast<std::size_t>(count), 0);
    int n = count;
    if (::getgrouplist(name.c_str(), u.gid, u.groups.data(), &n) >= 0) {
      u.groups.resize(static_cast<std::size_t>(n));
      break;
    }
    count = n > count ? n : count * 2;
  }
  for (gid_t g : u.groups)
    if (g == 0) return fail("'" + name + "' is in the root group (gid 0): tasks would read what that group may");
  return u;
}

std::string task_user_switch_problem() {
  if (::geteuid() == 0) return {};
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
  if (::syscall(SYS_capget, &header, data) != 0)
    return std::string("cannot read capabilities: ") + std::strerror(errno);
  auto has = [&](int cap) { return (data[cap / 32].effective & (1u << (cap % 32))) != 0; };
  if (has(CAP_SETUID) && has(CAP_SETGID) && has(CAP_KILL)) return {};
  return "the worker runs as uid " + std::to_string(::geteuid()) +
         " without CAP_SETUID, CAP_SETGID and CAP_KILL: run it as root, or give it those capabilities "
         "(AmbientCapabilities= in its systemd unit)";
}

std::string capabilities_without_task_user_problem(uid_t euid, unsigned long long held) {
  if (euid == 0) return {};  // root runs its tasks as root by choice: docs/security.md
  std::string names;
  for (auto [cap, name] : {std::pair{CAP_SETUID, "CAP_SETUID"}, {CAP_SETGID, "CAP_SETGID"}, {CAP_KILL, "CAP_KILL"}})
    if (held & (1ull << cap)) names += (names.empty() ? "" : ", ") + std::string(name);
  if (names.empty()) return {};
  return "is not set, but the worker (uid " + std::to_string(euid) + ") holds " + names +
         " (its unit's AmbientCapabilities=): set task_user to the user its tasks run as (the package makes "
         "baton-task), or remove those capabilities from the unit";
}

std::string capabilities_without_task_user_problem() {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
  if (::syscall(SYS_capget, &header, data) != 0) return {};
  unsigned long long held = 0;
  for (int i = 0; i < _LINUX_CAPABILITY_U32S_3; ++i)
    held |= static_cast<unsigned long long>(data[i].effective | data[i].permitted | data[i].inheritable) << (32 * i);
  return capabilities_without_task_user_problem(::geteuid(), held);
}

}  // namespace baton::worker
