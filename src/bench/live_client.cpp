#include "bench/live_client.hpp"

#include <algorithm>

#include <boost/json.hpp>

namespace arbiter::bench {
namespace json = boost::json;

Outcome outcome_of_status(unsigned status) {
  switch (status) {
    case 429:
      return Outcome::kRejected;
    case 409:
      return Outcome::kSuperseded;
    default:
      return Outcome::kDropped;  // 503, and anything else the scenario does not expect
  }
}

Exchange::Exchange(net::any_io_executor executor, LiveClock::time_point run_start,
                   std::function<void(double)> on_gap)
    : socket_(executor),
      abort_timer_(executor),
      run_start_(run_start),
      on_gap_(std::move(on_gap)) {}

double Exchange::now() const {
  return std::chrono::duration<double>(LiveClock::now() - run_start_).count();
}

void Exchange::stop(Outcome outcome) {
  if (over_ || stopped_) return;
  stopped_ = outcome;
  beast::error_code ignored;
  socket_.close(ignored);
}

void Exchange::abort_at(LiveClock::time_point at) {
  abort_timer_.expires_at(at);
  abort_timer_.async_wait([self = shared_from_this()](beast::error_code ec) {
    if (!ec) self->stop(Outcome::kCancelled);
  });
}

void Exchange::on_event(std::string_view event) {
  if (is_done_event(event)) {
    done_ = true;
    return;
  }
  const std::string_view payload = event_data(event);
  if (payload.empty()) return;
  beast::error_code ec;
  const json::value v = json::parse(payload, ec);
  if (ec || !v.is_object()) return;
  const json::object& o = v.get_object();
  if (const auto* error = o.if_contains("error")) {
    const auto* code = error->is_object() ? error->get_object().if_contains("code") : nullptr;
    const bool superseded = code && code->is_string() && code->get_string() == "superseded";
    ended_ = superseded ? Outcome::kSuperseded : Outcome::kDropped;
    if (!superseded) result_.note = "error event in the stream";
    return;
  }
  const auto* choices = o.if_contains("choices");
  if (!choices || !choices->is_array() || choices->get_array().empty()) return;  // usage
  const auto* choice = choices->get_array()[0].if_object();
  if (!choice) return;
  const json::value* text = choice->if_contains("text");  // completions
  if (const auto* delta = choice->if_contains("delta"); delta && delta->is_object())
    text = delta->get_object().if_contains("content");                    // chat
  if (!text || !text->is_string() || text->get_string().empty()) return;  // role event
  const json::string& piece = text->get_string();
  text_.append(piece.data(), std::min(piece.size(), kKeptText - std::min(kKeptText, text_.size())));
  const double t = now();
  if (result_.first_token < 0) {
    result_.first_token = t;
  } else {
    on_gap_(t - result_.last_token);
  }
  result_.last_token = t;
  ++result_.tokens;
}

Task<void> Exchange::read_stream(beast::flat_buffer& buffer,
                                 http::response_parser<http::string_body>& parser) {
  while (!parser.is_done() && !ended_) {
    auto [ec, n] = co_await http::async_read_some(socket_, buffer, parser, kAsTuple);
    // The body so far, then cleared: the parser appends each new piece to it.
    std::string& body = parser.get().body();
    sse_.feed(body, [this](std::string_view event) { on_event(event); });
    sse_.release();
    body.clear();
    if (ec) co_return;
  }
}

Task<ExchangeResult> Exchange::run(tcp::endpoint target, std::string request) {
  auto [connect_ec] = co_await socket_.async_connect(target, kAsTuple);
  if (!connect_ec && !stopped_) {
    auto [write_ec, written] = co_await net::async_write(socket_, net::buffer(request), kAsTuple);
    beast::flat_buffer buffer;
    http::response_parser<http::string_body> parser;
    parser.body_limit(boost::none);  // a stream is bounded by the run, not by size
    if (!write_ec && !stopped_) {
      auto [header_ec, n] = co_await http::async_read_header(socket_, buffer, parser, kAsTuple);
      if (!header_ec && !stopped_) {
        const unsigned status = parser.get().result_int();
        result_.status = status;
        if (const auto backend = parser.get().find("x-arbiter-backend"); backend != parser.get().end())
          result_.backend = std::string(backend->value());
        if (status == 200) {
          co_await read_stream(buffer, parser);
          if (!ended_) {
            if (done_) {
              ended_ = Outcome::kCompleted;
            } else if (!stopped_) {
              ended_ = Outcome::kDropped;
              result_.note = "stream ended without [DONE]";
            }
          }
        } else {
          ended_ = outcome_of_status(status);
          if (status != 429 && status != 503 && status != 409)
            result_.note = "HTTP " + std::to_string(status);
        }
      } else if (header_ec && !stopped_) {
        result_.note = "no answer: " + header_ec.message();
      }
    } else if (write_ec && !stopped_) {
      result_.note = "write: " + write_ec.message();
    }
  } else if (connect_ec && !stopped_) {
    result_.note = "connect: " + connect_ec.message();
  }
  over_ = true;
  result_.ended = now();
  abort_timer_.cancel();
  beast::error_code ignored;
  socket_.close(ignored);
  // What the stream said wins (a completed answer stays completed even if a
  // stop came after it); otherwise why the client stopped; otherwise a failure.
  result_.outcome = ended_ ? *ended_ : stopped_ ? *stopped_ : Outcome::kDropped;
  co_return result_;
}

}  // namespace arbiter::bench
