// Job specs and their placement onto hosts, shared by the ns-3 and flow-level simulators.
#include "dltrace/models/placement.h"

#include <algorithm>
#include <cstdlib>
#include <sstream>

#include "dltrace/models/topology.h"

namespace dltrace::models {

bool ParseHostList(const std::string& text, std::vector<uint32_t>* out) {
  std::stringstream ss(text);
  out->clear();
  for (std::string item; std::getline(ss, item, ',');) {
    char* end = nullptr;
    long a = std::strtol(item.c_str(), &end, 10);
    long b = a;
    if (end == item.c_str() || a < 0) return false;
    if (*end == '-') {
      const char* rest = end + 1;
      b = std::strtol(rest, &end, 10);
      if (end == rest || b < a) return false;
    }
    if (*end != '\0' || b - a > 100000) return false;
    for (long h = a; h <= b; ++h) out->push_back(uint32_t(h));
  }
  return !out->empty();
}

bool ParseJobPlacement(const std::string& text, JobPlacement* out, std::string* error) {
  JobPlacement spec = *out;  // defaults: what TEXT does not say stays
  std::vector<std::string> parts;
  std::stringstream ss(text);
  for (std::string part; std::getline(ss, part, ':');) parts.push_back(part);
  if (parts.empty() || parts[0].empty()) {
    *error = "--job needs TRACE[:hosts=A-B][:start=T][:algo=A][:channels=C][:iterations=N][:priority=P], got '" + text + "'";
    return false;
  }
  spec.trace = parts[0];
  for (size_t i = 1; i < parts.size(); ++i) {
    const size_t eq = parts[i].find('=');
    const std::string key = parts[i].substr(0, eq);
    const std::string value = eq == std::string::npos ? "" : parts[i].substr(eq + 1);
    char* end = nullptr;
    bool ok = eq != std::string::npos && !value.empty();
    if (key == "hosts") {
      ok = ok && ParseHostList(value, &spec.hosts);
    } else if (key == "start") {
      ok = ok && ParseDuration(value, &spec.start_ns);
    } else if (key == "algo") {
      spec.lower.algorithm = value;
      ok = ok && FindAlgorithm(value) != nullptr;
    } else if (key == "channels") {
      long c = std::strtol(value.c_str(), &end, 10);
      ok = ok && *end == '\0' && c >= 1 && c <= 64;
      spec.lower.channels = int(c);
    } else if (key == "iterations") {
      long c = std::strtol(value.c_str(), &end, 10);
      ok = ok && *end == '\0' && c >= 1;
      spec.iterations = int32_t(c);
    } else if (key == "priority") {
      long c = std::strtol(value.c_str(), &end, 10);
      ok = ok && *end == '\0' && !value.empty() && c >= 0 && c <= 7;
      spec.priority = uint32_t(c);
    } else {
      *error = "--job " + text + ": unknown key '" + key + "' (hosts, start, algo, channels, iterations, priority)";
      return false;
    }
    if (!ok) {
      *error = "--job " + text + ": bad value in '" + parts[i] + "'";
      return false;
    }
  }
  *out = spec;
  return true;
}

bool PlaceJobs(std::vector<JobPlacement>* jobs, const std::vector<uint32_t>& endpoints, uint32_t* hosts_needed,
               std::string* error) {
  uint32_t next = 0, needed = 0;
  for (size_t j = 0; j < jobs->size(); ++j) {
    JobPlacement& p = (*jobs)[j];
    const uint32_t n = endpoints[j];
    if (p.hosts.empty()) {
      for (uint32_t e = 0; e < n; ++e) p.hosts.push_back(next++);
    } else if (p.hosts.size() != n) {
      *error = "job " + std::to_string(j) + " (" + p.trace + ") has " + std::to_string(n) +
               " endpoints, its hosts list names " + std::to_string(p.hosts.size());
      return false;
    }
    for (uint32_t h : p.hosts) {
      needed = std::max(needed, h + 1);
      next = std::max(next, h + 1);
    }
  }
  *hosts_needed = needed;
  return true;
}

}  // namespace dltrace::models
