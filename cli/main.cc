// dltrace: one program, one subcommand per stage of the pipeline.
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>

#include "commands.h"

namespace dltrace::cli {

const std::vector<Command>& AllCommands() {
  static const std::vector<Command> commands = {
      {"info", "summarise a trace file or trace set",
       "dltrace info PATH [--json]\n"
       "  PATH   a .dltrace file or a trace-set directory\n"
       "  --json print the same facts as JSON\n"
       "Exit status: 0 complete, 1 error, 3 printed but the trace is incomplete.",
       RunInfo},
      {"dump", "print every record of a trace as JSON lines",
       "dltrace dump PATH [--rank R]\n"
       "  PATH    a .dltrace file or a trace-set directory\n"
       "  --rank  only this rank's records",
       RunDump},
      {"record", "run a command with the MPI/NCCL recorder preloaded",
       "dltrace record [-o DIR] [--sample-ms N] [--flush-ms N] [--] CMD [ARGS...]\n"
       "  -o DIR        where the traces go (default: a fresh dltrace-<time> directory)\n"
       "  --sample-ms N resource sample interval, 0 = off (default 100)\n"
       "  --flush-ms N  flush interval; a SIGKILL loses at most this much (default 200)\n"
       "Examples:\n"
       "  dltrace record -- mpirun -np 4 ./app\n"
       "  dltrace record -o run1 -- torchrun --nproc_per_node=8 train.py\n"
       "The command's exit status is passed through.",
       RunRecord},
      {"synth", "write a synthetic data-parallel training trace set",
       "dltrace synth --model M --ranks N -o DIR [--ranks-per-host H] [--iterations I]\n"
       "              [--compute-ms MS] [--dtype fp32|bf16] [--bucket-mb MB] [--link-gbps G]\n"
       "  --model           resnet50, resnet152, bert-large or gpt2-xl (default resnet50)\n"
       "  --ranks           data-parallel ranks (default 8)\n"
       "  --ranks-per-host  ranks sharing a host (default 8)\n"
       "  --iterations      training iterations (default 10)\n"
       "  --compute-ms      forward + backward time per iteration (default: per model)\n"
       "  --dtype           gradient type (default fp32)\n"
       "  --bucket-mb       DDP gradient bucket cap in MiB (default 25)\n"
       "  --link-gbps       link rate that sets each all-reduce's recorded time (default 100)\n"
       "  -o DIR            output directory; must not exist",
       RunSynth},
      {"schedule", "lower a trace set to per-rank steps for an algorithm, with an estimate",
       "dltrace schedule PATH --algo A [--rank R] [--no-steps] [--link-gbps G] [--latency-us L]\n"
       "                 [--local-gbps G] [--local-latency-us L] [--chunk-bytes N] [--channels C]\n"
       "                 [--servers K] [--colocated] [--async] [--gossip-peers P] [--iteration-ops N]\n"
       "  --algo        recorded, ring, tree, hd, ps, stepwise, gossip or pairwise\n"
       "  --rank R      print the steps and totals of endpoint R only\n"
       "  --no-steps    print totals and the estimate only\n"
       "  --link-gbps, --latency-us              network link for the estimate (100, 5)\n"
       "  --local-gbps, --local-latency-us      same-host link (2400, 1)\n"
       "  --chunk-bytes, --channels             pipelining piece and parallel flows per pair\n"
       "  --servers, --colocated, --async       parameter-server layout (ps)\n"
       "  --gossip-peers                        neighbours per op (gossip)\n"
       "  --iteration-ops                       ops per iteration (default: detected)\n"
       "Exit status: 0 ok, 1 error, 2 usage, 3 printed but the trace set is inconsistent.",
       RunSchedule},
      {"replay", "replay a trace set's traffic over real TCP sockets",
       "dltrace replay TRACE (--local | --rank R --hosts H0:PORT,H1:PORT,... | --coordinator HOST:PORT)\n"
       "               [--algo A] [--channels C] [--iterations N] [--time-scale X] [--cc NAME]\n"
       "               [--listen ADDR] [--peer-timeout S] [--sndbuf BYTES] [--rcvbuf BYTES]\n"
       "               [--connect-timeout S] [-o RESULTS_DIR] [--local-gbps G] [--local-latency-us L]\n"
       "               [--chunk-bytes N] [--servers K] [--colocated] [--async] [--gossip-peers P]\n"
       "  --local          every endpoint as a process on this host, over 127.0.0.1\n"
       "  --rank, --hosts  this host's endpoint, and every endpoint's address (run on each host)\n"
       "  --coordinator    under mpirun/srun: the rank comes from the launcher's environment, rank 0\n"
       "                   serves HOST:PORT and every rank reports its address there\n"
       "                   (or set DLTRACE_COORDINATOR)\n"
       "  --listen         address this rank's listener binds (ADDR[:PORT] with --coordinator);\n"
       "                   default: this rank's --hosts address, or the one reaching the coordinator\n"
       "  --peer-timeout   stop when a peer awaited sent nothing for S seconds (default 30; 0 off)\n"
       "  --local-gbps, --local-latency-us  same-host link the model times local steps on (2400, 1)\n"
       "  --algo           recorded, ring, tree, hd, ps, stepwise, gossip or pairwise (default recorded)\n"
       "  --channels       TCP connections per peer pair (default 1)\n"
       "  --iterations     replay only the first N iterations\n"
       "  --time-scale     multiply compute gaps (default 1; 0 skips them)\n"
       "  --cc             TCP congestion control per socket (e.g. cubic, reno, bbr)\n"
       "  -o RESULTS_DIR   where rankN.results.json go (default: a fresh dltrace-replay-<time>)\n"
       "DLTRACE_REPLAY_TOKEN, when set, must be the same on every endpoint.\n"
       "Exit status: 0 every endpoint finished, 1 error (a peer lost, a bad trace), 2 usage.",
       RunReplay},
      {"simulate", "simulate a trace set's traffic in ns-3 over a topology and TCP variant",
       "dltrace simulate TRACE [--algo A] [--channels C] [--iterations N] [--time-scale X]\n"
       "                 [--topo SPEC] [--cc NAME] [--queue Q] [-o DIR] [--job SPEC]... [more options]\n"
       "  --topo SPEC     star, dumbbell, ring, leaf-spine or fat-tree, with optional parameters:\n"
       "                  KIND[:rate=100Gbps,delay=1us,...]; leaf-spine: leaves, spines, hosts-per-leaf,\n"
       "                  oversub; fat-tree: k; star/dumbbell/ring: hosts; ring: switches;\n"
       "                  dumbbell/ring: bottleneck (default star, sized to the endpoints)\n"
       "  --cc NAME       ns-3 TCP congestion control: TcpNewReno (default), TcpDctcp, TcpBbr,\n"
       "                  TcpBic, TcpLinuxReno, ... or short names (dctcp, bbr)\n"
       "  --queue Q       switch queues: auto (red-ecn for DCTCP, else fifo), fifo, red, red-ecn,\n"
       "                  codel, fq-codel, pie, pfifo-fast; --queue-packets N (1000), --ecn-k K\n"
       "  --algo A        recorded, ring, tree, hd, ps, stepwise, gossip or pairwise (default recorded)\n"
       "  --channels C    TCP connections per endpoint pair (default 1)\n"
       "  --iterations N  simulate only the first N iterations\n"
       "  --time-scale X  multiply compute gaps (default 1; 0 skips them)\n"
       "  --job SPEC      a job: TRACE[:hosts=0-3][:start=0.5s][:algo=A][:channels=C][:iterations=N];\n"
       "                  repeat for several jobs on one network (default hosts: the next free ones)\n"
       "  --segment-size B, --sndbuf B, --rcvbuf B   TCP segment size (1448) and buffers (256 KiB)\n"
       "  --min-rto-ms M  TCP minimum RTO (10); --recovery classic|prr (classic)\n"
       "  --scheduler S   heap (default), map, list, calendar; --stop S (simulated seconds)\n"
       "  --util-ms M     link utilisation sample period (1; 0 off); --no-flowmon; --pcap\n"
       "  -o DIR          results directory (default a fresh dltrace-simulate-<time>): rank<E>.results.json\n"
       "                  (DIR/job<J>/ for several jobs), flows.csv, links.csv, flowmon.xml, pcap/\n"
       "  --servers, --colocated, --async, --gossip-peers, --chunk-bytes, --local-gbps, ...  as for schedule\n"
       "Exit status: 0 every endpoint finished, 1 error (bad trace, unknown --cc, a stalled run), 2 usage.",
       RunSimulate},
      {"compare", "put recorded, replayed and simulated runs of one job side by side",
       "dltrace compare RUN... [--csv | --json]\n"
       "       dltrace compare --algos A,B,... TRACE --with replay|simulate [-o DIR] [--csv | --json] [-- OPTIONS]\n"
       "  RUN        a trace set (the recorded run) or a results directory (rank*.results.json of\n"
       "             dltrace replay or dltrace simulate); the first RUN is the baseline\n"
       "  --algos    run TRACE under each algorithm first (recorded, ring, tree, hd, ps, stepwise,\n"
       "             gossip, pairwise) and compare them with the recorded run\n"
       "  --with     replay: dltrace replay --local; simulate: dltrace simulate\n"
       "  -o DIR     where each algorithm's results go (DIR/ALGO, log in DIR/ALGO.log;\n"
       "             default a fresh dltrace-compare-<time>)\n"
       "  -- OPTIONS passed to every replay/simulate run (e.g. -- --iterations 3 --channels 2)\n"
       "  --csv, --json  rows for scripts instead of the text tables\n"
       "Per op kind: ops, bytes, time (the longest endpoint's per op, summed), difference to the\n"
       "first RUN in percent, bus bandwidth (nccl-tests); per iteration: time and difference.\n"
       "Exit status: 0 ok, 1 error (a run of another job, a failed run), 2 usage, 3 a run is incomplete.",
       RunCompare},
      {"convert", "export a trace for Perfetto, ASTRA-sim (Chakra), LogGOPSim (GOAL) or as CSV",
       "dltrace convert PATH --to chrome|chakra|goal|csv -o OUT [--algo A] [lowering options]\n"
       "  --to chrome  Chrome/Perfetto trace JSON: a process per rank, a thread per communicator or\n"
       "               stream, times in microseconds (warns above 256 MB: viewers struggle)\n"
       "  --to chakra  OUT.<rank>.et per rank (Chakra execution traces for ASTRA-sim) and\n"
       "               OUT.comm_groups.json; OUT may be a directory\n"
       "  --to goal    GOAL text schedule (LogGOPSim, ATLAHS) of the job lowered with --algo\n"
       "  --to csv     one row per recorded operation\n"
       "  --algo A and --channels, --chunk-bytes, --servers, --colocated, --async, --gossip-peers,\n"
       "  --iteration-ops: lowering options as in dltrace schedule (goal only)\n"
       "Exit status: 0 ok, 1 error, 2 usage, 3 written but the trace set is incomplete.",
       RunConvert},
      {"report", "write a self-contained HTML report (traffic matrix, timeline, resources, runs)",
       "dltrace report PATH -o report.html [--results DIR]... [--png DIR] [--timeline-ops N]\n"
       "  PATH            a trace set\n"
       "  -o FILE         the report: one HTML file, no network needed to open it\n"
       "  --results DIR   a dltrace replay or simulate results directory of the same job: adds its\n"
       "                  iteration times, and flow completion times from DIR/flows.csv (repeatable)\n"
       "  --png DIR       also each chart as DIR/<chart>.png (headless Chromium)\n"
       "  --timeline-ops  ops drawn in the timeline, the earliest of each rank (default 20000)\n"
       "Exit status: 0 ok, 1 error, 2 usage, 3 written but the trace set is incomplete.",
       RunReport},
  };
  return commands;
}

const Command& FindCommand(const char* name) {
  for (const auto& c : AllCommands())
    if (std::strcmp(c.name, name) == 0) return c;
  std::fprintf(stderr, "dltrace: internal error: no command %s\n", name);
  std::abort();
}

int Fail(const std::string& message) {
  std::fprintf(stderr, "dltrace: error: %s\n", message.c_str());
  return kExitError;
}

bool ParseNumber(const std::string& text, double* out) {
  char* end = nullptr;
  *out = std::strtod(text.c_str(), &end);
  return !text.empty() && end && *end == '\0';
}

std::string FreshDirName(const std::string& prefix) {
  char stamp[32];
  std::time_t now = std::time(nullptr);
  std::tm local;
  localtime_r(&now, &local);
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &local);
  std::string base = prefix + stamp, name = base;
  for (int i = 2; access(name.c_str(), F_OK) == 0; ++i) name = base + "-" + std::to_string(i);
  return name;
}

