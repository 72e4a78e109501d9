// What validate() says of a config's defaults once `edit` has changed them,
// "" when it accepts them: the config tests here, one edit a line.
#pragma once

#include <string>

namespace arbiter::resilience {

template <typename Config, typename Edit>
std::string config_error(Edit edit) {
  Config c;
  edit(c);
  return validate(c).value_or("");
}

}  // namespace arbiter::resilience
