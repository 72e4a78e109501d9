#include "core/cache/near_duplicate.hpp"

#include <algorithm>
#include <unordered_set>

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace arbiter::cache {
namespace {

// Dropped words: articles, politeness, filler, the present copula and
// contraction tails ('s 're 'm 'll 've 'd).
bool filler(std::string_view w) {
  static const std::unordered_set<std::string_view> kWords = {
      "a",    "an",    "the",  "please", "pls",   "kindly", "could", "can",  "would", "you",  "u",  "me",
      "tell", "hey",   "hi",   "hello",  "thanks", "thank", "just",  "is",   "are",   "am",   "s",  "re",
      "m",    "ll",    "ve",   "d",      "so",    "well",   "um",    "uh",   "ok",    "okay", "quick", "question"};
  return kWords.contains(w);
}

bool letter(unsigned char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0x80; }
bool digit(unsigned char c) { return c >= '0' && c <= '9'; }
bool space(unsigned char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
// Punctuation of prose: no token.
bool soft(unsigned char c) {
  return c == '.' || c == ',' || c == '!' || c == '?' || c == ';' || c == ':' || c == '\'' || c == '"' || c == '`';
}

uint64_t hash(std::string_view s) { return XXH3_64bits(s.data(), s.size()); }

class Tokenizer {
 public:
  explicit Tokenizer(NearText& out) : out_(out) {}

  // One JSON string's text (escapes still in it); `words`: it is prompt
  // text, not a key or a role.
  void string(std::string_view s, bool words) {
    std::string word;
    const auto flush = [&] {
      if (!word.empty()) emit(word, words);
      word.clear();
    };
    for (std::size_t i = 0; i < s.size(); ++i) {
      const auto c = static_cast<unsigned char>(s[i]);
      if (c == '\\' && i + 1 < s.size()) {  // \n \t \" \uXXXX: a separator
        flush();
        i += s[i + 1] == 'u' ? 5 : 1;
        continue;
      }
      if (letter(c)) {
        word += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
      } else if (digit(c) || ((c == '.' || c == ',') && !word.empty() && digit(word.back()) && i + 1 < s.size() &&
                              digit(static_cast<unsigned char>(s[i + 1])))) {
        word += static_cast<char>(c);
      } else if (c == '\'' && !word.empty() && i + 2 < s.size() && s[i + 1] == 't' && word.back() == 'n' &&
                 !letter(static_cast<unsigned char>(s[i + 2]))) {
        word.pop_back();  // don't -> do not
        flush();
        emit("not", words);
        ++i;
      } else {
        flush();
        if (!space(c) && !soft(c)) emit(std::string(1, static_cast<char>(c)), words);
      }
    }
    flush();
  }

 private:
  void emit(std::string word, bool words) {
    if (words && filler(word)) return;
    if (words && word.size() >= 4 && word.back() == 's' && word[word.size() - 2] != 's') word.pop_back();
    if (!words) word.insert(0, 1, '\x01');  // structure: never equal to a word
    if (!out_.tokens.empty()) out_.tokens += ' ';
    out_.tokens += word;
    out_.hashes.push_back(hash(word));
    if (words) ++out_.words;
  }

  NearText& out_;
};

std::vector<std::string_view> split(std::string_view tokens) {
  std::vector<std::string_view> out;
  while (!tokens.empty()) {
    const std::size_t sp = tokens.find(' ');
    out.push_back(tokens.substr(0, sp));
    tokens = sp == std::string_view::npos ? std::string_view() : tokens.substr(sp + 1);
  }
  return out;
}

// A typo of one word for the other, in words of 7+ letters (shorter ones
// make real words of each other: casual and causal, trial and trail): an
// adjacent swap, or one letter more.
bool typo(std::string_view a, std::string_view b) {
  if (a.size() == b.size()) {
    if (a.size() < 7) return false;
    std::size_t i = 0;
    while (i < a.size() && a[i] == b[i]) ++i;
    return i + 1 < a.size() && a[i] == b[i + 1] && a[i + 1] == b[i] && a.substr(i + 2) == b.substr(i + 2);
  }
  if (a.size() > b.size()) std::swap(a, b);
  if (a.size() < 7 || b.size() != a.size() + 1) return false;
  std::size_t i = 0;
  while (i < a.size() && a[i] == b[i]) ++i;
  return a.substr(i) == b.substr(i + 1);
}

bool is_word(std::string_view t) { return !t.empty() && t[0] != '\x01'; }

}  // namespace

NearText near_text(std::string_view json) {
  NearText out;
  Tokenizer tokens(out);
  // Strings only: a key (followed by ':') and the values of keys other than
  // content and text (roles, part types) are structure.
  std::string_view last_key;
  for (std::size_t i = 0; i < json.size(); ++i) {
    if (json[i] != '"') continue;
    std::size_t end = i + 1;
    while (end < json.size() && json[end] != '"') end += json[end] == '\\' ? 2 : 1;
    if (end >= json.size()) break;
    const std::string_view s = json.substr(i + 1, end - i - 1);
    std::size_t next = end + 1;
    while (next < json.size() && space(static_cast<unsigned char>(json[next]))) ++next;
    const bool key = next < json.size() && json[next] == ':';
    const bool words = !key && (last_key.empty() || last_key == "content" || last_key == "text");
    tokens.string(s, words);
    if (key) last_key = s;
    i = end;
  }
  std::vector<uint64_t> distinct = out.hashes;
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  out.sketch_size = std::min(distinct.size(), NearText::kSketch);
  std::copy_n(distinct.begin(), out.sketch_size, out.sketch.begin());
  return out;
}

double near_similarity(const NearText& a, const NearText& b) {
  if (a.hashes.size() != b.hashes.size() || a.words == 0) return 0;
  if (a.tokens == b.tokens) return 1;
  const std::vector<std::string_view> ta = split(a.tokens);
  const std::vector<std::string_view> tb = split(b.tokens);
  if (ta.size() != a.hashes.size() || tb.size() != b.hashes.size()) return 0;
  std::size_t words = 0;
  std::size_t typos = 0;
  for (std::size_t i = 0; i < ta.size(); ++i) {
    words += is_word(ta[i]) ? 1 : 0;
    if (a.hashes[i] == b.hashes[i]) continue;
    if (!is_word(ta[i]) || !is_word(tb[i]) || !typo(ta[i], tb[i])) return 0;
    ++typos;
  }
  return words == 0 ? 0 : static_cast<double>(words - typos) / static_cast<double>(words);
}

}  // namespace arbiter::cache
