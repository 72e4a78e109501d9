// Precompiled header for the network layer: Asio/Beast are heavy to parse and
// every file in src/http, src/gateway and src/sim includes them.
#pragma once
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>
