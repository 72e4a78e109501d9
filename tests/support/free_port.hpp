// A loopback port for a server that cannot bind port 0 and say which it got
// (redis-server, postgres).
#pragma once

#include <cstdint>

namespace arbiter::test {

// A port the kernel just handed out and took back: free unless another
// process grabs it in between (callers retry when their server exits).
uint16_t free_port();

}  // namespace arbiter::test
