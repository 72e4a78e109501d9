#include "core/cache/near_duplicate.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <span>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "core/word_bytes.hpp"

namespace arbiter::cache {
namespace {

// A word of up to 8 bytes as one integer (little-endian, zero-padded).
constexpr uint64_t packed(std::string_view w) {
  uint64_t v = 0;
  for (std::size_t i = 0; i < w.size() && i < 8; ++i) v |= static_cast<uint64_t>(static_cast<unsigned char>(w[i])) << (8 * i);
  return v;
}

// Dropped words: articles, politeness, filler, the present copula and
// contraction tails ('s 're 'm 'll 've 'd).
constexpr std::string_view kFillers[] = {
    "a",    "u",     "s",     "m",     "d",      "an",     "me",     "hi",    "is",   "re",   "ll",
    "ve",   "so",    "am",    "um",    "uh",     "ok",     "the",    "pls",   "can",  "you",  "hey",
    "are",  "tell",  "just",  "well",  "okay",   "could",  "would",  "hello", "thank", "quick", "please",
    "kindly", "thanks", "question"};

// The fillers as integers in a table where each sits in its home slot or
// the next: a word of up to 8 bytes is one of them when its integer is in
// either (a word's integer has no zero byte inside it, so words of other
// lengths never compare equal). One multiply and two compares, no probe
// loop, where a scan of the fillers of its length cost a few compares a
// word.
struct FillerTable {
  static constexpr std::size_t kMaxLength = 8;
  static constexpr int kBits = 8;                             // 256 homes for 38 fillers
  std::array<uint64_t, (std::size_t{1} << kBits) + 1> slots{};  // 0: empty; the last: the last home's next
  bool placed = true;                                         // every filler in its home or the next
  static constexpr std::size_t home(uint64_t v) { return (v * 0x9e3779b97f4a7c15ULL) >> (64 - kBits); }
  constexpr FillerTable() {
    for (const std::string_view f : kFillers) {
      const std::size_t i = home(packed(f));
      uint64_t& at = slots[i] == 0 ? slots[i] : slots[i + 1];
      placed = placed && at == 0;
      at = packed(f);
    }
  }
};

constexpr FillerTable kFillerTable;
static_assert(kFillerTable.placed, "a filler's home and the next slot are taken: change kBits");

// `v`: the word's bytes as packed() reads them.
bool filler(uint64_t v, std::size_t size) {
  const std::size_t i = FillerTable::home(v);
  return size - 1 < FillerTable::kMaxLength && v != 0 &&
         (kFillerTable.slots[i] == v) | (kFillerTable.slots[i + 1] == v);
}

// The first min(n, 8) bytes at `p` as packed() reads them; 8 bytes at `p`
// must be readable (the tokenizer's buffer has the room).
uint64_t load_packed(const char* p, std::size_t n) {
  const uint64_t v = load8(p);
  return n >= 8 ? v : v & ((uint64_t{1} << (8 * n)) - 1);
}

enum CharKind : uint8_t { kOther, kLetter, kUpper, kDigit, kSpace, kSoft, kBackslash };

constexpr std::array<uint8_t, 256> kKinds = [] {
  std::array<uint8_t, 256> k{};
  for (int c = 'a'; c <= 'z'; ++c) k[c] = kLetter;
  for (int c = 'A'; c <= 'Z'; ++c) k[c] = kUpper;
  for (int c = 0x80; c < 0x100; ++c) k[c] = kLetter;  // UTF-8 bytes: part of a word
  for (int c = '0'; c <= '9'; ++c) k[c] = kDigit;
  for (const char c : {' ', '\t', '\n', '\r'}) k[static_cast<unsigned char>(c)] = kSpace;
  // Punctuation of prose: no token.
  for (const char c : {'.', ',', '!', '?', ';', ':', '\'', '"', '`'}) k[static_cast<unsigned char>(c)] = kSoft;
  k['\\'] = kBackslash;
  return k;
}();

uint8_t kind(char c) { return kKinds[static_cast<unsigned char>(c)]; }

// Eight bytes a step, in plain word arithmetic: which bytes of a word
// (little-endian) are part of a text's word, and the word lowered. The
// tests are exact per byte: the sums below never carry out of a byte.
//
// 0x80 in each byte of `y` (every byte below 0x80) within [lo, hi].
constexpr uint64_t in_range(uint64_t y, uint8_t lo, uint8_t hi) {
  return (y + kEveryByte * (0x80 - lo)) & ~(y + kEveryByte * (0x7f - hi)) & kHighBits;
}

struct WordBytes {
  uint64_t word;     // 0x80 in each letter, digit and UTF-8 byte: kKinds' word bytes
  uint64_t lowered;  // the bytes, ASCII upper case lowered
};

constexpr WordBytes word_bytes(uint64_t x) {
  const uint64_t high = x & kHighBits;  // UTF-8 bytes: part of a word, kept as they are
  const uint64_t y = x & ~kHighBits;
  const uint64_t letter = in_range(y | kEveryByte * 0x20, 'a', 'z') & ~high;
  const uint64_t upper = letter & ~(y << 2);  // bit 5 clear: A-Z (shifted up to bit 7)
  return {(letter | (in_range(y, '0', '9') & ~high)) | high, x | (upper >> 2)};
}

// A token's hash: a word of up to 8 bytes as one integer, mixed; longer
// ones through XXH3.
uint64_t mix_packed(uint64_t v, std::size_t n) {
  v ^= n * 0x9e3779b97f4a7c15ULL;
  v *= 0xbf58476d1ce4e5b9ULL;
  return v ^ (v >> 31);
}
uint64_t token_hash(const char* p, std::size_t n) { return n > 8 ? XXH3_64bits(p, n) : mix_packed(load_packed(p, n), n); }

// Writes tokens into a buffer the caller sized (three bytes out per byte in
// at most: a one-byte token with its space and structure mark; and 16 more,
// for a word's last eight-byte step and load_packed at the last token): a
// word is written at the cursor, then kept (hashed) or taken back (a filler).
class Tokenizer {
 public:
  // `hashes`: room for one a byte of the text read.
  Tokenizer(char* buffer, uint64_t* hashes) : begin_(buffer), at_(buffer), hashes_(hashes), hashes_at_(hashes) {}

