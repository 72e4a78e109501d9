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
  uint64_t cpu_ticks = 0;  // utime + stime, all threads
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
  // f[0] is field 3 (state): ppid is field 4, utime 14, stime 15.
  if (f.size() < 13) return st;
  st.ppid = std::stoi(f[1]);
  st.cpu_ticks = std::stoull(f[11]) + std::stoull(f[12]);
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

// Summed CPU seconds of a group of processes.
struct CpuWatch {
  std::string name;
  std::vector<int> pids;
  uint64_t start_ticks = 0;
  uint64_t end_ticks = 0;

  uint64_t ticks() const {
    uint64_t t = 0;
    for (int p : pids) t += read_proc_stat(p).cpu_ticks;
    return t;
  }
  double seconds() const {
    return static_cast<double>(end_ticks - start_ticks) / static_cast<double>(sysconf(_SC_CLK_TCK));
  }
};

inline double self_cpu_seconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  auto tv = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; };
  return tv(ru.ru_utime) + tv(ru.ru_stime);
}

}  // namespace loadgen
