// The default cap on open client connections (listener.max_connections
// left at 0): the descriptors the process may hold, less what the rest of
// the gateway needs, so that the cap binds before accept() runs out of
// descriptors (then a new client waits for one; at the cap it takes the
// place of an idle connection at once, http/server.hpp). The reserve: 64
// for listeners, Redis, logs, the event loop and health probes, plus a
// descriptor per upstream slot (two for an embedded simulator: both ends
// are in the process), and never more than half the limit.
#pragma once

#include <algorithm>
#include <cstddef>

namespace arbiter {

inline constexpr std::size_t kFixedDescriptorReserve = 64;

inline constexpr std::size_t default_connection_cap(std::size_t fd_limit, std::size_t upstream_descriptors) {
  const std::size_t reserve = std::min(fd_limit / 2, kFixedDescriptorReserve + upstream_descriptors);
  return fd_limit - reserve;
}

}  // namespace arbiter