bool MakeDirs(const std::string& dir, std::string* error) {
  std::string partial;
  for (size_t pos = 0; pos != std::string::npos;) {
    pos = dir.find('/', pos + 1);
    partial = dir.substr(0, pos);
    if (!partial.empty() && mkdir(partial.c_str(), 0777) != 0 && errno != EEXIST) {
      *error = partial + ": " + std::strerror(errno);
      return false;
    }
  }
  return true;
}

int ParseLowerOption(const Args& args, size_t* i, models::LowerOptions* o) {
  const std::string& a = args[*i];
  double v = 0;
  // The next argument as a number in [MIN, MAX], taken when it is one.
  auto value = [&](double min, double max) {
    if (*i + 1 >= args.size() || !ParseNumber(args[*i + 1], &v) || v < min || v > max) return false;
    ++*i;
    return true;
  };
  constexpr double kMany = 1e18;
  if (a == "--algo") {
    if (*i + 1 >= args.size() || args[*i + 1].empty()) return -1;
    o->algorithm = args[++*i];
  } else if (a == "--channels") {
    if (!value(1, 64)) return -1;
    o->channels = int(v);
  } else if (a == "--chunk-bytes") {
    if (!value(0, kMany)) return -1;
    o->chunk_bytes = uint64_t(v);
  } else if (a == "--servers") {
    if (!value(1, 1 << 20)) return -1;
    o->servers = int(v);
  } else if (a == "--colocated") {
    o->colocated_servers = true;
  } else if (a == "--async") {
    o->async_servers = true;
  } else if (a == "--gossip-peers") {
    if (!value(1, 1 << 20)) return -1;
    o->gossip_peers = int(v);
  } else if (a == "--iteration-ops") {
    if (!value(1, 1 << 30)) return -1;
    o->iteration_ops = int(v);
  } else if (a == "--local-gbps") {
    if (!value(1e-9, kMany)) return -1;
    o->local_link.gbps = v;
  } else if (a == "--local-latency-us") {
    if (!value(0, kMany)) return -1;
    o->local_link.latency_ns = v * 1000;
  } else {
    return 0;
  }
  return 1;
}

