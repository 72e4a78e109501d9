// This gateway process's name in the state replicas share through Redis
// (its slot holdings, its published service): random, made once per
// process, the same for every user of it.
#pragma once

#include <string>

namespace arbiter {

const std::string& replica_name();

}  // namespace arbiter
