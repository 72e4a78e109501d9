// The class a batch's lines run in (batches.class): the one named, else a
// class called "batch", else a background class, else the class that runs
// last by engine priority. Pure: read from the config.
#pragma once

#include <cstddef>

#include "core/config.hpp"

namespace arbiter::batch {

// Index into config.classes; the config has at least one class.
std::size_t batch_class(const Config& config);

}  // namespace arbiter::batch
