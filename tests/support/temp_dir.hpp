// A private directory under $TMPDIR (or /tmp), removed with its contents
// when the object goes away. Holds a test's config, port file and logs.
#pragma once

#include <string>
#include <string_view>

namespace arbiter::test {

class TempDir {
 public:
  explicit TempDir(std::string_view prefix = "arbiter-test");
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  // path()/name
  std::string file(std::string_view name) const;
  // Writes (replaces) path()/name and returns its path.
  std::string write(std::string_view name, std::string_view contents) const;

 private:
  std::string path_;
};

// The whole file, or "" when it does not exist.
std::string read_file(const std::string& path);

}  // namespace arbiter::test
