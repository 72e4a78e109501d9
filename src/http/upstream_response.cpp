#include "http/upstream_response.hpp"

#include <algorithm>
#include <array>

#include "http/head_scan.hpp"
#include "http/parse_buffered.hpp"

namespace arbiter {

namespace {
// Beast's default for a response head; the scan declines larger heads, so
// Beast reports those exactly as before.
constexpr std::size_t kHeaderLimit = 8 * 1024;

// Upstream response headers passed on to the client besides content-type:
// the ones clients use to pace retries.
constexpr std::array<std::string_view, 9> kForwardedHeaders = {
    "retry-after",
    "retry-after-ms",
    "x-should-retry",
    "x-ratelimit-limit-requests",
    "x-ratelimit-remaining-requests",
    "x-ratelimit-reset-requests",
    "x-ratelimit-limit-tokens",
    "x-ratelimit-remaining-tokens",
    "x-ratelimit-reset-tokens",
};

bool is_forwarded(std::string_view name) {
  // Every forwarded name starts with r or x: most fields (Server, Date,
  // Content-Length, Connection) are out after one comparison.
  if (name.empty() || ((name[0] | 0x20) != 'r' && (name[0] | 0x20) != 'x')) return false;
  for (const std::string_view f : kForwardedHeaders) {
    if (lower_equals(name, f)) return true;
  }
  return false;
}
}  // namespace

class UpstreamResponseParser::Fallback final : public http::basic_parser<false> {
 public:
  explicit Fallback(UpstreamResponseParser& out) : out_(&out) {
    header_limit(kHeaderLimit);
    body_limit(boost::none);  // streams are unbounded; the relay bounds whole bodies
    eager(true);              // header and body in one pass over what arrived
  }

 private:
  void on_request_impl(http::verb, beast::string_view, beast::string_view, int, beast::error_code&) override {}
  void on_response_impl(int code, beast::string_view, int, beast::error_code&) override {
    out_->status_ = static_cast<unsigned>(code);
  }
  void on_field_impl(http::field, beast::string_view name, beast::string_view value,
                     beast::error_code&) override {
    out_->keep_field({name.data(), name.size()}, {value.data(), value.size()});
  }
  void on_header_impl(beast::error_code&) override {}
  void on_body_init_impl(const boost::optional<std::uint64_t>&, beast::error_code&) override {}
  std::size_t on_body_impl(beast::string_view body, beast::error_code&) override {
    out_->pieces_.emplace_back(body.data(), body.size());
    return body.size();
  }
  void on_chunk_header_impl(std::uint64_t, beast::string_view, beast::error_code&) override {}
  std::size_t on_chunk_body_impl(std::uint64_t, beast::string_view body, beast::error_code&) override {
    out_->pieces_.emplace_back(body.data(), body.size());
    return body.size();
  }
  void on_finish_impl(beast::error_code&) override {}

 public:
  void rebind(UpstreamResponseParser& out) { out_ = &out; }

 private:
  UpstreamResponseParser* out_;
};

UpstreamResponseParser::UpstreamResponseParser() = default;
UpstreamResponseParser::~UpstreamResponseParser() = default;
UpstreamResponseParser::UpstreamResponseParser(UpstreamResponseParser&& o) noexcept
    : fallback_(std::move(o.fallback_)),
      header_done_(o.header_done_),
      keep_alive_(o.keep_alive_),
      content_length_(o.content_length_),
      remaining_(o.remaining_),
      status_(o.status_),
      content_type_(std::move(o.content_type_)),
      forwarded_(std::move(o.forwarded_)),
      pieces_(std::move(o.pieces_)) {
  if (fallback_) fallback_->rebind(*this);  // Beast's callbacks write here now
}

void UpstreamResponseParser::keep_field(std::string_view name, std::string_view value) {
  if (lower_equals(name, "content-type")) {
    content_type_.assign(value);
  } else if (is_forwarded(name)) {
    forwarded_.emplace_back(name, value);
  }
}

beast::error_code UpstreamResponseParser::parse(beast::flat_buffer& buffer) {
  pieces_.clear();
  if (fallback_) return parse_buffered(*fallback_, buffer);
  if (!header_done_) {
    if (buffer.size() == 0) return {};
    const auto data = buffer.data();
    const std::string_view bytes(static_cast<const char*>(data.data()), data.size());
    ScannedResponse scanned;
    if (!scan_response(bytes, kHeaderLimit, scanned)) {
      fallback_ = std::make_unique<Fallback>(*this);
      return parse_buffered(*fallback_, buffer);
    }
    status_ = scanned.status;
    for (const HeadField& f : scanned.head.fields()) keep_field(f.name, f.value);
    keep_alive_ = scanned.keep_alive;
    content_length_ = remaining_ = scanned.content_length;
    header_done_ = true;
    buffer.consume(scanned.head.size);
  }
  take_body(buffer);
  return {};
}

void UpstreamResponseParser::take_body(beast::flat_buffer& buffer) {
  const std::size_t n = static_cast<std::size_t>(std::min<uint64_t>(remaining_, buffer.size()));
  if (n == 0) return;
  pieces_.emplace_back(static_cast<const char*>(buffer.data().data()), n);
  buffer.consume(n);
  remaining_ -= n;
}

beast::error_code UpstreamResponseParser::parse_eof() {
  pieces_.clear();
  if (fallback_) return finish_at_eof(*fallback_);
  // Any byte received went to the scan or the fallback: nothing came.
  if (!header_done_) return http::error::end_of_stream;
  if (remaining_ > 0) return http::error::partial_message;
  return {};
}

bool UpstreamResponseParser::is_header_done() const {
  return fallback_ ? fallback_->is_header_done() : header_done_;
}

bool UpstreamResponseParser::is_done() const {
  return fallback_ ? fallback_->is_done() : header_done_ && remaining_ == 0;
}

bool UpstreamResponseParser::keep_alive() const {
  return fallback_ ? fallback_->keep_alive() : keep_alive_;
}

std::optional<uint64_t> UpstreamResponseParser::content_length() const {
  if (fallback_) {
    if (const auto len = fallback_->content_length()) return *len;
    return std::nullopt;
  }
  if (!header_done_) return std::nullopt;
  return content_length_;
}

}  // namespace arbiter
