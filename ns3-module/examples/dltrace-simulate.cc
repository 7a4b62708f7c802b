// SPDX-License-Identifier: GPL-2.0-only
// dltrace-simulate: replays one or more dltrace trace sets in ns-3 over a
// chosen topology and congestion control, as `dltrace simulate` does, with
// ns-3 CommandLine arguments (--PrintHelp lists them; Config::SetDefault
// overrides such as --ns3::TcpSocket::InitialCwnd=20 apply).
//
//   ./ns3 run "dltrace-simulate --trace=/tmp/r50 --topo=leaf-spine --cc=TcpDctcp --algo=ring"
#include "ns3/command-line.h"
#include "ns3/core-module.h"
#include "ns3/dltrace-scenario.h"

#include "dltrace/models/algorithms.h"

#include <sys/stat.h>

#include <iostream>

using namespace ns3;

namespace
{

std::vector<std::string> g_jobs;

bool
AddJob(std::string text)
{
    g_jobs.push_back(text);
    return true;
}

} // namespace

int
main(int argc, char* argv[])
{
    DltraceScenarioConfig config;
    std::string trace;
    std::string algo; // empty: the trace's default (nccl for NCCL traces, recorded for MPI)
    uint32_t channels = 1;
    uint32_t iterations = 0;
    double timeScale = 1.0;
    std::string out;
    bool pcap = false;
    double stopS = 0;
    double utilMs = 1;

    CommandLine cmd(__FILE__);
    cmd.Usage("Simulates the traffic of recorded (or synthetic) distributed training in ns-3.");
    cmd.AddValue("trace", "trace set (a .dltrace file or a directory of them)", trace);
    cmd.AddValue("job",
                 "a job: TRACE[:hosts=0-3][:start=0.5s][:algo=ring][:channels=2][:iterations=N] "
                 "(repeat for several)",
                 MakeCallback(&AddJob));
    cmd.AddValue("algo",
                 "one of " + dltrace::models::AlgorithmNamesJoined() +
                     " (default: nccl for NCCL traces, recorded for MPI)",
                 algo);
    cmd.AddValue("channels", "TCP connections per endpoint pair", channels);
    cmd.AddValue("iterations", "simulate only the first N iterations (0: all)", iterations);
    cmd.AddValue("timeScale", "multiply compute gaps (0 skips them)", timeScale);
    cmd.AddValue("topo", "star, dumbbell, ring, leaf-spine or fat-tree[:key=value,...]", config.topology);
    cmd.AddValue("cc", "TCP congestion control (TcpNewReno, TcpDctcp, TcpBbr, TcpBic, TcpLinuxReno, ...)",
                 config.congestionControl);
    cmd.AddValue("queue", "switch queue disc: auto, fifo, red, red-ecn, codel, fq-codel, pie",
                 config.queueDisc);
    cmd.AddValue("queuePackets", "switch queue limit in packets", config.queuePackets);
    cmd.AddValue("ecnK", "red-ecn marking threshold in packets (0: scaled from 65 at 10G)",
                 config.ecnThresholdPackets);
    cmd.AddValue("segmentSize", "TCP segment size in bytes", config.segmentSize);
    cmd.AddValue("sndBuf", "TCP send buffer in bytes (0: default)", config.sndBufBytes);
    cmd.AddValue("rcvBuf", "TCP receive buffer in bytes (0: default)", config.rcvBufBytes);
    cmd.AddValue("scheduler", "event scheduler: heap, map, list, calendar", config.scheduler);
    cmd.AddValue("stop", "stop after this many simulated seconds (0: when done)", stopS);
    cmd.AddValue("utilMs", "link utilisation sample period in ms (0: off)", utilMs);
    cmd.AddValue("out", "directory for results, flows.csv, links.csv, flowmon.xml", out);
    cmd.AddValue("pcap", "write a pcap per link into OUT/pcap/", pcap);
    cmd.AddValue("partitions",
                 "partitions on ns-3's distributed simulator (start with mpirun -np N; needs ns-3 with MPI)",
                 config.partitions);
    cmd.AddValue("partitionMap", "file of NODE PARTITION lines (default: by pod or leaf)", config.partitionMap);
    cmd.AddValue("pdes", "null-message or barrier", config.pdes);
    cmd.Parse(argc, argv);

    if (!trace.empty())
    {
        g_jobs.insert(g_jobs.begin(), trace);
    }
    if (g_jobs.empty())
    {
        std::cerr << "dltrace-simulate: give --trace=PATH or --job=SPEC (--PrintHelp)" << std::endl;
        return 2;
    }
    std::string error;
    for (const auto& text : g_jobs)
    {
        DltraceJobSpec spec;
        spec.lower.algorithm = algo;
        spec.lower.channels = int(channels);
        spec.iterations = int32_t(iterations);
        spec.time_scale = timeScale;
        if (!DltraceJobSpec::Parse(text, &spec, &error))
        {
            std::cerr << "dltrace-simulate: " << error << std::endl;
            return 1;
        }
        config.jobs.push_back(spec);
    }
    config.stopTime = Seconds(stopS);
    config.utilInterval = MicroSeconds(int64_t(utilMs * 1000));
    if (!out.empty())
    {
        mkdir(out.c_str(), 0777);
        if (pcap)
        {
            mkdir((out + "/pcap").c_str(), 0777);
            config.pcapPrefix = out + "/pcap/";
        }
    }
    DltraceScenario scenario;
    if (!scenario.Setup(config, &error))
    {
        std::cerr << "dltrace-simulate: " << error << std::endl;
        return 1;
    }
    if (scenario.NeedsLaunch())
    {
        std::cerr << "dltrace-simulate: --partitions=" << config.partitions << ": start it as mpirun -np "
                  << config.partitions << " dltrace-simulate ..." << std::endl;
        return 1;
    }
    scenario.Run();
    if (scenario.GetPartitionIndex() != 0)
    {
        return 0; // partition 0 holds every endpoint's results and writes them
    }
    scenario.PrintSummary(std::cout);
    if (!out.empty() && !scenario.WriteOutputs(out, &error))
    {
        std::cerr << "dltrace-simulate: " << error << std::endl;
        return 1;
    }
    return scenario.AllJobsComplete() ? 0 : 1;
}
