// SPDX-License-Identifier: GPL-2.0-only
// Option groups several subcommands share, each declared once: the lowering
// options, the output directory, and the algorithm names from models' table.
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "commands.h"
#include "host_profile.h"

namespace dltrace::cli {

CLI::Validator AlgorithmName() {
  const std::string names = models::AlgorithmNamesJoined();
  return CLI::Validator(
      [names](std::string& name) {
        return models::FindAlgorithm(name) ? std::string() : "unknown algorithm '" + name + "' (one of " + names + ")";
      },
      "ALGO", "algorithm");
}

namespace {

// A number above MIN (or at least MIN when INCLUSIVE), said in one short line:
// CLI11 2.1's PositiveNumber and NonNegativeNumber spell out DBL_MAX.
CLI::Validator Above(double min, bool inclusive, const std::string& name, const std::string& what) {
  return CLI::Validator(
      [=](std::string& text) {
        double v = 0;
        if (CLI::detail::lexical_cast(text, v) && (inclusive ? v >= min : v > min)) return std::string();
        return "'" + text + "' is not " + what;
      },
      name, name);
}

}  // namespace

std::string FindBesideProgram(const char* env_var, std::initializer_list<const char*> relative) {
  if (const char* v = std::getenv(env_var)) return v;
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  std::string dir = ".";
  if (n > 0) {
    dir.assign(buf, size_t(n));
    dir = dir.substr(0, dir.rfind('/'));
  }
  for (const char* rel : relative) {
    std::string p = dir + rel;
    struct stat st {};
    if (::stat(p.c_str(), &st) != 0) continue;
    char real[PATH_MAX];
    return ::realpath(p.c_str(), real) ? real : p;
  }
  return "";
}

CLI::Validator Positive() { return Above(0, false, "POSITIVE", "a positive number"); }

CLI::Validator NonNegative() { return Above(0, true, "NONNEGATIVE", "a number >= 0"); }

void AddLowerOptions(CLI::App* command, models::LowerOptions* o) {
  const std::string group = "Lowering options (how each op becomes steps)";
  command
      ->add_option("--algo", o->algorithm,
                   "collective algorithm: " + models::AlgorithmNamesJoined() + " (default: " +
                       models::kNcclAlgorithm + " for NCCL traces, " + models::kRecordedAlgorithm + " for MPI ones)")
      ->check(AlgorithmName())
      ->group(group);
  command->add_option("--channels", o->channels, "parallel flows (TCP connections) per endpoint pair")
      ->check(CLI::Range(1, 64))
      ->group(group);
  command->add_option("--chunk-bytes", o->chunk_bytes, "pipelining piece in bytes (0: the whole op)")
      ->check(NonNegative())
      ->group(group);
  command->add_option("--servers", o->servers, "parameter servers (ps)")->check(CLI::Range(1, 1 << 20))->group(group);
  command->add_flag("--colocated", o->colocated_servers, "parameter servers on workers 0..K-1 (ps)")->group(group);
  command->add_flag("--async", o->async_servers, "servers answer each push at once (ps)")->group(group);
  command->add_option("--gossip-peers", o->gossip_peers, "neighbours per op (gossip)")
      ->check(CLI::Range(1, 1 << 20))
      ->group(group);
  command->add_option("--iteration-ops", o->iteration_ops, "ops per iteration (0: detected)")
      ->check(CLI::Range(1, 1 << 30))
      ->group(group);
  command
      ->add_option("--eager-limit", o->eager_limit_bytes,
                   "MPI eager limit between hosts in bytes: a blocking MPI_Send up to this size completes "
                   "without its receive (Open MPI's btl_tcp_eager_limit)")
      ->capture_default_str()
      ->group(group);
  command
      ->add_option("--eager-limit-local", o->eager_limit_local_bytes,
                   "MPI eager limit on one host in bytes (Open MPI's btl_vader_eager_limit)")
      ->capture_default_str()
      ->group(group);
  const std::string by_library = " (default: NVLink-like " + CLI::detail::to_string(models::kNvlinkLink.gbps) +
                                 " for NCCL traces, shared memory " +
                                 CLI::detail::to_string(models::kSharedMemoryLink.gbps) + " for MPI)";
  command
      ->add_option_function<double>(
          "--local-gbps", [o](double g) { o->local_gbps = g; }, "same-host link rate in Gbit/s" + by_library)
      ->check(Positive())
      ->group(group);
  command
      ->add_option_function<double>(
          "--local-latency-us", [o](double us) { o->local_latency_ns = us * 1000; },
          "same-host link latency in microseconds (default: " +
              CLI::detail::to_string(models::kNvlinkLink.latency_ns / 1000) + " NCCL, " +
              CLI::detail::to_string(models::kSharedMemoryLink.latency_ns / 1000) + " MPI)")
      ->check(NonNegative())
      ->group(group);
  command
      ->add_option_function<std::string>(
          "--host-profile",
          [o](const std::string& path) {
            HostProfile p;
            std::string error;
            if (!ReadHostProfile(path, &p, &error)) throw CLI::ValidationError("--host-profile", error);
            ApplyHostProfile(p, o);
          },
          "model the host's own work in reductions at this profile's rates (dltrace calibrate; "
          "dltrace record stores one as TRACE/" + std::string(kHostProfileFile) + ")")
      ->group(group);
}

CLI::Option* AddTraceArgument(CLI::App* command, std::string* path, const std::string& name,
                              const std::string& what) {
  return command->add_option(name, *path, what)->required();
}

CLI::Option* AddOutputDirOption(CLI::App* command, std::string* dir, const std::string& what,
                                const std::string& fresh_prefix) {
  return command->add_option("-o,--output", *dir, what + " (default: a fresh " + fresh_prefix + "<time>)")
      ->type_name("DIR");
}

}  // namespace dltrace::cli
