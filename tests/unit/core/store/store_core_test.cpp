// The store's pure parts: rows encoded and read back; the journal's framing
// read back up to a record a crash cut short; the audit chain catching an
// edited, removed or inserted row and a removed batch.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "core/store/audit_chain.hpp"
#include "core/store/audit_json.hpp"
#include "core/store/clean_text.hpp"
#include "core/store/journal_format.hpp"
#include "core/store/store_rows.hpp"

namespace arbiter::store {
namespace {

AuditRow audit_row(int i) {
  return {.ts_ms = 1'700'000'000'000 + i,
          .kind = i % 2 ? "dispatched" : "refused",
          .request_id = "req-" + std::to_string(i),
          .tenant = "alpha",
          .klass = "chat",
          .model = "m1",
          .detail = "stage=quota\treason=over\nits limit \\ " + std::to_string(i)};
}

// The row `bytes` decode to, as its own copy, to compare with what was encoded.
std::optional<Row> decode(std::string_view bytes) {
  const std::optional<RowView> view = decode_view(bytes);
  if (!view) return std::nullopt;
  if (const auto* u = std::get_if<UsageView>(&*view)) {
    return Row(UsageRow{.ts_ms = u->ts_ms, .request_id = std::string(u->request_id), .tenant = std::string(u->tenant),
                        .team = std::string(u->team), .model = std::string(u->model), .klass = std::string(u->klass),
                        .status = u->status, .prompt_tokens = u->prompt_tokens,
                        .completion_tokens = u->completion_tokens, .cached_tokens = u->cached_tokens,
                        .engine_ms = u->engine_ms, .cost = u->cost, .tokens_from = std::string(u->tokens_from)});
  }
  const auto& a = std::get<AuditView>(*view);
  return Row(AuditRow{.ts_ms = a.ts_ms, .kind = std::string(a.kind), .request_id = std::string(a.request_id),
                      .tenant = std::string(a.tenant), .klass = std::string(a.klass), .model = std::string(a.model),
                      .detail = std::string(a.detail)});
}

TEST(StoreRows, EveryRowReadsBackAsWritten) {
  std::mt19937 rng(7);
  for (int i = 0; i < 200; ++i) {
    const Row usage = UsageRow{.ts_ms = static_cast<int64_t>(rng()),
                               .request_id = std::string(rng() % 40, 'r'),
                               .tenant = "t" + std::to_string(rng()),
                               .team = "",
                               .model = std::string(1, '\0') + "m",
                               .klass = "chat",
                               .status = 200,
                               .prompt_tokens = static_cast<int64_t>(rng()),
                               .completion_tokens = -1,
                               .cached_tokens = 3,
                               .engine_ms = 1.25 * i,
                               .cost = 1e-9 * i,
                               .tokens_from = "events"};
    EXPECT_EQ(decode(encode(usage)), usage);
    const Row audit = audit_row(i);
    EXPECT_EQ(decode(encode(audit)), audit);
    // Cut anywhere, or with a byte more: not a row.
    const std::string bytes = encode(audit);
    EXPECT_FALSE(decode(std::string_view(bytes).substr(0, rng() % bytes.size())).has_value());
    EXPECT_FALSE(decode(bytes + "x").has_value());
  }
}

// As the observer writes them: a request's rows appended end to end into
// one buffer that is cleared and reused, growing as rows get longer; each
// reads back whole from where it starts to where the next does.
TEST(StoreRows, RowsAppendedToAReusedBufferReadBackEachWhole) {
  std::mt19937 rng(5);
  std::string buffer;
  for (int request = 0; request < 300; ++request) {
    buffer.clear();
    std::vector<Row> rows;
    std::vector<std::size_t> ends;
    for (int r = 0; r < 1 + static_cast<int>(rng() % 4); ++r) {
      AuditRow a = audit_row(request);
      a.detail = std::string(rng() % (request * 4 + 1), 'd');
      rows.push_back(a);
      encode_into(buffer, view_of(a));
      ends.push_back(buffer.size());
    }
    std::size_t from = 0;
    for (std::size_t i = 0; i < rows.size(); ++i) {
      EXPECT_EQ(decode(std::string_view(buffer).substr(from, ends[i] - from)), rows[i]) << request << " " << i;
      from = ends[i];
    }
  }
}

TEST(JournalFormat, RecordsReadBackUpToOneACrashCutShort) {
  std::string segment(4096, '\0');
  std::size_t at = 0;
  std::vector<std::string> payloads;
  for (uint64_t seq = 1; seq <= 10; ++seq) {
    payloads.push_back(std::string(seq * 7, static_cast<char>('a' + seq)));
    write_record(std::span<char>(segment.data() + at, record_size(payloads.back().size())), seq, payloads.back());
    at += record_size(payloads.back().size());
  }
  auto records = read_records(segment);
  ASSERT_EQ(records.size(), 10u);
  for (std::size_t i = 0; i < 10; ++i) {
    EXPECT_EQ(records[i].seq, i + 1);
    EXPECT_EQ(records[i].payload, payloads[i]);
    EXPECT_EQ(records[i].end % 8, 0u);
  }
  // The seventh's payload half written (its length already there): the
  // six before it are read, nothing after.
  std::string torn = segment;
  torn[records[5].end + kRecordHeader + 3] ^= 0x5a;
  EXPECT_EQ(read_records(torn).size(), 6u);
  EXPECT_TRUE(read_records(std::string(64, '\0')).empty());
}

// A journal an earlier version wrote (its records checked with XXH32 of the
// sequence number and the payload) still replays after an upgrade, and a
// record torn under either check is still refused.
TEST(JournalFormat, RecordsOfAnEarlierVersionStillReadBack) {
  const auto legacy_record = [](uint64_t seq, std::string_view payload) {
    std::string r(record_size(payload.size()), '\0');
    XXH32_state_t state;
    XXH32_reset(&state, 0x4a524e4c);
    XXH32_update(&state, &seq, sizeof seq);
    XXH32_update(&state, payload.data(), payload.size());
    const uint32_t check = XXH32_digest(&state);
    const auto length = static_cast<uint32_t>(payload.size());
    std::memcpy(r.data(), &length, 4);
    std::memcpy(r.data() + 4, &check, 4);
    std::memcpy(r.data() + 8, &seq, 8);
    std::memcpy(r.data() + kRecordHeader, payload.data(), payload.size());
    return r;
  };
  std::string segment = legacy_record(1, "old row one") + legacy_record(2, "old row two, longer");
  std::string fresh(record_size(9), '\0');
  write_record(fresh, 3, "a new row");
  segment += fresh + std::string(64, '\0');
  const auto records = read_records(segment);
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[0].payload, "old row one");
  EXPECT_EQ(records[1].payload, "old row two, longer");
  EXPECT_EQ(records[2].seq, 3u);
  std::string torn = segment;
  torn[record_size(11) + kRecordHeader + 2] ^= 0x20;  // the second's payload
  EXPECT_EQ(read_records(torn).size(), 1u);
}

std::vector<StoredBatch> trail(int batches, int rows_each) {
  std::vector<StoredBatch> out;
  std::string prev(kChainStart);
  int64_t seq = 1;
  for (int b = 1; b <= batches; ++b) {
    StoredBatch batch{.batch = b, .count = rows_each, .prev_hash = prev, .hash = {}, .rows = {}};
    for (int r = 0; r < rows_each; ++r, ++seq) batch.rows.emplace_back(seq, audit_row(static_cast<int>(seq)));
    batch.hash = batch_hash(prev, batch.rows);
    prev = batch.hash;
    out.push_back(std::move(batch));
  }
  return out;
}

TEST(AuditChain, TheHashCoversTheCanonicalLinesInOrder) {
  // The hasher streams the lines' bytes without building them: the same
  // hash as the lines written out and hashed whole.
  const auto batch = trail(1, 6)[0];
  std::string lines(kChainStart);
  for (const auto& [seq, row] : batch.rows) lines += canonical_line(seq, view_of(row));
  std::string whole;
  {
    std::vector<std::pair<int64_t, AuditRow>> none;
    whole = batch_hash(lines, none);  // the prefix alone: the lines as one "previous hash"
  }
  EXPECT_EQ(batch.hash, whole);
  const AuditRow third = audit_row(3);
  const std::string line = canonical_line(3, view_of(third));
  EXPECT_EQ(line.back(), '\n');
  EXPECT_NE(line.find("reason=over\\nits limit \\\\ 3"), std::string::npos) << line;
}

TEST(AuditChain, AnIntactTrailVerifiesAndEveryTamperingIsFound) {
  const auto intact = trail(5, 4);
  const Verdict ok = verify_chain(intact);
  EXPECT_TRUE(ok.ok) << ok.problem;
  EXPECT_EQ(ok.batches, 5);
  EXPECT_EQ(ok.rows, 20);

  auto edited = intact;
  edited[2].rows[1].second.detail += " ";
  EXPECT_NE(verify_chain(edited).problem.find("batch 3"), std::string::npos);

  auto removed_row = intact;
  removed_row[1].rows.erase(removed_row[1].rows.begin());
  EXPECT_FALSE(verify_chain(removed_row).ok);

  auto inserted = intact;
  inserted[3].rows.emplace_back(99, audit_row(99));
  EXPECT_FALSE(verify_chain(inserted).ok);

  auto removed_batch = intact;
  removed_batch.erase(removed_batch.begin() + 2);
  EXPECT_NE(verify_chain(removed_batch).problem.find("links to"), std::string::npos);

  // A recount to hide a removed row does not help: the hash still differs.
  auto recounted = removed_row;
  recounted[1].count -= 1;
  EXPECT_FALSE(verify_chain(recounted).ok);

  // The oldest batches gone by retention: the rest still verifies.
  auto pruned = intact;
  pruned.erase(pruned.begin(), pruned.begin() + 2);
  EXPECT_TRUE(verify_chain(pruned).ok);
}

// What PostgreSQL's text takes: valid UTF-8 and no NUL; cleaning keeps every
// valid sequence and replaces each byte of an invalid one, on random bytes.
TEST(CleanText, KeepsValidUtf8AndReplacesEachBadByte) {
  EXPECT_TRUE(is_clean_text("plain ascii"));
  EXPECT_TRUE(is_clean_text("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"));
  for (const std::string_view bad : {std::string_view("a\0b", 3), std::string_view("\xc3"), std::string_view("\xc0\xaf"),
                                     std::string_view("\xed\xa0\x80"), std::string_view("\xf4\x90\x80\x80"),
                                     std::string_view("\xff")}) {
    EXPECT_FALSE(is_clean_text(bad)) << testing::PrintToString(bad);
    EXPECT_TRUE(is_clean_text(clean_text(bad)));
  }
  EXPECT_EQ(clean_text(std::string_view("a\0b", 3)), "ab");
  EXPECT_EQ(clean_text("x\xffy"), "x\xef\xbf\xbdy");
  std::mt19937 rng(7);
  for (int i = 0; i < 2'000; ++i) {
    std::string bytes(rng() % 24, '\0');
    for (char& c : bytes) c = static_cast<char>(rng() % 4 == 0 ? rng() % 256 : 'a' + rng() % 26);
    const std::string cleaned = clean_text(bytes);
    EXPECT_TRUE(is_clean_text(cleaned));
    if (is_clean_text(bytes)) {
      EXPECT_EQ(cleaned, bytes);
    }
  }
}

// A whole store's trail: each replica's chain checked on its own; a batch
// whose rows do not parse fails it.
TEST(TrailCheck, ChecksEachReplicaAndFindsUnreadableRows) {
  const AuditRow row{.ts_ms = 1, .kind = "admitted", .request_id = "r", .tenant = "t", .klass = "c", .model = "m",
                     .detail = "d"};
  TrailCheck check;
  for (const std::string replica : {"a", "b"}) {
    AuditBatchBuilder batch(kChainStart);
    batch.add(1, view_of(row));
    const AuditBatchBuilder::Batch done = batch.finish();
    check.add_batch(replica,
                    {.batch = 1, .count = 1, .prev_hash = std::string(kChainStart), .hash = done.hash, .rows = {},
                     .form = ChainForm::kJson, .json = {}},
                    done.json);
  }
  Verdict v = check.verdict();
  EXPECT_TRUE(v.ok) << v.problem;
  EXPECT_EQ(v.batches, 2);
  EXPECT_EQ(v.rows, 2);
  check.add_batch("b", {.batch = 2, .count = 1, .prev_hash = "x", .hash = "y", .rows = {}}, "[[1,2,\"x\"]]");
  v = check.verdict();
  EXPECT_FALSE(v.ok);
  EXPECT_NE(v.problem.find("batch 2"), std::string::npos) << v.problem;
}

// A batch's rows through their JSON and back, whatever their text: control
// characters, quotes, non-ASCII, invalid UTF-8 (stored cleaned).
TEST(AuditJson, RowsComeBackAsWrittenAndCleaned) {
  std::mt19937 rng(11);
  for (int round = 0; round < 200; ++round) {
    std::vector<std::string> text(6);
    for (std::string& t : text) {
      t.resize(rng() % 12);
      for (char& c : t) c = static_cast<char>(rng() % 3 == 0 ? rng() % 256 : 'a' + rng() % 26);
    }
    const AuditView v{.ts_ms = static_cast<int64_t>(rng()), .kind = text[0], .request_id = text[1],
                      .tenant = text[2], .klass = text[3], .model = text[4], .detail = text[5]};
    AuditBatchBuilder batch(kChainStart);
    batch.add(7, v);
    batch.add(9, v);
    const AuditBatchBuilder::Batch done = batch.finish();
    const auto rows = parse_audit_json(done.json);
    ASSERT_TRUE(rows.has_value());
    ASSERT_EQ(rows->size(), 2u);
    EXPECT_EQ((*rows)[1].first, 9);
    const AuditRow& back = (*rows)[0].second;
    EXPECT_EQ(back.ts_ms, v.ts_ms);
    EXPECT_EQ(back.detail, clean_text(v.detail));
    EXPECT_EQ(back.request_id, clean_text(v.request_id));
    // What verify finds is what was chained; an edited byte is not.
    TrailCheck check;
    check.add_batch("a", {.batch = 1, .count = 2, .prev_hash = std::string(kChainStart), .hash = done.hash, .rows = {},
                          .form = ChainForm::kJson, .json = {}},
                    done.json);
    EXPECT_TRUE(check.verdict().ok) << check.verdict().problem;
    std::string edited = done.json;
    edited[edited.size() / 2] ^= 1;
    TrailCheck tampered;
    tampered.add_batch("a", {.batch = 1, .count = 2, .prev_hash = std::string(kChainStart), .hash = done.hash,
                             .rows = {}, .form = ChainForm::kJson, .json = {}},
                       edited);
    EXPECT_FALSE(tampered.verdict().ok);
  }
  EXPECT_FALSE(parse_audit_json("[[1,2,\"a\",\"b\",\"c\",\"d\",\"e\"]]"));  // a field short
  EXPECT_FALSE(parse_audit_json("{}"));
}

// The batch checks a row's text eight bytes at a time for bytes JSON must
// escape: every byte value, at every place of a word and of a tail, in any
// field, comes back as written (cleaned) and the JSON is exactly what the
// byte-at-a-time writer makes of the cleaned row.
TEST(AuditJson, EveryByteAtEveryPlaceIsEscapedOrKept) {
  for (std::size_t length = 1; length <= 19; ++length) {
    for (std::size_t at = 0; at < length; ++at) {
      for (int byte = 0; byte < 256; ++byte) {
        std::string text(length, 'q');
        text[at] = static_cast<char>(byte);
        const int field = static_cast<int>((length + at + static_cast<std::size_t>(byte)) % 3);
        const AuditView v{.ts_ms = 5, .kind = field == 0 ? std::string_view(text) : "k", .request_id = "r",
                          .tenant = field == 1 ? std::string_view(text) : "t", .klass = "c", .model = "m",
                          .detail = field == 2 ? std::string_view(text) : "d"};
        AuditBatchBuilder batch(kChainStart);
        batch.add(3, v);
        const std::string json = batch.finish().json;
        const std::string cleaned = clean_text(text);
        AuditView expected_view = v;
        (field == 0 ? expected_view.kind : field == 1 ? expected_view.tenant : expected_view.detail) = cleaned;
        std::string expected = "[";
        append_audit_json(expected, 3, expected_view);
        expected += ']';
        ASSERT_EQ(json, expected) << "length " << length << ", byte " << byte << " at " << at;
        const auto rows = parse_audit_json(json);
        ASSERT_TRUE(rows.has_value()) << json;
        const AuditRow& back = (*rows)[0].second;
        EXPECT_EQ(field == 0 ? back.kind : field == 1 ? back.tenant : back.detail, cleaned);
      }
    }
  }
}

}  // namespace
}  // namespace arbiter::store