  std::size_t size() const { return static_cast<std::size_t>(at_ - begin_); }
  std::span<const uint64_t> hashes() const { return {hashes_, hashes_at_}; }
  std::size_t words() const { return words_read_; }

  // One JSON string's text (escapes still in it); `words`: it is prompt
  // text, not a key or a role.
  void string(std::string_view s, bool words) {
    words_ = words;
    const char* p = s.data();
    const char* const end = p + s.size();
    while (p < end) {
      const char c = *p;
      const uint8_t k = kind(c);
      if (k == kLetter || k == kUpper || k == kDigit) {
        if (!word_ && words_ && short_word(p, end)) continue;
        if (!word_) start();
        p = word_run(p, end);
        // The usual end of a word: a space, read here.
        if (p < end && *p == ' ') {
          end_word();
          ++p;
        }
        continue;
      }
      switch (k) {
        case kBackslash:  // \n \t \" \uXXXX: a separator
          finish();
          p += p + 1 < end && p[1] == 'u' ? 6 : 2;
          continue;
        case kSoft:
          if ((c == '.' || c == ',') && word_ && kind(at_[-1]) == kDigit && p + 1 < end && kind(p[1]) == kDigit) {
            put(c);  // 3.14, 1,000
          } else if (c == '\'' && word_ && at_[-1] == 'n' && p + 2 < end && p[1] == 't' && kind(p[2]) != kLetter &&
                     kind(p[2]) != kUpper) {
            --at_;  // don't -> do not
            end_word();
            start();
            for (const char n : {'n', 'o', 't'}) put(n);
            end_word();
            ++p;
          } else {
            finish();
          }
          break;
        case kSpace: finish(); break;
        default:  // an operator or a bracket: a token of its own
          finish();
          start();
          put(c);
          end_word();
      }
      ++p;
    }
    finish();
  }

