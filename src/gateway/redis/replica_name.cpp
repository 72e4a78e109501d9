#include "gateway/redis/replica_name.hpp"

#include <cstdint>
#include <random>

#include <fmt/format.h>

namespace arbiter {

const std::string& replica_name() {
  static const std::string name = [] {
    std::random_device rd;
    return fmt::format("{:016x}", (uint64_t{rd()} << 32) | rd());
  }();
  return name;
}

}  // namespace arbiter
