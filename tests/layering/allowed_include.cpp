// Must compile (ctest layering_allowed_include_builds): the control for
// upward_include.cpp, the same set-up with a layer the gateway may use.
#include "http/asio.hpp"
