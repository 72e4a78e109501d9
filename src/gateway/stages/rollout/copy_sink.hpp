// A sink in front of the client's that keeps a copy of the answer (its
// status and up to a bound of its body) while passing everything on as it
// comes: the real answer a shadow request is compared with. It never holds
// a write back and never fails one the client's sink would not.
#pragma once

#include <string>

#include "http/response_sink.hpp"

namespace arbiter {

class CopySink final : public ResponseSink {
 public:
  static constexpr std::size_t kMaxCopy = 256 * 1024;  // beyond it the copy is cut (and so no exact match)

  explicit CopySink(ResponseSink& client) : client_(client) {}

  Task<bool> send(http::response<http::string_body>& res) override;
  Task<bool> send(const ResponseHead& head, std::string_view body) override;
  Task<bool> start_stream(const ResponseHead& head) override;
  Task<bool> send_chunk(std::span<const std::string_view> parts) override;
  Task<bool> end_stream() override;
  Task<bool> write_stream(const ResponseHead* head, std::span<const std::string_view> parts, bool last) override;
  bool client_gone() const override { return client_.client_gone(); }
  void set_abort_hook(std::function<void()> hook) override { client_.set_abort_hook(std::move(hook)); }
  void set_keep_alive(bool keep_alive) override { client_.set_keep_alive(keep_alive); }

  unsigned status() const { return status_; }
  const std::string& body() const { return body_; }
  bool cut() const { return cut_; }  // the body went beyond kMaxCopy

 private:
  void copy(std::string_view bytes);

  ResponseSink& client_;
  unsigned status_ = 0;
  std::string body_;
  bool cut_ = false;
};

}  // namespace arbiter
