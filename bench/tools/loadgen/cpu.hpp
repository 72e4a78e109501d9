// CPU time of other processes (a proxy, the upstream), read from /proc, so a
// run can report CPU microseconds per request: a figure that stays meaningful
// when the load generator, proxy and upstream share a few cores.
#pragma once

#include <sys/resource.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace loadgen {

struct ProcStat {
  int ppid = 0;
  bool ok = false;
};

inline ProcStat read_proc_stat(int pid) {
  ProcStat st;
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(in, line)) return st;
  // The command name may hold spaces and parentheses: fields start after the last ')'.
  const auto close = line.rfind(')');
  if (close == std::string::npos) return st;
  std::istringstream fields(line.substr(close + 2));
  std::vector<std::string> f;
  for (std::string s; fields >> s;) f.push_back(s);
  // f[0] is field 3 (state): ppid is field 4.
  if (f.size() < 2) return st;
  st.ppid = std::stoi(f[1]);
  st.ok = true;
  return st;
}

// A process and its direct children (nginx's master and workers).
inline std::vector<int> with_children(int pid) {
  std::vector<int> pids{pid};
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const auto name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    const int child = std::stoi(name);
    if (auto st = read_proc_stat(child); st.ok && st.ppid == pid) pids.push_back(child);
  }
  return pids;
}

// Nanoseconds a process's threads have run, from /proc/PID/task/*/schedstat
// (the scheduler's own count: /proc/PID/stat's clock ticks are 10 ms steps,
// a few per cent of a 2 s window at a fixed rate). 0 if unreadable.
inline uint64_t run_ns(int pid) {
  uint64_t ns = 0;
  std::error_code ec;
  for (const auto& task : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec)) {
    std::ifstream in(task.path() / "schedstat");
    uint64_t v = 0;
    if (in >> v) ns += v;
  }
  return ns;
}

// Summed CPU seconds of a group of processes. A thread that exits inside the
// window takes its time with it; the proxies' threads live for the whole run.
struct CpuWatch {
  std::string name;
  std::vector<int> pids;
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;

  uint64_t now_ns() const {
    uint64_t t = 0;
    for (int p : pids) t += run_ns(p);
    return t;
  }
  double seconds() const { return static_cast<double>(end_ns - start_ns) / 1e9; }
};

inline double self_cpu_seconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  auto tv = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; };
  return tv(ru.ru_utime) + tv(ru.ru_stime);
}

}  // namespace loadgen
