// GET /dashboard (the page) and /dashboard/<file> (its scripts and styles):
// the admin listener's live dashboard (docs/dashboard.md). The files hold no
// data, so they are served without the admin token; every figure the page
// shows comes from /metrics and /admin/*, which ask for it.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gateway/admin/dashboard_assets.hpp"
#include "http/client_connection.hpp"

namespace arbiter {

// Whether `path` is /dashboard or under it.
bool dashboard_path(std::string_view path);

// The embedded file `path` names (/dashboard and /dashboard/ the page), or
// null.
const DashboardAsset* dashboard_asset(std::string_view path);

// Answers with the file `path` names, which dashboard_asset() found.
Task<void> send_dashboard_asset(std::string_view path, ClientConnection& conn,
                                const std::vector<std::pair<std::string, std::string>>& headers);

}  // namespace arbiter
