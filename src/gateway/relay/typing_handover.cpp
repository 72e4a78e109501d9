#include "gateway/relay/typing_handover.hpp"

#include <unistd.h>

#include <boost/json.hpp>

namespace arbiter {

ReleasedSocket& ReleasedSocket::operator=(ReleasedSocket&& o) noexcept {
  if (this != &o) {
    if (fd >= 0) ::close(fd);
    fd = std::exchange(o.fd, -1);
    ipv6 = o.ipv6;
  }
  return *this;
}

ReleasedSocket::~ReleasedSocket() {
  if (fd >= 0) ::close(fd);
}

tcp::socket ReleasedSocket::adopt(const net::any_io_executor& executor) {
  tcp::socket socket(executor);
  beast::error_code ec;
  socket.assign(ipv6 ? tcp::v6() : tcp::v4(), std::exchange(fd, -1), ec);
  if (!ec) socket.non_blocking(true, ec);  // the relay's read_some must not block
  return socket;
}

std::string_view typing_outcome_name(TypingOutcome outcome) {
  switch (outcome) {
    case TypingOutcome::kHandedOver: return "handed_over";
    case TypingOutcome::kNotExtension: return "not_extension";
    case TypingOutcome::kNotGenerated: return "not_generated";
    case TypingOutcome::kShape: return "shape";
    case TypingOutcome::kNotEligible: return "not_eligible";
    case TypingOutcome::kTlsThread: return "tls_other_thread";
    case TypingOutcome::kLost: return "lost";
  }
  return "unknown";
}

typing::Shape TypingOffer::shape() const {
  return {.model = model_, .max_tokens = max_tokens_, .n = 1, .stream = stream_, .sampling = sampling_};
}

void TypingOffer::publish(std::string_view text, bool tls) {
  std::lock_guard lock(mu_);
  generated_.append(text);
  tls_ = tls;
}

std::optional<std::size_t> TypingOffer::claimed() const {
  std::lock_guard lock(mu_);
  return skip_;
}

bool TypingOffer::heir_on(const net::execution_context* context) const {
  std::lock_guard lock(mu_);
  return heir_context_ == context;
}

TypingOutcome TypingOffer::try_claim(const TypingOffer& heir) {
  std::lock_guard lock(mu_);
  if (closed_ || skip_) return TypingOutcome::kNotEligible;
  const typing::Verdict verdict = typing::typing_through({.prompt = prompt_, .generated = generated_, .shape = shape()},
                                                         {.prompt = heir.prompt_, .shape = heir.shape()});
  if (!verdict.inherit) {
    switch (verdict.refusal) {
      case typing::Refusal::kNotExtension: return TypingOutcome::kNotExtension;
      case typing::Refusal::kNotGenerated: return TypingOutcome::kNotGenerated;
      case typing::Refusal::kShape: return TypingOutcome::kShape;
    }
  }
  if (tls_ && heir.context_ != context_) return TypingOutcome::kTlsThread;
  skip_ = verdict.inherit->skip;
  heir_context_ = heir.context_;
  heir_executor_ = heir.executor_;
  return TypingOutcome::kHandedOver;
}

void TypingOffer::unclaim() {
  std::lock_guard lock(mu_);
  if (!settled_) skip_.reset();
}

void TypingOffer::wake_running(const std::shared_ptr<TypingOffer>& offer) {
  // The offer lives until the post has run; the socket pointer is read on
  // the thread that sets it.
  net::post(offer->executor_, [offer] {
    if (offer->waiting_) offer->waiting_->cancel();
  });
}

void TypingOffer::hand(HandedStream stream) {
  std::function<void()> wake;
  {
    std::lock_guard lock(mu_);
    closed_ = true;
    if (settled_) return;
    settled_ = true;
    handed_.emplace(std::move(stream));
    wake = std::move(wake_);
  }
  if (wake) wake();
}

void TypingOffer::close() {
  std::function<void()> wake;
  {
    std::lock_guard lock(mu_);
    closed_ = true;
    if (!skip_ || settled_) return;
    settled_ = true;
    wake = std::move(wake_);
  }
  if (wake) wake();
}

Task<std::optional<HandedStream>> TypingOffer::receive(ResponseSink& sink) {
  const auto executor = co_await net::this_coro::executor;
  auto timer = std::make_shared<net::steady_timer>(executor, net::steady_timer::time_point::max());
  bool wait = false;
  {
    std::lock_guard lock(mu_);
    if (!settled_) {
      // Posted: the old run may be on another thread. This coroutine reaches
      // its wait before the post can run (one thread per io_context).
      wake_ = [timer, executor] { net::post(executor, [timer] { timer->cancel(); }); };
      wait = true;
    }
  }
  if (wait && !sink.client_gone()) {
    sink.set_abort_hook([timer] { timer->cancel(); });
    co_await timer->async_wait(kAsTuple);
    sink.set_abort_hook(nullptr);
  }
  std::optional<HandedStream> stream;
  {
    std::lock_guard lock(mu_);
    wake_ = nullptr;
    // A client that left takes nothing: the stream closes with the offer.
    if (handed_ && !sink.client_gone()) {
      stream.emplace(std::move(*handed_));
      handed_.reset();
    }
  }
  co_return stream;
}

std::string completion_text_event(const Checkpoint& checkpoint, std::string_view text) {
  const boost::json::object chunk{
      {"id", checkpoint.id},
      {"object", "text_completion"},
      {"created", checkpoint.created},
      {"model", checkpoint.model},
      {"choices", boost::json::array{boost::json::object{
                      {"index", 0}, {"text", text}, {"logprobs", nullptr}, {"finish_reason", nullptr}}}}};
  return "data: " + boost::json::serialize(chunk) + "\n\n";
}

}  // namespace arbiter
