// What the admin API asks of the config reloader (the Gateway): reload a
// YAML text, roll back to a kept version, list the versions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "gateway/dispatch/dispatcher.hpp"

namespace arbiter {

// What a reload did: applied (a new version runs), unchanged (the same
// text runs already) or rejected with the reasons, in --check's terms.
struct ReloadOutcome {
  enum class Result { kApplied, kUnchanged, kRejected };
  Result result = Result::kRejected;
  std::string hash;                 // the version now running
  std::vector<std::string> errors;  // kRejected: why
  CarryReport carried;              // kApplied: the requests the new config took over
};

class ConfigControl {
 public:
  virtual ~ConfigControl() = default;
  virtual ReloadOutcome reload(std::string text, std::string source) = 0;
  // A kept version by its hash or a unique prefix of 6+ digits.
  virtual ReloadOutcome rollback(std::string_view hash) = 0;
  // {"object":"list","data":[{hash, applied_at, source, running}...]}, newest first.
  virtual std::string versions_json() const = 0;
  // The running version's YAML, as it was given.
  virtual std::string current_text() const = 0;
};

}  // namespace arbiter
