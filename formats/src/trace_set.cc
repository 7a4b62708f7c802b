// SPDX-License-Identifier: GPL-2.0-only
// LoadTraceSet: reads every rank file of a run and reports what does not fit.
#include "dltrace/formats/trace_set.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>

namespace dltrace::formats {

const RankTrace* TraceSet::rank(int32_t global_rank) const {
  // Lowering asks once per call part: a scan made a 16,384-rank job's
  // lowering quadratic (88% of its CPU). A complete set holds rank R at R.
  if (global_rank >= 0 && size_t(global_rank) < ranks.size() && ranks[size_t(global_rank)].header.global_rank == global_rank)
    return &ranks[size_t(global_rank)];
  auto it = std::lower_bound(ranks.begin(), ranks.end(), global_rank,
                             [](const RankTrace& r, int32_t g) { return r.header.global_rank < g; });
  return it != ranks.end() && it->header.global_rank == global_rank ? &*it : nullptr;
}

std::vector<std::string> ListTraceFiles(const std::string& dir) {
  std::vector<std::string> files;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return files;
  const size_t suffix = std::strlen(kTraceFileSuffix);
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name.size() > suffix && name.compare(name.size() - suffix, suffix, kTraceFileSuffix) == 0)
      files.push_back(dir + "/" + name);
  }
  ::closedir(d);
  std::sort(files.begin(), files.end());
  return files;
}

bool LoadTraceSet(const std::string& path, TraceSet* set, std::string* error) {
  *set = TraceSet();
  set->path = path;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    *error = path + ": " + std::strerror(errno);
    return false;
  }
  std::vector<std::string> files;
  if (S_ISDIR(st.st_mode)) {
    files = ListTraceFiles(path);
    if (files.empty()) {
      *error = path + ": no " + std::string(kTraceFileSuffix) + " files in this directory";
      return false;
    }
  } else {
    files.push_back(path);
  }

  std::map<int32_t, std::string> seen;
  for (const auto& f : files) {
    RankTrace t = ReadTraceFile(f);
    if (!t.usable() || t.status == ReadStatus::kCorrupt) {
      *error = t.message;
      return false;
    }
    if (t.incomplete()) set->warnings.push_back(t.message);
    if (t.footer && !t.footer->write_error.empty())
      set->warnings.push_back(f + ": rank " + std::to_string(t.header.global_rank) +
                              " stopped recording early: " + t.footer->write_error + "; " +
                              std::to_string(t.footer->events_dropped) +
                              " events not written (" + std::to_string(t.ops.size()) + " kept)");
    auto [it, fresh] = seen.emplace(t.header.global_rank, f);
    if (!fresh) {
      *error = f + ": rank " + std::to_string(t.header.global_rank) + " already recorded in " +
               it->second + " (two runs in one directory?)";
      return false;
    }
    set->ranks.push_back(std::move(t));
  }
  std::sort(set->ranks.begin(), set->ranks.end(), [](const RankTrace& a, const RankTrace& b) {
    return a.header.global_rank < b.header.global_rank;
  });

  for (const auto& r : set->ranks) set->world_size = std::max(set->world_size, r.header.world_size);
  for (const auto& r : set->ranks) {
    if (r.header.world_size != set->world_size)
      set->warnings.push_back(r.path + ": says world size " + std::to_string(r.header.world_size) +
                              ", other ranks say " + std::to_string(set->world_size));
  }
  // Only a directory is expected to hold the whole world.
  if (S_ISDIR(st.st_mode)) {
    std::vector<int32_t> missing;
    for (int32_t r = 0; r < set->world_size; ++r)
      if (!seen.count(r)) missing.push_back(r);
    if (!missing.empty()) {
      std::string list;
      for (size_t i = 0; i < missing.size() && i < 16; ++i)
        list += (i ? "," : "") + std::to_string(missing[i]);
      if (missing.size() > 16) list += ",...";
      set->warnings.push_back(path + ": missing " + std::to_string(missing.size()) + " of " +
                              std::to_string(set->world_size) + " ranks (" + list + ")");
    }
  }
  return true;
}

}  // namespace dltrace::formats
