// Readers and writers of one table row, by the kind of value a key takes:
// the pieces the key tables (yaml/setting_keys.cpp, and the gateway's list
// entries, gateway/config_entries.cpp) are built from. A reader gets the
// key's value node and its full path and leaves the setting as it was when
// the value is refused (the error is recorded); a writer gives the setting
// as YAML text, or "" to leave the key out (an optional setting not set).
#pragma once

#include <charconv>
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "core/scheduler_config.hpp"
#include "yaml/yaml_reader.hpp"

namespace arbiter::setting_rows {

using sched::Duration;
using std::chrono::milliseconds;

// The longest duration a key takes (30 days): a queue deadline beyond it
// is written as it.
constexpr int64_t kLongestMs = 30LL * 24 * 3600 * 1000;
constexpr int64_t kDayMs = 24LL * 3600 * 1000;

inline int64_t to_ms(Duration d) {
  if (d >= std::chrono::duration_cast<Duration>(milliseconds(kLongestMs))) return kLongestMs;
  return std::chrono::duration_cast<milliseconds>(d).count();
}
inline int64_t to_ms(milliseconds d) { return d.count(); }

// Readers and writers of one member, by kind. A reader gets the key's value
// node and its full path; the table's key names it.
template <class S, auto Member, double Min, double Max>
void read_number(YamlReader& r, const YAML::Node& v, const std::string& path, S& s) {
  if (auto d = r.number(v, path, Min, Max)) s.*Member = *d;
}
template <class S, auto Member>
std::string write_number(const S& s) {
  return YamlReader::format_number(s.*Member);
}

template <class S, auto Member, int64_t Min, int64_t Max>
void read_integer(YamlReader& r, const YAML::Node& v, const std::string& path, S& s) {
  using Int = std::remove_reference_t<decltype(s.*Member)>;
  if (auto i = r.integer(v, path, Min, Max)) s.*Member = static_cast<Int>(*i);
}
template <class S, auto Member>
std::string write_integer(const S& s) {
  return std::to_string(s.*Member);
}

template <class S, auto Member>
void read_bool(YamlReader& r, const YAML::Node& v, const std::string& path, S& s) {
  if (auto b = r.boolean(v, path)) s.*Member = *b;
}
template <class S, auto Member>
std::string write_bool(const S& s) {
  return s.*Member ? "true" : "false";
}

template <class S, auto Member>
void read_text(YamlReader& r, const YAML::Node& v, const std::string& path, S& s) {
  if (auto text = r.scalar(v, path)) s.*Member = *text;
}
template <class S, auto Member>
std::string write_text(const S& s) {
  return YamlReader::quote(s.*Member);  // quoted: "::" or "a, b" stay one value
}

// Whole milliseconds into any std::chrono duration member.
template <class S, auto Member, int64_t Min, int64_t Max>
void read_ms(YamlReader& r, const YAML::Node& v, const std::string& path, S& s) {
  using D = std::remove_reference_t<decltype(s.*Member)>;
  if (auto ms = r.integer(v, path, Min, Max)) s.*Member = std::chrono::duration_cast<D>(milliseconds(*ms));
}
template <class S, auto Member>
std::string write_ms(const S& s) {
  return std::to_string(to_ms(s.*Member));
}

// Milliseconds with a fraction (43.75) into a Duration member.
template <class S, auto Member, double Min, double Max>
void read_fractional_ms(YamlReader& r, const YAML::Node& v, const std::string& path, S& s) {
  if (auto ms = r.number(v, path, Min, Max)) {
    s.*Member = std::chrono::duration_cast<Duration>(std::chrono::duration<double, std::milli>(*ms));
  }
}
template <class S, auto Member>
std::string write_fractional_ms(const S& s) {
  return YamlReader::format_number(std::chrono::duration<double, std::milli>(s.*Member).count());
}

// Bytes: an integer, or one with a KiB / MiB / GiB suffix.
template <class S, auto Member>
void read_size(YamlReader& r, const YAML::Node& v, const std::string& path, S& s) {
  auto text = r.scalar(v, path);
  if (!text) return;
  uint64_t mult = 1;
  for (auto [suffix, m] : {std::pair{"KiB", 1ull << 10}, {"MiB", 1ull << 20}, {"GiB", 1ull << 30}}) {
    if (text->size() > 3 && text->ends_with(suffix)) {
      mult = m;
      text->resize(text->size() - 3);
    }
  }
  uint64_t n = 0;
  auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), n);
  if (ec != std::errc{} || end != text->data() + text->size() || n == 0) {
    r.error(path, "must be a positive size in bytes, optionally with KiB, MiB or GiB");
    return;
  }
  s.*Member = static_cast<std::size_t>(n * mult);
}
template <class S, auto Member>
std::string write_size(const S& s) {
  const std::size_t n = s.*Member;
  for (auto [suffix, m] : {std::pair{"GiB", 1ull << 30}, {"MiB", 1ull << 20}, {"KiB", 1ull << 10}}) {
    if (n % m == 0) return std::to_string(n / m) + suffix;
  }
  return std::to_string(n);
}

