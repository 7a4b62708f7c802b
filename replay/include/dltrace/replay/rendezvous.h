// SPDX-License-Identifier: GPL-2.0-only
// Launcher-driven start (mpirun, srun): the rank comes from the environment,
// and ranks learn each other's data addresses through a coordinator that rank 0 serves.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dltrace/replay/socket_replay.h"

namespace dltrace::replay {

// The rank and world size a launcher gave this process, from the first set of
// DLTRACE_RANK, RANK, OMPI_COMM_WORLD_RANK, PMIX_RANK, PMI_RANK, SLURM_PROCID
// (and DLTRACE_WORLD_SIZE, WORLD_SIZE, OMPI_COMM_WORLD_SIZE, PMI_SIZE,
// SLURM_NTASKS); -1 when none is set. A set variable that is not a number is an error.
struct LauncherRank {
  int32_t rank = -1, world_size = -1;
  std::string rank_variable, size_variable;  // which variables gave them
};
bool RankFromEnvironment(LauncherRank* out, std::string* error);
// "DLTRACE_RANK, RANK, ..." for messages.
std::string RankVariableNames();

struct RendezvousOptions {
  HostPort coordinator;  // rank 0 listens there; every rank (0 included) reports there
  int32_t rank = 0;
  int32_t ranks = 0;  // how many report
  // Where this rank's data listener binds. Empty: the local address of its
  // connection to the coordinator (the address that reaches the coordinator's
  // host), never every interface. A wildcard address binds everywhere and
  // advertises that local address.
  std::string listen_host;
  uint16_t listen_port = 0;  // 0: a port the kernel picks
  uint64_t schedule_hash = 0;
  std::string token;     // DLTRACE_REPLAY_TOKEN: ranks must agree
  std::string run_name;  // rank 0's is handed to every rank (its default output directory)
  double timeout_s = 30;  // connecting to the coordinator, and waiting for every rank
};

struct RendezvousResult {
  std::vector<HostPort> hosts;  // every rank's data listener, index = rank
  int listen_fd = -1;           // this rank's, bound and listening (SocketOptions::listen_fd)
  std::string run_name;         // rank 0's
};

// Binds this rank's data listener, reports it to the coordinator and waits for
// every rank's address. Rank 0 also serves the coordinator (a thread). False
// with one line naming the coordinator (or the ranks that never reported) and the cause.
bool Rendezvous(const RendezvousOptions& options, RendezvousResult* out, std::string* error);

// A listening TCP socket on HOST:PORT (PORT 0: any), close-on-exec; -1 and
// *error on failure. *BOUND gets the port the kernel gave.
int ListenOn(const std::string& host, uint16_t port, uint16_t* bound, std::string* error);

}  // namespace dltrace::replay
