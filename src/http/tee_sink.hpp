// A response sink that forwards everything to another sink (the client)
// and hands a copy of the same bytes to a ResponseCopy (a cache fill, a
// recorder). The client's writes are the very views the relay gave: the
// tee adds one virtual call per write, no copy; what the copy keeps is its
// own business.
#pragma once

#include "http/response_sink.hpp"

namespace arbiter {

// What a TeeSink hands on. Views are valid during the call only.
class ResponseCopy {
 public:
  virtual ~ResponseCopy() = default;
  virtual void head(unsigned status, std::string_view content_type) = 0;
  virtual void body(std::string_view bytes) = 0;  // the whole body, or one piece of a stream
  // The response ended, once; `complete`: as a whole (not cut off by the
  // consumer leaving).
  virtual void end(bool complete) = 0;
};

class TeeSink final : public ResponseSink {
 public:
  TeeSink(ResponseSink& primary, ResponseCopy& copy) : primary_(primary), copy_(copy) {}

  Task<bool> send(http::response<http::string_body>& res) override;
  Task<bool> send(const ResponseHead& head, std::string_view body) override;
  Task<bool> start_stream(const ResponseHead& head) override;
  Task<bool> send_chunk(std::span<const std::string_view> parts) override;
  Task<bool> end_stream() override;
  Task<bool> write_stream(const ResponseHead* head, std::span<const std::string_view> parts, bool last) override;
  bool client_gone() const override { return primary_.client_gone(); }
  void set_abort_hook(std::function<void()> hook) override { primary_.set_abort_hook(std::move(hook)); }
  void set_keep_alive(bool keep_alive) override { primary_.set_keep_alive(keep_alive); }

 private:
  void finish(bool complete);  // copy_.end(), once

  ResponseSink& primary_;
  ResponseCopy& copy_;
  bool ended_ = false;
};

}  // namespace arbiter
