#include "http/http_head.hpp"

#include <charconv>
#include <cstring>

namespace arbiter {

namespace {
// A head is emitted twice by the same code: once to size the string, once
// to copy into it, so writing costs one allocation at most (none once the
// reused string is big enough) and a memcpy per piece.
class HeadWriter {
 public:
  explicit HeadWriter(std::string& out) : out_(out) {}

  // Runs `emit(*this)` twice: measuring, then writing.
  template <class Emit>
  void write(Emit&& emit) {
    emit(*this);
    out_.resize(size_);
    at_ = out_.data();
    emit(*this);
  }

  HeadWriter& operator<<(std::string_view s) {
    if (at_) {
      std::memcpy(at_, s.data(), s.size());
      at_ += s.size();
    } else {
      size_ += s.size();
    }
    return *this;
  }
  HeadWriter& field(std::string_view name, std::string_view value) {
    return *this << name << ": " << value << "\r\n";
  }

 private:
  std::string& out_;
  std::size_t size_ = 0;
  char* at_ = nullptr;  // set for the writing pass
};

// Decimal digits of `n`, valid while the object lives.
struct Number {
  explicit Number(std::size_t n) : end(std::to_chars(digits, digits + sizeof digits, n).ptr) {}
  std::string_view view() const { return {digits, static_cast<std::size_t>(end - digits)}; }
  char digits[24];
  char* end;
};
}  // namespace

void write_request_head(const UpstreamRequest& r, std::string& out) {
  const Number length(r.body.size() + r.body_insert.size());
  HeadWriter(out).write([&](HeadWriter& w) {
    w << "POST " << r.target << " HTTP/1.1\r\n";
    w.field("Host", r.host);
    w.field("Content-Type", "application/json");
    if (!r.accept.empty()) w.field("Accept", r.accept);
    w.field("x-request-id", r.request_id);
    if (!r.authorization.empty()) w.field("Authorization", r.authorization);
    for (const auto& [name, value] : r.forwarded) w.field(name, value);
    w.field("Content-Length", length.view());
    w << "\r\n";
  });
}

namespace {

void write_head(const ResponseHead& head, std::optional<std::size_t> content_length, BodyFraming framing,
                bool keep_alive, std::string& out) {
  const Number status(head.status);
  const Number length(content_length.value_or(0));
  const std::string_view reason = http::obsolete_reason(static_cast<http::status>(head.status));
  HeadWriter(out).write([&](HeadWriter& w) {
    w << "HTTP/1.1 " << status.view() << " " << reason << "\r\n";
    if (!head.content_type.empty()) w.field("Content-Type", head.content_type);
    if (!head.cache_control.empty()) w.field("Cache-Control", head.cache_control);
    for (const auto& [name, value] : head.upstream) w.field(name, value);
    for (const auto& [name, value] : head.gateway) w.field(name, value);
    if (content_length) {
      w.field("Content-Length", length.view());
    } else if (framing == BodyFraming::kChunked) {
      w.field("Transfer-Encoding", "chunked");
    }
    if (!keep_alive) w.field("Connection", "close");
    w << "\r\n";
  });
}

}  // namespace

void write_response_head(const ResponseHead& head, std::optional<std::size_t> content_length,
                         bool keep_alive, std::string& out) {
  write_head(head, content_length, BodyFraming::kChunked, keep_alive, out);
}

void write_response_head(const ResponseHead& head, BodyFraming framing, bool keep_alive, std::string& out) {
  write_head(head, std::nullopt, framing, keep_alive, out);
}

void write_response_head(const http::response_header<>& head, std::string& out) {
  const Number status(head.result_int());
  HeadWriter(out).write([&](HeadWriter& w) {
    w << (head.version() == 10 ? "HTTP/1.0 " : "HTTP/1.1 ") << status.view() << " " << head.reason() << "\r\n";
    for (const auto& f : head) w.field(f.name_string(), f.value());
    w << "\r\n";
  });
}

}  // namespace arbiter
