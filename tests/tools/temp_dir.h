// SPDX-License-Identifier: GPL-2.0-only
// The C++ tests' scratch space: a fresh directory under /tmp, removed with
// everything in it when the object goes.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <string>

namespace dltrace_test {

class TempDir {
 public:
  // /tmp/PREFIX-XXXXXX; path() is empty when it could not be made.
  explicit TempDir(const std::string& prefix = "dltrace-test") {
    std::string tmpl = "/tmp/" + prefix + "-XXXXXX";
    if (::mkdtemp(tmpl.data())) path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ignored;
    if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  // NAME inside the directory.
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

}  // namespace dltrace_test
