#include "gateway/stages/cache/stored_value.hpp"

#include <cstring>

#include <boost/beast/zlib/deflate_stream.hpp>
#include <boost/beast/zlib/inflate_stream.hpp>

namespace arbiter {
namespace {

namespace zlib = boost::beast::zlib;

constexpr uint8_t kVersion = 1;
// The largest raw answer read back (a corrupt length asks for no more).
constexpr std::size_t kMaxRaw = 64u << 20;

template <class T>
void put(std::string& out, T v) {
  char bytes[sizeof v];
  std::memcpy(bytes, &v, sizeof v);
  out.append(bytes, sizeof v);
}
void put_text(std::string& out, std::string_view s) {
  put<uint32_t>(out, static_cast<uint32_t>(s.size()));
  out.append(s);
}

// Reads from the front of `in`; false when it is too short.
template <class T>
bool take(std::string_view& in, T& v) {
  if (in.size() < sizeof v) return false;
  std::memcpy(&v, in.data(), sizeof v);
  in.remove_prefix(sizeof v);
  return true;
}
bool take_text(std::string_view& in, std::string& s) {
  uint32_t n = 0;
  if (!take(in, n) || in.size() < n) return false;
  s.assign(in.substr(0, n));
  in.remove_prefix(n);
  return true;
}

// One zlib pass's buffers: all of `in`, into all of `out`.
zlib::z_params over(std::string_view in, std::string& out) {
  zlib::z_params zs{};
  zs.next_in = in.data();
  zs.avail_in = in.size();
  zs.next_out = out.data();
  zs.avail_out = out.size();
  return zs;
}

std::string deflate(std::string_view raw) {
  zlib::deflate_stream ds;
  ds.reset(1, 15, 8, zlib::Strategy::normal);  // fastest level: answers are text, still ~3x smaller
  std::string out(ds.upper_bound(raw.size()), '\0');
  zlib::z_params zs = over(raw, out);
  boost::system::error_code ec;
  ds.write(zs, zlib::Flush::finish, ec);
  out.resize(zs.total_out);
  return out;
}

std::optional<std::string> inflate(std::string_view packed, std::size_t size) {
  if (size > kMaxRaw) return std::nullopt;
  zlib::inflate_stream is;
  is.reset(15);
  std::string out(size, '\0');
  zlib::z_params zs = over(packed, out);
  boost::system::error_code ec;
  is.write(zs, zlib::Flush::finish, ec);
  if ((ec && ec != zlib::error::end_of_stream) || zs.total_out != size) return std::nullopt;
  return out;
}

}  // namespace

std::string encode_stored(const StoredValue& v) {
  const cache::StoredAnswer& a = v.answer;
  std::string out;
  put<uint8_t>(out, kVersion);
  put<uint8_t>(out, static_cast<uint8_t>(a.route));
  put<uint8_t>(out, a.stream ? 1 : 0);
  put<uint8_t>(out, a.usage ? 1 : 0);
  const Usage u = a.usage.value_or(Usage{});
  put<int64_t>(out, u.prompt_tokens);
  put<int64_t>(out, u.completion_tokens);
  put<int64_t>(out, u.cached_tokens);
  put<int64_t>(out, v.stored_at_ms);
  put_text(out, v.scope);
  put_text(out, v.model);
  put<uint32_t>(out, static_cast<uint32_t>(a.raw.size()));
  out += deflate(a.raw);
  return out;
}

std::optional<StoredValue> decode_stored(std::string_view in) {
  uint8_t version = 0, route = 0, stream = 0, has_usage = 0;
  Usage u;
  StoredValue v;
  uint32_t raw_size = 0;
  if (!take(in, version) || version != kVersion || !take(in, route) || route > 2 || !take(in, stream) ||
      !take(in, has_usage) || !take(in, u.prompt_tokens) || !take(in, u.completion_tokens) ||
      !take(in, u.cached_tokens) || !take(in, v.stored_at_ms) || !take_text(in, v.scope) ||
      !take_text(in, v.model) || !take(in, raw_size)) {
    return std::nullopt;
  }
  auto raw = inflate(in, raw_size);
  if (!raw) return std::nullopt;
  v.answer = cache::StoredAnswer{.route = static_cast<Route>(route),
                                 .answer = std::nullopt,
                                 .stream = stream != 0,
                                 .raw = std::move(*raw),
                                 .usage = has_usage ? std::optional<Usage>(u) : std::nullopt};
  return v;
}

}  // namespace arbiter