 private:
  void start() {
    if (at_ != begin_) *at_++ = ' ';
    if (!words_) *at_++ = '\x01';  // structure: never equal to a word
    word_ = at_;
  }
  void put(char c) { *at_++ = c; }
  // The run of word bytes from `p`, lowered, written at the cursor eight
  // bytes a step (the buffer has room for the last step's spill); returns
  // where the run ends. `p` is a word byte by kKinds: the first step takes
  // it as such, so a run always moves on.
  const char* word_run(const char* p, const char* end) {
    for (uint64_t taken = 0x80;; taken = 0) {
      const auto left = static_cast<std::size_t>(end - p);
      uint64_t x = 0;  // past the end: zero bytes, which end a run
      if (left >= 8) {
        x = load8(p);
      } else {
        std::memcpy(&x, p, left);
      }
      const WordBytes w = word_bytes(x);
      const uint64_t stops = ~(w.word | taken) & kHighBits;
      const std::size_t run = stops == 0 ? 8 : static_cast<std::size_t>(std::countr_zero(stops)) / 8;
      std::memcpy(at_, &w.lowered, 8);
      at_ += run;
      p += run;
      if (run < 8) return p;
    }
  }
  // Most of a prompt: a word of up to seven bytes and a space. Read in one
  // step, kept or dropped as end_word() would, and `p` moved past the
  // space; false (nothing read) for any other word.
  bool short_word(const char*& p, const char* end) {
    if (end - p < 9) return false;
    const WordBytes w = word_bytes(load8(p));
    const uint64_t stops = ~(w.word | 0x80) & kHighBits;  // the first byte is a word's (as in word_run)
    if (stops == 0) return false;
    std::size_t size = static_cast<std::size_t>(std::countr_zero(stops)) / 8;
    if (p[size] != ' ') return false;
    uint64_t v = w.lowered & ((uint64_t{1} << (8 * size)) - 1);
    p += size + 1;
    if (filler(v, size)) return true;
    const auto byte = [&](std::size_t i) { return static_cast<char>(v >> (8 * i)); };
    if (plural(size, byte(size - 1), byte(size - 2))) v &= (uint64_t{1} << (8 * --size)) - 1;
    if (at_ != begin_) *at_++ = ' ';
    std::memcpy(at_, &v, 8);
    at_ += size;
    *hashes_at_++ = mix_packed(v, size);
    ++words_read_;
    return true;
  }
  void finish() {
    if (word_) end_word();
  }
  // A word of `size` bytes ending in `last` after `before`: a plural, whose
  // s is dropped (cats -> cat; not glass, nor a word under four bytes).
  static bool plural(std::size_t size, char last, char before) { return size >= 4 && last == 's' && before != 's'; }
  // The word being read is a token: kept (hashed) or taken back (a filler).
  void end_word() {
    char* const token = word_ - (words_ ? 0 : 1);
    const auto size = static_cast<std::size_t>(at_ - word_);
    word_ = nullptr;
    if (size == 0 || (words_ && filler(load_packed(token, size), size))) {
      at_ = token == begin_ ? begin_ : token - 1;  // the word and the space before it
      return;
    }
    if (words_ && plural(size, at_[-1], at_[-2])) --at_;
    *hashes_at_++ = token_hash(token, static_cast<std::size_t>(at_ - token));
    words_read_ += words_ ? 1 : 0;
  }

  char* const begin_;
  char* at_;
  uint64_t* const hashes_;
  uint64_t* hashes_at_;
  std::size_t words_read_ = 0;
  bool words_ = true;
  char* word_ = nullptr;  // where the word being read starts; null between words
};

// Feeds the JSON text's strings to `tokens`: a key (followed by ':') and
// the values of keys other than content and text (roles, part types) are
// structure.
void walk_strings(std::string_view json, Tokenizer& tokens) {
  std::string_view last_key;
  for (std::size_t i = json.find('"'); i < json.size(); i = json.find('"', i + 1)) {
    // The closing quote: the next one not escaped (an odd run of
    // backslashes before it).
    std::size_t end = i;
    for (;;) {
      end = json.find('"', end + 1);
      if (end == std::string_view::npos) break;
      std::size_t slashes = 0;
      while (json[end - 1 - slashes] == '\\') ++slashes;
      if (slashes % 2 == 0) break;
    }
    if (end == std::string_view::npos) break;
    const std::string_view s = json.substr(i + 1, end - i - 1);
    std::size_t next = end + 1;
    while (next < json.size() && kind(json[next]) == kSpace) ++next;
    const bool key = next < json.size() && json[next] == ':';
    const bool words = !key && (last_key.empty() || last_key == "content" || last_key == "text");
    tokens.string(s, words);
    if (key) last_key = s;
    i = end;
  }
}

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
  // Tokenized into this thread's scratch buffers (sized for the worst case:
  // 3 bytes out per byte in, and a token a byte), then copied out at their
  // size: the index keeps a NearText for each answer, and buffers sized for
  // the worst case held about twice the bytes it counts (NearText::bytes)
  // and churned the allocator at every miss.
  thread_local std::string tokens;
  thread_local std::vector<uint64_t> hashes;
  if (hashes.size() < json.size() + 1) hashes.resize(json.size() + 1);
  NearText out;
  tokens.resize_and_overwrite(3 * json.size() + 16, [&](char* buffer, std::size_t) {
    Tokenizer tokenizer(buffer, hashes.data());
    walk_strings(json, tokenizer);
    const std::span<const uint64_t> read = tokenizer.hashes();
    out.hashes.assign(read.begin(), read.end());
    out.words = tokenizer.words();
    return tokenizer.size();
  });
  out.tokens = tokens;
  // The kSketch smallest distinct hashes, in one pass.
  std::array<uint64_t, NearText::kSketch>& k = out.sketch;
  std::size_t& n = out.sketch_size;
  for (const uint64_t h : out.hashes) {
    if (n == NearText::kSketch && h >= k[n - 1]) continue;
    if (std::find(k.begin(), k.begin() + static_cast<std::ptrdiff_t>(n), h) != k.begin() + static_cast<std::ptrdiff_t>(n)) continue;
    std::size_t at = n < NearText::kSketch ? n++ : n - 1;
    for (; at > 0 && k[at - 1] > h; --at) k[at] = k[at - 1];
    k[at] = h;
  }
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