void Warn(const std::string& message) {
  std::fprintf(stderr, "dltrace: warning: %s\n", message.c_str());
}

int UsageError(const Command& command, const std::string& message) {
  std::fprintf(stderr, "dltrace %s: %s\nusage: %s\n", command.name, message.c_str(),
               command.usage);
  return kExitUsage;
}

}  // namespace dltrace::cli

namespace {

void PrintHelp(FILE* out) {
  std::fprintf(out, "dltrace %s: record, replay and simulate distributed-training traffic\n\n",
               DLTRACE_VERSION_STRING);
  std::fprintf(out, "usage: dltrace COMMAND [ARGS...]\n\ncommands:\n");
  for (const auto& c : dltrace::cli::AllCommands())
    std::fprintf(out, "  %-10s %s\n", c.name, c.summary);
  std::fprintf(out, "\n'dltrace COMMAND --help' shows a command's options.\n");
}

}  // namespace

int main(int argc, char** argv) {
  using namespace dltrace::cli;
  if (argc < 2) {
    PrintHelp(stderr);
    return kExitUsage;
  }
  std::string name = argv[1];
  if (name == "-h" || name == "--help" || name == "help") {
    PrintHelp(stdout);
    return kExitOk;
  }
  if (name == "--version" || name == "version") {
    std::printf("dltrace %s\n", DLTRACE_VERSION_STRING);
    return kExitOk;
  }
  for (const auto& c : AllCommands()) {
    if (name != c.name) continue;
    Args args(argv + 2, argv + argc);
    for (const auto& a : args) {
      if (a == "--") break;
      if (a == "-h" || a == "--help") {
        std::printf("usage: %s\n", c.usage);
        return kExitOk;
      }
    }
    return c.run(args);
  }
  std::fprintf(stderr, "dltrace: unknown command '%s' (try 'dltrace --help')\n", name.c_str());
  return kExitUsage;
}
