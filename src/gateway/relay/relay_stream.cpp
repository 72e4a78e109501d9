// An SSE stream relayed as it arrives (upstream_exchange.hpp).
#include <cstring>

#include "core/stream_usage.hpp"
#include "core/usage.hpp"
#include "gateway/relay/upstream_exchange.hpp"

namespace arbiter {

Task<bool> UpstreamExchange::relay_stream(Stream& socket, beast::flat_buffer& buffer, UpstreamResponseParser& parser) {
  outcome_.stream = true;
  outcome_.status = 200;
  if (!r_.resume) outcome_.generated = 0;
  const ResponseHead head{.status = 200,
                          .content_type = parser.content_type(),
                          .cache_control = "no-cache",
                          .upstream = parser.forwarded(),
                          .gateway = r_.response_headers};
  // The client's stream starts with this run's first write, unless an
  // earlier run started it.
  const ResponseHead* unsent_head = r_.resume && r_.resume->client_stream_started ? nullptr : &head;
  // Every event one read completed goes out as one chunk, in one write:
  // the events as they lie in the read buffer (a run of them is one
  // part), an event a read cut off from the framer's storage, a resumed
  // run's rewritten event from rewritten_. The first write carries the
  // head too (with the events that came with it, if any: the head waits
  // for nothing), the last one the end of the stream, and with it the
  // bytes after the last blank line (byte-exact).
  // A stream handed over (typing through) starts with its preamble; the
  // parser's pieces were relayed by the request it came from.
  SseFramer framer;
  Inherited* const inherited = inherited_stream();
  if (inherited) framer = std::move(inherited->framer);
  for (bool handed = inherited != nullptr;; handed = false) {
    parts_.clear();
    const std::size_t sent_text = r_.typing ? text_checkpoint().text.size() : 0;
    const bool last = take_events(framer, parser, handed ? inherited : nullptr);
    if (r_.typing) {
      if (const auto skip = r_.typing->claimed()) {
        keep_for_heir(*skip, sent_text, framer, last);
        co_return false;
      }
    }
    if ((unsent_head || last || !parts_.empty()) && !co_await r_.sink.write_stream(unsent_head, parts_, last)) {
      // The client left: mid-answer, unless the engine had sent it all.
      if (last) {
        outcome_.status = 499;
      } else {
        cancelled();
      }
      co_return false;
    }
    if (r_.typing) publish(socket.tls() != nullptr);
    if (unsent_head && r_.resume) r_.resume->client_stream_started = true;
    if (unsent_head && r_.on_stream_started) r_.on_stream_started();
    unsent_head = nullptr;
    framer.release();
    rewritten_.clear();
    if (last) break;
    const Read read = co_await read_more(socket, buffer, parser, r_.timeouts.stream_idle, true);
    if (const ReadEnd end = after_read(read); end != ReadEnd::kData) {
      if (end == ReadEnd::kStopped) co_await stream_stopped();
      co_return false;
    }
  }
  co_return parser.keep_alive();
}

bool UpstreamExchange::take_events(SseFramer& framer, UpstreamResponseParser& parser, const Inherited* handed) {
  if (handed) {
    if (!handed->preamble.empty()) add_part(handed->preamble);
    return handed->last;
  }
  const std::size_t before = framer.events();
  for (const std::string_view piece : parser.body_pieces()) {
    framer.feed(piece, [this](std::string_view event) { relay_event(event); });
  }
  if (framer.events() > 0) first_event();
  count_gaps(framer.events() - before);
  const bool last = parser.is_done();
  if (last && !framer.pending().empty()) add_part(framer.pending());
  return last;
}

Task<void> UpstreamExchange::stream_stopped() {
  // A preempted run leaves the stream open: the next run continues it; so
  // does a broken resumable one that the caller may fail over.
  if (outcome_.preempted) co_return;
  if (!outcome_.interrupted && r_.resume && r_.hold_failures) {
    outcome_.stream_open = true;
  } else {
    co_await end_stream_with_error(*outcome_.error);
  }
}

void UpstreamExchange::publish(bool tls) {
  const std::string& text = text_checkpoint().text;
  r_.typing->publish(std::string_view(text).substr(std::min(typing_->published, text.size())), tls);
  typing_->published = text.size();
}

void UpstreamExchange::relay_event(std::string_view event) {
  if (!r_.resume) {
    if (count(event) && r_.hide_usage_chunk && is_usage_chunk(event_data(event))) return;
    if (r_.typing) track_event(event, Route::kCompletions, typing_->typed);
    add_part(event);
    return;
  }
  // Resumed runs are rewritten to look like the first (one id, usage
  // over all runs).
  EventResult result = track_event(event, r_.resume->route, r_.resume->checkpoint);
  if (r_.hide_usage_chunk && is_usage_chunk(event_data(event))) return;  // taken into the checkpoint
  if (result.fate == EventFate::kForward) {
    add_part(event);
  } else if (result.fate == EventFate::kRewritten) {
    add_part(rewritten_.emplace_front(std::move(result.rewritten)));
  }
}

void UpstreamExchange::add_part(std::string_view event) {
  if (!parts_.empty() && parts_.back().data() + parts_.back().size() == event.data()) {
    parts_.back() = std::string_view(parts_.back().data(), parts_.back().size() + event.size());
  } else {
    parts_.push_back(event);
  }
}

bool UpstreamExchange::count(std::string_view event) {
  static constexpr std::string_view kUsage = "\"usage\":{";
  // vLLM's and SGLang's first chunk (the role) and some finish chunks:
  // no token.
  static constexpr std::string_view kNoContent = "\"content\":\"\"";
  const std::string_view data = event_data(event);
  if (data.empty() || data == "[DONE]") return false;
  const bool usage = memmem(data.data(), data.size(), kUsage.data(), kUsage.size()) != nullptr;
  // The Responses API's typed events: only a delta carries generated tokens
  // (output text, reasoning, a function call's arguments, a refusal), not
  // response.created, output_item.added and the like.
  const std::string_view name = event_name(event);
  const bool tokens = name.starts_with("response.")
                          ? name.ends_with(".delta")
                          : memmem(data.data(), data.size(), kNoContent.data(), kNoContent.size()) == nullptr;
  if (!usage && tokens) ++outcome_.generated;
  if (!usage) return false;
  if (auto found = find_usage(data)) outcome_.usage = found;
  return true;
}

}  // namespace arbiter
