// What the Batch API shows of a file (/v1/files): its id, owner, name,
// purpose, size and time.
#pragma once

#include <cstdint>
#include <string>

#include <boost/json/object.hpp>

namespace arbiter::batch {

struct FileInfo {
  std::string id;
  std::string tenant;
  std::string filename;
  std::string purpose;  // batch, batch_output, ...
  uint64_t bytes = 0;
  int64_t created_at = 0;  // unix seconds
  int64_t expires_at = 0;  // unix seconds; 0: kept until deleted
};

boost::json::object to_api(const FileInfo& file);

}  // namespace arbiter::batch
