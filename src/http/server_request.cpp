#include "http/server_request.hpp"

#include "http/head_scan.hpp"

namespace arbiter {

ServerRequest::ServerRequest(const ScannedRequest& scanned)
    : method_(scanned.method), keep_alive_(scanned.keep_alive), body_(scanned.body) {
  // The head's bytes hold every view the scan gave: keep them whole and
  // record offsets.
  const std::string_view bytes(scanned.head.start_line.data(), scanned.head.size);
  head_.assign(bytes);
  auto offset_of = [&](std::string_view v) {
    return Slice{static_cast<uint32_t>(v.data() - bytes.data()), static_cast<uint32_t>(v.size())};
  };
  method_string_ = offset_of(scanned.head.start_line.substr(0, scanned.target.data() - bytes.data() - 1));
  target_ = offset_of(scanned.target);
  fields_.reserve(scanned.head.field_count);
  for (const HeadField& f : scanned.head.fields()) {
    add_field(offset_of(f.name), offset_of(f.value));
  }
}

ServerRequest::ServerRequest(http::request<http::string_body>&& parsed,
                             const std::vector<std::pair<std::string, std::string>>* head_fields)
    : method_(parsed.method()),
      keep_alive_(parsed.keep_alive()),
      http10_(parsed.version() < 11),
      body_(std::move(parsed.body())) {
  method_string_ = add(parsed.method_string());
  target_ = add(parsed.target());
  if (head_fields) {
    for (const auto& [name, value] : *head_fields) add_field(add(name), add(value));
  } else {
    for (const auto& f : parsed) add_field(add(f.name_string()), add(f.value()));
  }
}

ServerRequest::Slice ServerRequest::add(std::string_view bytes) {
  const Slice s{static_cast<uint32_t>(head_.size()), static_cast<uint32_t>(bytes.size())};
  head_.append(bytes);
  return s;
}

namespace {

// The fields a proxy never passes on by name, found by length first: most
// fields of a request are none of them and cost one switch. The client
// hints (x-priority, x-slo-ttft-ms: core/client_hints.hpp) are the
// gateway's own too: it bounds them by the tenant, and the claim as sent
// must not reach a scheduler behind an engine's URL (another inference
// gateway) unbounded.
bool hop_by_hop_or_own(std::string_view name) {
  switch (name.size()) {
    case 2: return lower_equals(name, "te");
    case 4: return lower_equals(name, "host");
    case 6: return lower_equals(name, "accept") || lower_equals(name, "expect");
    case 7: return lower_equals(name, "trailer") || lower_equals(name, "upgrade");
    case 10: return lower_equals(name, "connection") || lower_equals(name, "keep-alive") ||
                    lower_equals(name, "x-priority");
    case 12: return lower_equals(name, "content-type") || lower_equals(name, "x-request-id");
    case 13: return lower_equals(name, "authorization") || lower_equals(name, "x-slo-ttft-ms");
    case 14: return lower_equals(name, "content-length");
    case 17: return lower_equals(name, "transfer-encoding");
    default: return false;
  }
}

// Whether `name` is one of the comma-separated tokens of a Connection header.
bool named_by(std::string_view connection, std::string_view name) {
  for (std::size_t at = 0; at < connection.size();) {
    std::size_t end = connection.find(',', at);
    if (end == std::string_view::npos) end = connection.size();
    std::string_view token = connection.substr(at, end - at);
    while (!token.empty() && (token.front() == ' ' || token.front() == '\t')) token.remove_prefix(1);
    while (!token.empty() && (token.back() == ' ' || token.back() == '\t')) token.remove_suffix(1);
    if (beast::iequals(name, token)) return true;
    at = end + 1;
  }
  return false;
}

}  // namespace

void ServerRequest::end_to_end(ForwardedHeaders& out) const {
  const std::string_view connection = (*this)["connection"];
  for (const Field& f : fields_) {
    const std::string_view name = slice(f.name);
    if (hop_by_hop_or_own(name)) continue;
    if (name.size() >= 6 && lower_equals(name.substr(0, 6), "proxy-")) continue;
    if (name.size() >= 10 && lower_equals(name.substr(0, 10), "x-arbiter-")) continue;
    if (!connection.empty() && named_by(connection, name)) continue;  // hop-by-hop too
    out.emplace_back(name, slice(f.value));
  }
}

void ServerRequest::add_field(Slice name, Slice value) {
  fields_.push_back({name, value});
  name_sizes_ |= size_bit(name.size);
}

std::optional<std::string_view> ServerRequest::field(std::string_view name) const {
  // Most lookups are of fields a request does not have (x-arbiter-*,
  // x-priority, origin): no name of that length, no scan.
  if ((name_sizes_ & size_bit(name.size())) == 0) return std::nullopt;
  for (const Field& f : fields_) {
    if (lower_equals(slice(f.name), name)) return slice(f.value);
  }
  return std::nullopt;
}

}  // namespace arbiter
