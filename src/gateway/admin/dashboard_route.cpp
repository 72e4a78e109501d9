#include "gateway/admin/dashboard_route.hpp"

namespace arbiter {

namespace {

constexpr std::string_view kDashboard = "/dashboard";

// Scripts, styles and fetches from this origin only, no inline script, no
// framing: an operator's token typed into this page stays with it.
constexpr std::string_view kContentSecurityPolicy =
    "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

}  // namespace

bool dashboard_path(std::string_view path) {
  return path == kDashboard || (path.starts_with(kDashboard) && path[kDashboard.size()] == '/');
}

const DashboardAsset* dashboard_asset(std::string_view path) {
  if (!dashboard_path(path)) return nullptr;
  const std::string_view name = path.size() <= kDashboard.size() + 1 ? "index.html" : path.substr(kDashboard.size() + 1);
  return find_dashboard_asset(name);
}

Task<void> send_dashboard_asset(std::string_view path, ClientConnection& conn,
                                const std::vector<std::pair<std::string, std::string>>& headers) {
  const DashboardAsset* asset = dashboard_asset(path);
  std::vector<std::pair<std::string, std::string>> fields = headers;
  fields.emplace_back("content-security-policy", kContentSecurityPolicy);
  fields.emplace_back("x-content-type-options", "nosniff");
  // no-cache: asked for again on every load, so a new binary's page never
  // runs an old one's scripts.
  const ResponseHead head{.status = 200, .content_type = asset->content_type, .cache_control = "no-cache",
                          .gateway = fields};
  co_await conn.send(head, asset->body);
}

}  // namespace arbiter
