// SPDX-License-Identifier: GPL-2.0-only
// An N-to-1 incast on a star, UET (NSCC or RCCC) or RDMA (RoCEv2 with PFC), the case
// scripts/uet-vs-htsim.sh runs against uet-htsim: prints each flow's completion and totals.
#include "ns3/boolean.h"
#include "ns3/command-line.h"
#include "ns3/config.h"
#include "ns3/rng-seed-manager.h"
#include "ns3/dltrace-rdma-helper.h"
#include "ns3/dltrace-rdma-net-device.h"
#include "ns3/simulator.h"
#include "ns3/string.h"
#include "ns3/uinteger.h"

#include "dltrace/models/topology.h"

#include <chrono>
#include <cmath>
#include <iomanip>
#include <iostream>
#include <vector>

using namespace ns3;

namespace
{

// One line and exit status 2: what a bad command-line value gets.
[[noreturn]] void
Fail(const std::string& message)
{
    std::cerr << "dltrace-uet-incast: " << message << std::endl;
    std::exit(2);
}

} // namespace

int
main(int argc, char* argv[])
{
    uint32_t senders = 8;
    std::string rate = "100Gbps";
    std::string delay = "1us";
    uint64_t bytes = 2000000;
    std::string transport = "uet";
    std::string cc = "nscc";
    std::string lb = "mixed";
    uint32_t entropies = 64;
    uint32_t mtu = 4150;
    double queueBdp = 1;
    uint32_t queuePackets = 0;
    double rttUs = 0;
    uint32_t run = 1;
    CommandLine cmd(__FILE__);
    cmd.AddValue("senders", "senders (hosts 0..N-1; host N receives)", senders);
    cmd.AddValue("rate", "every link's rate", rate);
    cmd.AddValue("delay", "every link's delay", delay);
    cmd.AddValue("bytes", "bytes each sender sends", bytes);
    cmd.AddValue("transport", "uet or rdma (RoCEv2, PFC, DCQCN)", transport);
    cmd.AddValue("cc", "uet: nscc or rccc", cc);
    cmd.AddValue("lb", "uet: load balancer (oblivious, bitmap, reps, mixed)", lb);
    cmd.AddValue("entropies", "uet: entropy values per PDC", entropies);
    cmd.AddValue("mtu", "uet: full data frame bytes (uet-htsim's -mtu, 64 of them headers)", mtu);
    cmd.AddValue("queue-bdp", "uet: switch data queues in BDPs", queueBdp);
    cmd.AddValue("queue-packets", "uet: switch data queues in frames (0: queue-bdp)", queuePackets);
    cmd.AddValue("rtt-us", "uet: the network RTT NSCC and queues scale with (0: the star's)", rttUs);
    cmd.AddValue("run", "random run (ns-3's RngRun: entropy choices, trimming coin flips, ECN marks)", run);
    cmd.Parse(argc, argv);
    RngSeedManager::SetRun(run);

    uint64_t rateBps = 0;
    uint64_t delayNs = 0;
    if (!dltrace::models::ParseRate(rate, &rateBps) || rateBps == 0)
    {
        Fail("--rate " + rate + ": not a rate (e.g. 100Gbps)");
    }
    if (!dltrace::models::ParseDuration(delay, &delayNs))
    {
        Fail("--delay " + delay + ": not a duration (e.g. 1us)");
    }
    if (senders == 0 || bytes == 0)
    {
        Fail("--senders and --bytes must be positive");
    }
    DltraceUetLoadBalancer::Kind kind;
    if (!DltraceUetLoadBalancer::Parse(lb, &kind))
    {
        Fail("--lb " + lb + ": unknown load balancer (" + DltraceUetLoadBalancer::Names() + ")");
    }
    if (entropies == 0)
    {
        Fail("--entropies 0: a PDC needs at least one entropy value");
    }
    if (transport != "uet" && transport != "rdma")
    {
        Fail("--transport " + transport + ": uet or rdma");
    }
    if (cc != "nscc" && cc != "rccc")
    {
        Fail("--cc " + cc + ": nscc or rccc");
    }
    if (mtu <= DltraceRdmaHeader::kUetOverhead || mtu > 9000)
    {
        Fail("--mtu " + std::to_string(mtu) + ": between 65 and 9000 bytes");
    }

    dltrace::models::TopologySpec spec;
    spec.kind = "star";
    spec.hosts = senders + 1;
    spec.rate_bps = rateBps;
    spec.delay_ns = delayNs;
    const dltrace::models::TopologyGraph graph = dltrace::models::BuildTopology(spec);

    DltraceRdmaHelper fabric;
    if (transport == "uet")
    {
        Config::SetDefault("ns3::DltraceRdmaNic::Mtu", UintegerValue(mtu - DltraceRdmaHeader::kUetOverhead));
        Config::SetDefault("ns3::DltraceRdmaSwitchMmu::PfcEnabled", BooleanValue(false));
        Config::SetDefault("ns3::DltraceRdmaSwitchMmu::BufferSize", UintegerValue(64u << 20));
        Config::SetDefault("ns3::DltraceUetPdc::LoadBalancer", StringValue(lb));
        Config::SetDefault("ns3::DltraceUetPdc::Entropies", UintegerValue(entropies));
        DltraceRdmaHelper::UetConfig uet;
        uet.rccc = cc == "rccc";
        uet.queueBdp = queueBdp;
        uet.queuePackets = queuePackets;
        uet.networkRtt = NanoSeconds(int64_t(std::llround(rttUs * 1000)));
        fabric.SetUet(uet);
    }
    else
    {
        fabric.SetCongestionControl("dcqcn");
    }
    fabric.Build(graph);

    const uint32_t receiver = senders;
    std::vector<Time> done(senders);    // last byte delivered
    std::vector<Time> ackedAt(senders); // last ACK at the sender
    uint64_t delivered = 0;
    fabric.GetNic(receiver)->SetDeliverCallback(MakeBoundCallback(
        +[](std::vector<Time>* d, uint64_t* total, uint32_t src, uint32_t, uint32_t, uint64_t b) {
            (*d)[src] = Simulator::Now();
            *total += b;
        },
        &done,
        &delivered));
    std::vector<Ptr<DltraceUetPdc>> pdcs;
    std::vector<Ptr<DltraceRdmaQueuePair>> qps;
    for (uint32_t s = 0; s < senders; ++s)
    {
        // A flow is complete when its sender has the last ACK (uet-htsim's "finished at").
        auto acked = MakeBoundCallback(
            +[](std::vector<Time>* a, uint32_t src, uint32_t, uint64_t) { (*a)[src] = Simulator::Now(); },
            &ackedAt,
            s);
        if (transport == "uet")
        {
            pdcs.push_back(fabric.CreateUetPdc(s, receiver, 3, 1000 + s));
            pdcs.back()->SetMessageAckedCallback(acked);
            pdcs.back()->PostSend(bytes);
        }
        else
        {
            qps.push_back(fabric.CreateQueuePair(s, receiver, 3, 1000 + s));
            qps.back()->SetMessageAckedCallback(acked);
            qps.back()->PostSend(bytes);
        }
    }
    const auto wallStart = std::chrono::steady_clock::now();
    Simulator::Run();
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wallStart).count();

    Time maxFct;
    for (uint32_t s = 0; s < senders; ++s)
    {
        std::cout << "flow " << s << " -> " << receiver << " fct_us " << ackedAt[s].GetNanoSeconds() / 1000.0
                  << " delivered_us " << done[s].GetNanoSeconds() / 1000.0 << std::endl;
        maxFct = std::max(maxFct, ackedAt[s]);
    }
    uint64_t packets = 0, resent = 0, nacks = 0, timeouts = 0;
    for (const auto& p : pdcs)
    {
        packets += p->GetSentPackets() + p->GetRetransmittedPackets();
        resent += p->GetRetransmittedPackets();
        nacks += p->GetNacks();
        timeouts += p->GetTimeouts();
    }
    for (const auto& q : qps)
    {
        packets += q->GetSentPackets() + q->GetRetransmittedPackets();
        resent += q->GetRetransmittedPackets();
    }
    uint64_t drops = 0, pauses = 0;
    for (uint32_t i = 0; i < fabric.GetSwitchCount(); ++i)
    {
        drops += fabric.GetSwitch(i)->GetMmu()->GetDrops();
    }
    for (const auto& link : fabric.GetLinks())
    {
        for (const auto& dev : {link.a, link.b})
        {
            for (uint32_t c = 0; c < DltraceRdmaNetDevice::kClasses; ++c)
            {
                pauses += dev->GetPfcCounters(c).pausesSent;
            }
        }
    }
    std::cout << std::fixed << std::setprecision(2) << "transport " << transport << " cc "
              << (transport == "uet" ? cc : "dcqcn") << " senders " << senders << " bytes " << bytes
              << " max_fct_us " << maxFct.GetNanoSeconds() / 1000.0 << " delivered " << delivered << " of "
              << uint64_t(senders) * bytes << " trimmed " << fabric.GetUetTrimmed() << " nacks " << nacks
              << " retransmitted " << resent << " timeouts " << timeouts << " drops " << drops
              << " pfc_pauses " << pauses;
    if (fabric.IsUet())
    {
        std::cout << " network_rtt_us " << fabric.GetUetNetworkRtt().GetNanoSeconds() / 1000.0
                  << " queue_bytes " << fabric.GetUetQueueBytes();
    }
    std::cout << " packets " << packets << " wall_s " << std::setprecision(3) << wall << " packets_per_wall_s "
              << std::setprecision(0) << packets / std::max(wall, 1e-9) << std::endl;
    Simulator::Destroy();
    return delivered == uint64_t(senders) * bytes ? 0 : 1;
}
