// Text a database that checks its encoding accepts (PostgreSQL's text: valid
// UTF-8, no NUL byte). A request id or tenant name comes from a client's
// header and may be neither; a row refused for it would block the store's
// queue behind it for good. Pure.
#pragma once

#include <string>
#include <string_view>

namespace arbiter::store {

// Valid UTF-8 (no overlong forms, no surrogates, nothing past U+10FFFF) with no NUL.
bool is_clean_text(std::string_view text);
// `text` with each byte of an invalid sequence replaced by U+FFFD and NULs dropped.
std::string clean_text(std::string_view text);

}  // namespace arbiter::store
