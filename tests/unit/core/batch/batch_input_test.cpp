#include "core/batch/batch_input.hpp"

#include <gtest/gtest.h>

namespace arbiter::batch {
namespace {

std::string line(const std::string& id, const std::string& body = R"({"model":"m","messages":[]})",
                 const std::string& url = "/v1/chat/completions") {
  return R"({"custom_id":")" + id + R"(","method":"POST","url":")" + url + R"(","body":)" + body + "}";
}

TEST(BatchInput, ReadsEveryLineAndSkipsBlankOnes) {
  const Input in = read_input(line("a") + "\n\n" + line("b") + "\r\n", 10);
  ASSERT_TRUE(in.errors.empty()) << describe(in.errors);
  ASSERT_EQ(in.lines.size(), 2u);
  EXPECT_EQ(in.lines[0].custom_id, "a");
  EXPECT_EQ(in.lines[1].custom_id, "b");
  EXPECT_EQ(in.lines[0].url, "/v1/chat/completions");
  EXPECT_EQ(in.lines[0].body, R"({"model":"m","messages":[]})");
}

TEST(BatchInput, NamesTheLineOfEveryError) {
  const std::string text = line("a") + "\n" +                                    // 1: fine
                           "{not json\n" +                                      // 2
                           R"({"method":"POST","url":"/v1/completions","body":{"model":"m"}})" "\n" +  // 3: no custom_id
                           line("a") + "\n" +                                   // 4: duplicate
                           line("s", R"({"model":"m","stream":true})") + "\n" +  // 5: streaming
                           line("u", R"({"model":"m"})", "/v1/moderations") + "\n" +  // 6: route
                           line("m", R"({"messages":[]})") + "\n";              // 7: no model
  const Input in = read_input(text, 100);
  ASSERT_EQ(in.errors.size(), 6u) << describe(in.errors, 10);
  const std::size_t expected_lines[] = {2, 3, 4, 5, 6, 7};
  for (std::size_t i = 0; i < 6; ++i) EXPECT_EQ(in.errors[i].line, expected_lines[i]) << in.errors[i].message;
  EXPECT_NE(in.errors[2].message.find("earlier line"), std::string::npos);
  EXPECT_NE(in.errors[3].message.find("stream"), std::string::npos);
  const std::string all = describe(in.errors, 2);
  EXPECT_NE(all.find("line 2: "), std::string::npos) << all;
  EXPECT_NE(all.find("and 4 more"), std::string::npos) << all;
}

TEST(BatchInput, RefusesMoreLinesThanTheLimitAndAnEmptyFile) {
  const Input over = read_input(line("a") + "\n" + line("b") + "\n" + line("c") + "\n", 2);
  ASSERT_EQ(over.errors.size(), 1u);
  EXPECT_EQ(over.errors[0].line, 3u);
  EXPECT_NE(over.errors[0].message.find("more than 2"), std::string::npos);
  const Input empty = read_input("\n  \n", 2);
  ASSERT_EQ(empty.errors.size(), 1u);
  EXPECT_NE(empty.errors[0].message.find("no request"), std::string::npos);
}

}  // namespace
}  // namespace arbiter::batch
