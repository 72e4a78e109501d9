#include "core/multipart_form.hpp"

#include <gtest/gtest.h>

namespace arbiter {
namespace {

TEST(MultipartForm, ReadsTheBoundaryAndEveryPartWithItsFileName) {
  const auto boundary = form_boundary("multipart/form-data; boundary=\"----b42\"");
  ASSERT_TRUE(boundary) << boundary.error();
  EXPECT_EQ(*boundary, "----b42");
  const std::string body =
      "------b42\r\nContent-Disposition: form-data; name=\"purpose\"\r\n\r\nbatch\r\n"
      "------b42\r\ncontent-disposition: form-data; name=\"file\"; filename=\"in.jsonl\"\r\n"
      "Content-Type: application/jsonl\r\n\r\n{\"a\":1}\r\n{\"b\":\r\n2}\n\r\n------b42--\r\n";
  const auto parts = parse_form(body, *boundary);
  ASSERT_TRUE(parts) << parts.error();
  ASSERT_EQ(parts->size(), 2u);
  EXPECT_EQ((*parts)[0].name, "purpose");
  EXPECT_EQ((*parts)[0].content, "batch");
  EXPECT_EQ((*parts)[1].name, "file");
  EXPECT_EQ((*parts)[1].filename, "in.jsonl");
  EXPECT_EQ((*parts)[1].content, "{\"a\":1}\r\n{\"b\":\r\n2}\n");
}

TEST(MultipartForm, SaysWhatIsWrongWithABadForm) {
  EXPECT_FALSE(form_boundary("application/json"));
  EXPECT_FALSE(form_boundary("multipart/form-data"));
  EXPECT_FALSE(parse_form("no boundary here", "b"));
  EXPECT_FALSE(parse_form("--b\r\nContent-Disposition: form-data; name=\"x\"\r\n\r\nnever ends", "b"));
  EXPECT_FALSE(parse_form("--b\r\nContent-Disposition: form-data\r\n\r\nx\r\n--b--", "b"));  // no name
  const auto empty = parse_form("--b--\r\n", "b");
  ASSERT_TRUE(empty);
  EXPECT_TRUE(empty->empty());
}

}  // namespace
}  // namespace arbiter
