// SPDX-License-Identifier: GPL-2.0-only
// Files that appear whole or not at all: written under a temporary name and
// renamed into place once complete, so an interrupted run never leaves a
// half-written file looking complete.
#pragma once

#include <cstdio>
#include <string>

namespace dltrace::runs {

// For writers that stream: opens PATH.tmp.<pid>; Commit flushes it to disk and
// renames it to PATH; the destructor removes it when not committed.
class AtomicFile {
 public:
  explicit AtomicFile(std::string path);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  bool Open(std::string* error);
  FILE* get() const { return file_; }
  const std::string& temporary_path() const { return tmp_; }
  bool Commit(std::string* error);
  const std::string& path() const { return path_; }

 private:
  std::string path_, tmp_;
  FILE* file_ = nullptr;
  bool committed_ = false;
};

// Writes CONTENT to PATH through a temporary name renamed into place.
bool WriteFileAtomically(const std::string& path, const std::string& content, std::string* error);

}  // namespace dltrace::runs
