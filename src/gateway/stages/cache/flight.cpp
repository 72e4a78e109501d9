#include "gateway/stages/cache/flight.hpp"

namespace arbiter {

void Flight::wake_all() {
  for (auto& timer : waiting_) {
    net::post(timer->get_executor(), [timer] { timer->cancel(); });
  }
  waiting_.clear();
}

void Flight::head(unsigned status, std::string_view content_type) {
  std::lock_guard lock(mutex_);
  if (headed_) return;
  headed_ = true;
  status_ = status;
  content_type_ = content_type;
  wake_all();
}

void Flight::append(std::string_view bytes) {
  if (bytes.empty()) return;
  std::lock_guard lock(mutex_);
  bytes_.append(bytes);
  wake_all();
}

void Flight::end(bool complete) {
  std::lock_guard lock(mutex_);
  if (ended_) return;
  ended_ = true;
  complete_ = complete;
  wake_all();
}

bool Flight::followed() const {
  std::lock_guard lock(mutex_);
  return followers_ > 0;
}

void Flight::leader_gone(std::function<void()> abort) {
  {
    std::lock_guard lock(mutex_);
    if (followers_ > 0) {
      pending_abort_ = std::move(abort);
      return;
    }
  }
  abort();  // on the leader's thread: the connection's reader called it
}

void Flight::clear_abort() {
  std::lock_guard lock(mutex_);
  pending_abort_ = nullptr;
  ++abort_epoch_;
}

std::string Flight::take_bytes() {
  std::lock_guard lock(mutex_);
  return followers_ > 0 ? bytes_ : std::move(bytes_);
}

Flight::State Flight::state() const {
  std::lock_guard lock(mutex_);
  return {.status = status_,
          .stream = content_type_.starts_with("text/event-stream"),
          .ended = ended_,
          .complete = complete_,
          .size = bytes_.size()};
}

bool Flight::join(std::string_view scope, std::string_view model) {
  std::lock_guard lock(mutex_);
  if (scope != scope_ || model != model_ || (ended_ && !complete_)) return false;
  if (headed_ && status_ != 200) return false;
  ++followers_;
  return true;
}

void Flight::leave() {
  std::lock_guard lock(mutex_);
  if (--followers_ > 0 || !pending_abort_) return;
  // The last follower left a generation whose own client is gone: abort
  // it, on the leader's thread, unless its relay let go meanwhile (the
  // hook would close a connection back in the pool).
  net::post(leader_, [self = shared_from_this(), epoch = abort_epoch_, abort = std::move(pending_abort_)] {
    {
      std::lock_guard lock(self->mutex_);
      if (self->abort_epoch_ != epoch) return;
    }
    abort();
  });
  pending_abort_ = nullptr;
}

Flight::Read Flight::read(std::size_t offset, const std::shared_ptr<net::steady_timer>& wake) {
  std::lock_guard lock(mutex_);
  Read r{.headed = headed_,
         .status = status_,
         .stream = content_type_.starts_with("text/event-stream"),
         .content_type = content_type_,
         .bytes = offset < bytes_.size() ? bytes_.substr(offset) : std::string(),
         .ended = ended_,
         .complete = complete_};
  if (r.bytes.empty() && !ended_) waiting_.push_back(wake);
  return r;
}

// ---- the leader's sink ----

void FlightTee::finish(bool complete) {
  if (ended_) return;
  ended_ = true;
  flight_->end(complete);
}

Task<bool> FlightTee::send(http::response<http::string_body>& res) {
  const auto type = res[http::field::content_type];
  flight_->head(res.result_int(), std::string_view(type.data(), type.size()));
  flight_->append(res.body());
  const bool sent = went(client_.client_gone() ? false : co_await client_.send(res));
  finish(sent);
  co_return sent;
}

Task<bool> FlightTee::send(const ResponseHead& head, std::string_view body) {
  flight_->head(head.status, head.content_type);
  flight_->append(body);
  const bool sent = went(client_.client_gone() ? false : co_await client_.send(head, body));
  finish(sent);
  co_return sent;
}

Task<bool> FlightTee::start_stream(const ResponseHead& head) {
  flight_->head(head.status, head.content_type);
  const bool sent = went(client_.client_gone() ? false : co_await client_.start_stream(head));
  if (!sent) finish(false);
  co_return sent;
}

Task<bool> FlightTee::send_chunk(std::span<const std::string_view> parts) {
  for (const std::string_view part : parts) flight_->append(part);
  const bool sent = went(client_.client_gone() ? false : co_await client_.send_chunk(parts));
  if (!sent) finish(false);
  co_return sent;
}

Task<bool> FlightTee::end_stream() {
  const bool sent = went(client_.client_gone() ? false : co_await client_.end_stream());
  finish(sent);
  co_return sent;
}

Task<bool> FlightTee::write_stream(const ResponseHead* head, std::span<const std::string_view> parts, bool last) {
  if (head) flight_->head(head->status, head->content_type);
  for (const std::string_view part : parts) flight_->append(part);
  const bool sent = went(client_.client_gone() ? false : co_await client_.write_stream(head, parts, last));
  if (last || !sent) finish(sent);
  co_return sent;
}

void FlightTee::set_abort_hook(std::function<void()> hook) {
  if (!hook) {
    flight_->clear_abort();
    client_.set_abort_hook(nullptr);
    return;
  }
  client_.set_abort_hook([flight = flight_, hook = std::move(hook)]() mutable { flight->leader_gone(std::move(hook)); });
}

// ---- the registry ----

std::shared_ptr<Flight> Flights::join(const cache::CacheKey& key, std::string_view scope, std::string_view model) {
  std::lock_guard lock(mutex_);
  const auto it = flights_.find(key);
  if (it == flights_.end() || !it->second->join(scope, model)) return nullptr;
  return it->second;
}

void Flights::lead(const cache::CacheKey& key, std::shared_ptr<Flight> flight) {
  std::lock_guard lock(mutex_);
  flights_[key] = std::move(flight);
}

void Flights::remove(const cache::CacheKey& key, const Flight* flight) {
  std::lock_guard lock(mutex_);
  const auto it = flights_.find(key);
  if (it != flights_.end() && it->second.get() == flight) flights_.erase(it);
}

// ---- a follower ----

Task<bool> follow(std::shared_ptr<Flight> flight, ResponseSink& sink, const ResponseHead& head_template,
                  int& status) {
  auto wake = std::make_shared<net::steady_timer>(co_await net::this_coro::executor);
  sink.set_abort_hook([wake] { wake->cancel(); });
  std::size_t offset = 0;
  bool started = false;
  for (;;) {
    wake->expires_at(net::steady_timer::time_point::max());
    Flight::Read r = flight->read(offset, wake);
    if (sink.client_gone()) {
      status = 499;
      break;
    }
    const bool follows = r.headed && r.status == 200;
    if ((r.headed && !follows) || (r.ended && !r.headed)) break;  // not an answer to follow: run alone
    if (follows && !r.stream) {
      if (!r.ended) {
        co_await wake->async_wait(kAsTuple);
        continue;
      }
      if (!r.complete) break;
      ResponseHead head = head_template;
      head.content_type = r.content_type;
      status = co_await sink.send(head, r.bytes) ? 200 : 499;
      break;
    }
    if (follows && (!r.bytes.empty() || r.ended)) {
      ResponseHead head = head_template;
      head.content_type = r.content_type;
      head.cache_control = "no-cache";
      const std::string_view parts[] = {r.bytes};
      const bool last = r.ended;
      if (last && !r.complete) sink.set_keep_alive(false);  // cut as the leader's was
      const bool sent = co_await sink.write_stream(started ? nullptr : &head, r.bytes.empty() ? std::span<const std::string_view>() : parts, last);
      started = true;
      offset += r.bytes.size();
      status = sent ? 200 : 499;
      if (!sent || last) break;
      continue;
    }
    co_await wake->async_wait(kAsTuple);
  }
  sink.set_abort_hook(nullptr);
  flight->leave();
  co_return status != 0;
}

}  // namespace arbiter
