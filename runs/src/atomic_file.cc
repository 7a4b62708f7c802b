// SPDX-License-Identifier: GPL-2.0-only
// Write-to-temporary-then-rename, the one implementation every results file,
// export and simulation output goes through.
#include "dltrace/runs/atomic_file.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace dltrace::runs {

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)) {
  tmp_ = path_ + ".tmp." + std::to_string(getpid());
}

AtomicFile::~AtomicFile() {
  if (file_) std::fclose(file_);
  if (!committed_) std::remove(tmp_.c_str());
}

bool AtomicFile::Open(std::string* error) {
  file_ = std::fopen(tmp_.c_str(), "wb");
  if (!file_) *error = tmp_ + ": " + std::strerror(errno);
  return file_ != nullptr;
}

bool AtomicFile::Commit(std::string* error) {
  errno = 0;
  bool ok = file_ && !std::ferror(file_) && std::fflush(file_) == 0;
  // On disk before the rename, so a crash cannot leave an empty file under the final name.
  ok = ok && fsync(fileno(file_)) == 0;
  if (file_ && std::fclose(file_) != 0) ok = false;
  file_ = nullptr;
  if (!ok) {
    *error = path_ + ": write failed: " + std::strerror(errno ? errno : EIO);
    return false;
  }
  if (std::rename(tmp_.c_str(), path_.c_str()) != 0) {
    *error = path_ + ": " + std::strerror(errno);
    return false;
  }
  committed_ = true;
  return true;
}

bool WriteFileAtomically(const std::string& path, const std::string& content, std::string* error) {
  AtomicFile f(path);
  if (!f.Open(error)) return false;
  std::fwrite(content.data(), 1, content.size(), f.get());
  return f.Commit(error);
}

}  // namespace dltrace::runs
