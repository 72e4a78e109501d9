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
    fields_.push_back({offset_of(f.name), offset_of(f.value)});
  }
}

ServerRequest::ServerRequest(http::request<http::string_body>&& parsed)
    : method_(parsed.method()), keep_alive_(parsed.keep_alive()), body_(std::move(parsed.body())) {
  method_string_ = add(parsed.method_string());
  target_ = add(parsed.target());
  for (const auto& f : parsed) fields_.push_back({add(f.name_string()), add(f.value())});
}

ServerRequest::Slice ServerRequest::add(std::string_view bytes) {
  const Slice s{static_cast<uint32_t>(head_.size()), static_cast<uint32_t>(bytes.size())};
  head_.append(bytes);
  return s;
}

std::optional<std::string_view> ServerRequest::field(std::string_view name) const {
  for (const Field& f : fields_) {
    if (lower_equals(slice(f.name), name)) return slice(f.value);
  }
  return std::nullopt;
}

}  // namespace arbiter
