// SPDX-License-Identifier: GPL-2.0-only
// What `dltrace-recover` and `dltrace recover` run: for each path (a raw
// file, a trace whose process was killed, or a trace directory), the rest
// of the trace from the raw file the killed process left.
#include "recover_paths.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "dltrace/formats/reader.h"
#include "dltrace/formats/trace.h"
#include "raw_file.h"

namespace dltrace::record {

namespace {

bool IsDir(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool StartsWith(const std::string& path, const char* magic, size_t n) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return false;
  std::vector<char> buf(n);
  const bool ok = std::fread(buf.data(), 1, n, f) == n && std::memcmp(buf.data(), magic, n) == 0;
  std::fclose(f);
  return ok;
}

// The raw file a trace's header names (dltrace.raw), or "".
std::string RawOfTrace(const dltrace::formats::RankTrace& t) {
  for (const auto& [k, v] : t.header.attributes)
    if (k == "dltrace.raw") return v;
  return "";
}

int Recover(const std::string& raw, const char* who) {
  std::string err, note;
  uint64_t n = 0;
  if (!RecoverRawFile(raw, &err, &note, &n)) {
    std::fprintf(stderr, "%s: %s\n", who, err.c_str());
    return 1;
  }
  std::printf("%s: %llu events recovered%s%s\n", raw.c_str(), (unsigned long long)n,
              note.empty() ? "" : "; ", note.empty() ? "" : note.substr(0, note.size() - 2).c_str());
  return 0;
}

}  // namespace

int RecoverPaths(const std::vector<std::string>& paths, const char* who) {
  int rc = 0;
  for (const std::string& path : paths) {
    if (IsDir(path)) {
      std::vector<std::string> files;
      if (DIR* d = ::opendir(path.c_str())) {
        while (dirent* e = ::readdir(d)) {
          const std::string name = e->d_name;
          const std::string suffix = dltrace::formats::kTraceFileSuffix;
          if (name.size() > suffix.size() &&
              name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
            files.push_back(path + "/" + name);
        }
        ::closedir(d);
      }
      std::sort(files.begin(), files.end());
      int left = 0;
      for (const auto& f : files) {
        const auto t = dltrace::formats::ReadTraceFile(f);
        const std::string raw = RawOfTrace(t);
        if (t.status == dltrace::formats::ReadStatus::kComplete || raw.empty() ||
            ::access(raw.c_str(), F_OK) != 0)
          continue;
        ++left;
        rc |= Recover(raw, who);
      }
      if (left == 0) std::printf("%s: no trace with a raw file left to recover\n", path.c_str());
      continue;
    }
    if (StartsWith(path, dltrace::formats::kFileMagic, sizeof(dltrace::formats::kFileMagic))) {
      const auto t = dltrace::formats::ReadTraceFile(path);
      const std::string raw = RawOfTrace(t);
      if (raw.empty()) {
        std::fprintf(stderr, "%s: %s: recorded without a raw file (DLTRACE_RAW=0)\n", who,
                     path.c_str());
        rc = 1;
      } else if (::access(raw.c_str(), F_OK) != 0) {
        std::fprintf(stderr, "%s: %s: its raw file %s is gone (%s)\n", who, path.c_str(),
                     raw.c_str(),
                     t.status == dltrace::formats::ReadStatus::kComplete
                         ? "the trace is complete"
                         : "recovered already, or removed");
        rc = 1;
      } else {
        rc |= Recover(raw, who);
      }
      continue;
    }
    rc |= Recover(path, who);
  }
  return rc;
}

}  // namespace dltrace::record
