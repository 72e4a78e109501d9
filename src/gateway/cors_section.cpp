#include "gateway/cors_section.hpp"

#include <boost/url/parse.hpp>
#include <charconv>

#include "yaml/setting_rows.hpp"

namespace arbiter {
namespace {

using namespace setting_rows;

constexpr SettingKey<CorsConfig> kCorsKeys[] = {
    {"allowed_origins", "a list of origins (scheme://host[:port]) or [\"*\"]",
     read_strings<CorsConfig, &CorsConfig::allowed_origins>, write_strings<CorsConfig, &CorsConfig::allowed_origins>},
    {"allow_credentials", "true or false", read_bool<CorsConfig, &CorsConfig::allow_credentials>,
     write_bool<CorsConfig, &CorsConfig::allow_credentials>},
    {"max_age_s", "seconds in [0, 86400]", read_seconds<CorsConfig, &CorsConfig::max_age, 0, 86'400>,
     write_seconds<CorsConfig, &CorsConfig::max_age>},
};

// Why `origin` can never equal an Origin header a browser sends (RFC 6454
// serialisation: scheme://host[:port], no user, path, query or fragment, and
// no port when it is the scheme's default); empty when it can. Listed, it
// would be an origin that silently never matches.
std::string origin_problem(const std::string& origin) {
  namespace urls = boost::urls;
  const auto url = urls::parse_absolute_uri(origin);
  if (!url || (url->scheme_id() != urls::scheme::http && url->scheme_id() != urls::scheme::https) ||
      !url->has_authority() || url->host().empty() || !url->encoded_path().empty() || url->has_query() ||
      url->has_fragment() || origin.find_first_of("* ") != std::string::npos) {
    return "must be \"*\" or an origin as browsers send it, scheme://host[:port] (e.g. "
           "https://chat.example.com), got \"" +
           origin + "\"";
  }
  if (url->has_userinfo()) return "has a user part (\"" + origin + "\"): browsers never send one in an Origin";
  if (url->has_port()) {
    const std::string_view text = url->port();
    unsigned port = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), port);
    if (ec != std::errc{} || end != text.data() + text.size() || port == 0 || port > 65535) {
      return "has no valid port (1-65535): \"" + origin + "\"";
    }
    if (port == (url->scheme_id() == urls::scheme::https ? 443 : 80)) {
      return "names the default port (\"" + origin + "\"): browsers leave it out, write " + std::string(url->scheme()) +
             "://" + std::string(url->encoded_host()) + " instead";
    }
  }
  return {};
}

// "*" allows any origin, which credentials rule out (browsers refuse it).
void check_cors(YamlReader& r, std::string_view section, const Config& c) {
  const CorsConfig& cors = c.cors;
  for (std::size_t i = 0; i < cors.allowed_origins.size(); ++i) {
    const std::string& o = cors.allowed_origins[i];
    const std::string path = YamlReader::index(std::string(section) + ".allowed_origins", i);
    if (o == "*") {
      if (cors.allow_credentials) r.error(path, "\"*\" cannot go with allow_credentials: name the origins");
      continue;
    }
    if (std::string why = origin_problem(o); !why.empty()) r.error(path, why);
  }
}

}  // namespace

std::span<const SettingKey<CorsConfig>> cors_keys() { return kCorsKeys; }

ConfigSection cors_section() { return flat_section<CorsConfig, &Config::cors, cors_keys, check_cors>("cors"); }

}  // namespace arbiter
