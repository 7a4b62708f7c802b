// SPDX-License-Identifier: GPL-2.0-only
// dltrace-recover: writes the rest of a trace from the raw file that a
// process recorded with DLTRACE_RAW left when it was killed (SIGKILL, OOM).
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
#include "dltrace/formats/writer.h"
#include "raw_file.h"

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

int Recover(const std::string& raw) {
  std::string err, note;
  uint64_t n = 0;
  if (!dltrace::record::RecoverRawFile(raw, &err, &note, &n)) {
    std::fprintf(stderr, "dltrace-recover: %s\n", err.c_str());
    return 1;
  }
  std::printf("%s: %llu events recovered%s%s\n", raw.c_str(), (unsigned long long)n,
              note.empty() ? "" : "; ", note.empty() ? "" : note.substr(0, note.size() - 2).c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "-h") || !std::strcmp(argv[1], "--help")) {
    std::fprintf(argc < 2 ? stderr : stdout,
                 "usage: dltrace-recover PATH...\n"
                 "  PATH: a raw file (DLTRACE_RAW), a trace file whose process was killed, or\n"
                 "  a trace directory (each rank file with a raw file left). Appends the events\n"
                 "  the raw file holds beyond the trace, writes its footer, removes the raw file.\n");
    return argc < 2 ? 2 : 0;
  }
  int rc = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string path = argv[i];
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
        rc |= Recover(raw);
      }
      if (left == 0) std::printf("%s: no trace with a raw file left to recover\n", path.c_str());
      continue;
    }
    if (StartsWith(path, dltrace::formats::kFileMagic, sizeof(dltrace::formats::kFileMagic))) {
      const auto t = dltrace::formats::ReadTraceFile(path);
      const std::string raw = RawOfTrace(t);
      if (raw.empty()) {
        std::fprintf(stderr, "dltrace-recover: %s: recorded without DLTRACE_RAW: no raw file\n",
                     path.c_str());
        rc = 1;
      } else if (::access(raw.c_str(), F_OK) != 0) {
        std::fprintf(stderr, "dltrace-recover: %s: its raw file %s is gone (%s)\n", path.c_str(),
                     raw.c_str(),
                     t.status == dltrace::formats::ReadStatus::kComplete
                         ? "the trace is complete"
                         : "recovered already, or removed");
        rc = 1;
      } else {
        rc |= Recover(raw);
      }
      continue;
    }
    rc |= Recover(path);
  }
  return rc;
}
