// Request-path parsing micro-benchmarks (issue 2), each next to the
// baseline it replaced, measured in the same run: compare the pairs as
// ratios, not as absolute times.
//
// BM_RequestHead_Scan / BM_RequestHead_Beast: a client's request head and
//   1 KB body as the load generator sends it, taken by http/head_scan into a
//   ServerRequest, against Beast's request_parser<string_body>.
// BM_ResponseHead_Scan / BM_ResponseHead_Beast: an nginx-style response head
//   with a 1 KB body, through UpstreamResponseParser (scan) against Beast's
//   response_parser<string_body>.
// BM_RequestBody_Fields / BM_RequestBody_Document: the same 1 KB chat body
//   through parse_request (one SAX pass, no document) against
//   boost::json::parse (the document the gateway used to build).
// BM_CappedBody_InPlace / BM_CappedBody_Document: a 1 KB completion body
//   asking for 256 tokens, capped to 128 (the completion class) and made
//   ready to send: parse_request and the cap written into the text, against
//   the document parsed, rewritten and serialised.
#include <benchmark/benchmark.h>

#include <string>

#include <boost/json.hpp>

#include "core/request_parser.hpp"
#include "http/head_scan.hpp"
#include "http/server_request.hpp"
#include "http/upstream_response.hpp"

namespace arbiter {
namespace {

std::string chat_body() {
  std::string content;
  while (content.size() < 900) content += "Summarise the quarterly report in three bullet points. ";
  return R"({"model":"m1","messages":[{"role":"system","content":"You are terse."},{"role":"user","content":")" +
         content + R"("}],"max_tokens":64,"temperature":0.2})";
}

std::string request_wire() {
  const std::string body = chat_body();
  return "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:40123\r\nUser-Agent: arbiter-loadgen\r\n"
         "Content-Type: application/json\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n\r\n" + body;
}

std::string response_wire() {
  const std::string body(1024, 'x');
  return "HTTP/1.1 200 OK\r\nServer: nginx/1.22.1\r\nDate: Mon, 30 Nov 2026 16:16:13 GMT\r\n"
         "Content-Type: application/json\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\nConnection: keep-alive\r\n\r\n" + body;
}

void BM_RequestHead_Scan(benchmark::State& state) {
  const std::string wire = request_wire();
  for (auto _ : state) {
    ScannedRequest scanned;
    if (!scan_request(wire, 16 << 10, 4 << 20, scanned)) state.SkipWithError("declined");
    ServerRequest req(scanned);
    benchmark::DoNotOptimize(req.body().data());
  }
}
BENCHMARK(BM_RequestHead_Scan);

void BM_RequestHead_Beast(benchmark::State& state) {
  const std::string wire = request_wire();
  for (auto _ : state) {
    http::request_parser<http::string_body> parser;
    parser.eager(true);
    beast::error_code ec;
    parser.put(net::buffer(wire.data(), wire.size()), ec);
    if (ec || !parser.is_done()) state.SkipWithError("not parsed");
    auto req = parser.release();
    benchmark::DoNotOptimize(req.body().data());
  }
}
BENCHMARK(BM_RequestHead_Beast);

void BM_ResponseHead_Scan(benchmark::State& state) {
  const std::string wire = response_wire();
  beast::flat_buffer buffer;
  for (auto _ : state) {
    buffer.consume(buffer.size());
    buffer.commit(net::buffer_copy(buffer.prepare(wire.size()), net::buffer(wire.data(), wire.size())));
    UpstreamResponseParser parser;
    if (parser.parse(buffer) || !parser.is_done()) state.SkipWithError("not parsed");
    benchmark::DoNotOptimize(parser.body_pieces().data());
  }
}
BENCHMARK(BM_ResponseHead_Scan);

void BM_ResponseHead_Beast(benchmark::State& state) {
  const std::string wire = response_wire();
  beast::flat_buffer buffer;
  for (auto _ : state) {
    buffer.consume(buffer.size());
    buffer.commit(net::buffer_copy(buffer.prepare(wire.size()), net::buffer(wire.data(), wire.size())));
    http::response_parser<http::string_body> parser;
    parser.eager(true);
    beast::error_code ec;
    buffer.consume(parser.put(buffer.data(), ec));
    if (ec || !parser.is_done()) state.SkipWithError("not parsed");
    benchmark::DoNotOptimize(parser.get().body().data());
  }
}
BENCHMARK(BM_ResponseHead_Beast);

void BM_RequestBody_Fields(benchmark::State& state) {
  const std::string body = chat_body();
  for (auto _ : state) {
    auto parsed = parse_request(Route::kChatCompletions, body);
    if (!parsed) state.SkipWithError("rejected");
    benchmark::DoNotOptimize(parsed->info.prompt_tokens_estimate);
  }
}
BENCHMARK(BM_RequestBody_Fields);

void BM_RequestBody_Document(benchmark::State& state) {
  const std::string body = chat_body();
  for (auto _ : state) {
    boost::system::error_code ec;
    boost::json::value doc = boost::json::parse(body, ec);
    if (ec) state.SkipWithError("rejected");
    benchmark::DoNotOptimize(doc.as_object().if_contains("model"));
  }
}
BENCHMARK(BM_RequestBody_Document);

std::string completion_body() {
  std::string prompt;
  while (prompt.size() < 900) prompt += "def add(a, b):\\n    return a + b\\n";
  return R"({"model":"coder","prompt":")" + prompt + R"(","max_tokens":256,"temperature":0.1,"user":"dev-7"})";
}

void BM_CappedBody_InPlace(benchmark::State& state) {
  const std::string body = completion_body();
  for (auto _ : state) {
    auto parsed = parse_request(Route::kCompletions, body);
    if (!parsed || !apply_max_tokens_cap(*parsed, 128) || parsed->document_changed()) state.SkipWithError("not capped in place");
    benchmark::DoNotOptimize(parsed->text.data());
  }
}
BENCHMARK(BM_CappedBody_InPlace);

void BM_CappedBody_Document(benchmark::State& state) {
  const std::string body = completion_body();
  for (auto _ : state) {
    boost::json::object doc = boost::json::parse(body).as_object();
    doc["max_tokens"] = 128;
    std::string sent = boost::json::serialize(doc);
    benchmark::DoNotOptimize(sent.data());
  }
}
BENCHMARK(BM_CappedBody_Document);

}  // namespace
}  // namespace arbiter