// Optional settings: set only when the key is given; left out when unset.
template <class S, auto Member, double Min, double Max>
void read_optional_number(YamlReader& r, const YAML::Node& v, const std::string& path, S& s) {
  if (auto d = r.number(v, path, Min, Max)) s.*Member = *d;
}
template <class S, auto Member>
std::string write_optional_number(const S& s) {
  return s.*Member ? YamlReader::format_number(*(s.*Member)) : std::string();
}

template <class S, auto Member, int64_t Min, int64_t Max>
void read_optional_integer(YamlReader& r, const YAML::Node& v, const std::string& path, S& s) {
  using Int = typename std::remove_reference_t<decltype(s.*Member)>::value_type;
  if (auto i = r.integer(v, path, Min, Max)) s.*Member = static_cast<Int>(*i);
}
template <class S, auto Member>
std::string write_optional_integer(const S& s) {
  return s.*Member ? std::to_string(*(s.*Member)) : std::string();
}

template <class S, auto Member>
void read_optional_bool(YamlReader& r, const YAML::Node& v, const std::string& path, S& s) {
  if (auto b = r.boolean(v, path)) s.*Member = *b;
}
template <class S, auto Member>
std::string write_optional_bool(const S& s) {
  return s.*Member ? (*(s.*Member) ? "true" : "false") : std::string();
}

// Text that may be left out (a file not named): not written when empty.
template <class S, auto Member>
std::string write_text_if_set(const S& s) {
  return (s.*Member).empty() ? std::string() : YamlReader::quote(s.*Member);
}

// A name a table marks required: given, and not empty.
template <class S, auto Member>
void read_name(YamlReader& r, const YAML::Node& v, const std::string& path, S& s) {
  if (auto text = r.scalar(v, path)) {
    if (text->empty()) r.error(path, "must not be empty");
    s.*Member = *text;
  }
}

// Whole seconds into a std::chrono duration member.
template <class S, auto Member, int64_t Min, int64_t Max>
void read_seconds(YamlReader& r, const YAML::Node& v, const std::string& path, S& s) {
  if (auto n = r.integer(v, path, Min, Max)) s.*Member = std::chrono::seconds(*n);
}
template <class S, auto Member>
std::string write_seconds(const S& s) {
  return std::to_string(std::chrono::duration_cast<std::chrono::seconds>(s.*Member).count());
}

// A list of text values, [a, b]: each item a single value.
inline std::vector<std::string> read_string_list(YamlReader& r, const YAML::Node& v, const std::string& path) {
  std::vector<std::string> out;
  if (!r.sequence(v, path)) return out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (auto item = r.scalar(v[i], YamlReader::index(path, i))) out.push_back(*item);
  }
  return out;
}
inline std::string flow_list(const std::vector<std::string>& items) {
  std::string out = "[";
  for (const auto& item : items) out += (out.size() > 1 ? ", " : "") + item;
  return out + "]";
}
template <class S, auto Member>
void read_strings(YamlReader& r, const YAML::Node& v, const std::string& path, S& s) {
  for (auto& item : read_string_list(r, v, path)) (s.*Member).push_back(std::move(item));
}
template <class S, auto Member>
std::string write_strings(const S& s) {
  std::vector<std::string> quoted;
  for (const auto& item : s.*Member) quoted.push_back(YamlReader::quote(item));
  return flow_list(quoted);
}

}  // namespace arbiter::setting_rows
