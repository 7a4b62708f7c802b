// SPDX-License-Identifier: GPL-2.0-only
// The RDMA fabric's validations: each compares a simulated result with a
// closed form or model written here (PFC line rate and headroom, go-back-N
// delivery, the DCQCN fluid model's fixed point, HPCC's eta, TIMELY's band
// and its climb back from the floor after an incast, ECMP collisions against
// adaptive routing and spraying, out-of-order receivers against go-back-N).
// Sizes are kept small (10-100 Gb/s, at most a few tens of ms simulated)
// so each case runs in seconds.
#include "ns3/config.h"
#include "ns3/boolean.h"
#include "ns3/dltrace-rdma-dcqcn.h"
#include "ns3/dltrace-rdma-helper.h"
#include "ns3/dltrace-rdma-hpcc.h"
#include "ns3/dltrace-rdma-net-device.h"
#include "ns3/dltrace-rdma-timely.h"
#include "ns3/dltrace-scenario.h"
#include "ns3/double.h"
#include "ns3/simulator.h"
#include "ns3/test.h"
#include "ns3/uinteger.h"

#include "dltrace-test-schedules.h"

#include "dltrace/models/algorithms.h"
#include "dltrace/models/topology.h"

#include <cmath>
#include <functional>
#include <vector>

using namespace ns3;

namespace
{

constexpr uint32_t kMtu = 1024;
constexpr uint32_t kFrame = kMtu + 62; // RoCEv2: Ethernet 14, IPv4 20, UDP 8, BTH 12, ICRC 4, FCS 4

dltrace::models::TopologyGraph
Star(uint32_t hosts, uint64_t rateBps, uint64_t delayNs)
{
    dltrace::models::TopologySpec spec;
    spec.kind = "star";
    spec.hosts = hosts;
    spec.rate_bps = rateBps;
    spec.delay_ns = delayNs;
    return dltrace::models::BuildTopology(spec);
}

// N senders (hosts 0..N-1) each send BYTES to host N over a star.
struct Incast
{
    DltraceRdmaHelper fabric;
    std::vector<Ptr<DltraceRdmaQueuePair>> qps;
    uint64_t posted = 0;
    uint64_t delivered = 0;
    uint64_t acked = 0;
    Time lastDelivery;
    uint32_t receiver = 0;

    Incast(uint32_t senders, uint64_t rateBps, uint64_t delayNs, const std::string& cc)
        : receiver(senders)
    {
        fabric.SetCongestionControl(cc);
        fabric.Build(Star(senders + 1, rateBps, delayNs));
        fabric.GetNic(receiver)->SetDeliverCallback(MakeCallback(&Incast::Delivered, this));
        for (uint32_t s = 0; s < senders; ++s)
        {
            Ptr<DltraceRdmaQueuePair> qp = fabric.CreateQueuePair(s, receiver, 3, 1000 + s);
            qp->SetMessageAckedCallback(MakeCallback(&Incast::Acked, this));
            qps.push_back(qp);
        }
    }
    void Delivered(uint32_t, uint32_t, uint32_t, uint64_t bytes)
    {
        delivered += bytes;
        lastDelivery = Simulator::Now();
    }
    void Acked(uint32_t, uint64_t bytes)
    {
        acked += bytes;
    }
    /// Sender S posts a message of BYTES at time AT.
    void Send(uint32_t s, uint64_t bytes, Time at)
    {
        posted += bytes;
        Ptr<DltraceRdmaQueuePair> qp = qps[s];
        Simulator::Schedule(at, [qp, bytes]() { qp->PostSend(bytes); });
    }
    Ptr<DltraceRdmaSwitch> Switch() const
    {
        return fabric.GetSwitch(0);
    }
    /// The switch port towards the receiver (the bottleneck).
    Ptr<DltraceRdmaNetDevice> Bottleneck() const
    {
        const auto& links = fabric.GetLinks();
        return links[receiver].b; // link I is host I's; b is the switch side
    }
    uint64_t PausesSent() const
    {
        uint64_t n = 0;
        for (uint32_t p = 0; p < Switch()->GetPortCount(); ++p)
        {
            n += Switch()->GetPort(p)->GetPfcCounters(3).pausesSent;
        }
        return n;
    }
};

// Samples a device's class queue and the bottleneck's transmitted bytes.
struct QueueSampler
{
    Ptr<DltraceRdmaNetDevice> device;
    Time from;
    Time period;
    double sum = 0;
    uint64_t samples = 0;
    uint64_t peak = 0;
    Time until = Time::Max();
    void Start(Ptr<DltraceRdmaNetDevice> d, Time start, Time every)
    {
        device = d;
        from = start;
        period = every;
        Simulator::Schedule(start, &QueueSampler::Sample, this);
    }
    void Sample()
    {
        uint64_t q = device->GetQueueBytes();
        sum += q;
        ++samples;
        peak = std::max(peak, q);
        if (Simulator::Now() + period <= until)
        {
            Simulator::Schedule(period, &QueueSampler::Sample, this);
        }
    }
    double Mean() const
    {
        return samples ? sum / samples : 0;
    }
};

void
Reset()
{
    Simulator::Destroy();
    Config::Reset();
}

// --- PFC -------------------------------------------------------------------

// 8 senders x 1 MB into one 100 Gb/s port with PFC: no drop, every byte
// delivered, and the receiver's link busy: the data frames' wire bytes over
// the completion time are within 5% of line rate.
class PfcIncastTestCase : public TestCase
{
  public:
    PfcIncastTestCase()
        : TestCase("PFC: 8-to-1 incast of 1 MB each loses nothing at line rate")
    {
    }

  private:
    void DoRun() override
    {
        Reset();
        Config::SetDefault("ns3::DltraceRdmaSwitchMmu::BufferSize", UintegerValue(2000000));
        const uint64_t rate = 100000000000ull;
        Incast incast(8, rate, 1000, "none");
        const uint64_t bytes = 1000000;
        for (uint32_t s = 0; s < 8; ++s)
        {
            incast.Send(s, bytes, Seconds(0));
        }
        Simulator::Run();
        NS_TEST_EXPECT_MSG_EQ(incast.delivered, incast.posted, "every byte delivered");
        NS_TEST_EXPECT_MSG_EQ(incast.acked, incast.posted, "every message acknowledged");
        NS_TEST_EXPECT_MSG_EQ(incast.Switch()->GetMmu()->GetDrops(), 0, "lossless");
        NS_TEST_EXPECT_MSG_GT(incast.PausesSent(), 0, "PFC paused the senders");
        // Wire bytes of the data: full frames plus one short frame per message.
        const double packets = std::ceil(double(bytes) / kMtu);
        const double wireBits = 8.0 * 8 * (bytes + packets * 62);
        // The first frame needs a path's serialization and propagation before it counts.
        const double elapsed = incast.lastDelivery.GetSeconds();
        const double utilisation = wireBits / (rate * elapsed);
        std::cout << "PFC incast: " << incast.PausesSent() << " pauses, utilisation "
                  << utilisation << ", peak queue " << incast.Bottleneck()->GetPeakQueueBytes()
                  << " B" << std::endl;
        NS_TEST_EXPECT_MSG_GT(utilisation, 0.95, "receiver link within 5% of line rate");
        NS_TEST_EXPECT_MSG_LT(utilisation, 1.0, "no faster than the link");
        Reset();
    }
};

// PFC off, a 300 KB buffer: the incast drops packets and go-back-N still
// delivers every byte of every message.
class LossyGoBackNTestCase : public TestCase
{
  public:
    LossyGoBackNTestCase()
        : TestCase("lossy RoCE: drops, and go-back-N delivers every byte")
    {
    }

  private:
    void DoRun() override
    {
        Reset();
        Config::SetDefault("ns3::DltraceRdmaSwitchMmu::PfcEnabled", BooleanValue(false));
        Config::SetDefault("ns3::DltraceRdmaSwitchMmu::BufferSize", UintegerValue(300000));
        Config::SetDefault("ns3::DltraceRdmaQueuePair::RetransmitTimeout",
                           TimeValue(MicroSeconds(100)));
        Incast incast(8, 100000000000ull, 1000, "none");
        for (uint32_t s = 0; s < 8; ++s)
        {
            incast.Send(s, 262144 + 1000 * s, Seconds(0));
            incast.Send(s, 5000, MicroSeconds(10)); // a second message on the same QP
        }
        Simulator::Run();
        uint64_t retransmitted = 0;
        for (const auto& qp : incast.qps)
        {
            retransmitted += qp->GetRetransmittedPackets();
        }
        std::cout << "lossy incast: " << incast.Switch()->GetMmu()->GetDrops() << " drops, "
                  << retransmitted << " packets resent, "
                  << incast.fabric.GetNic(8)->GetNacksSent() << " NACKs" << std::endl;
        NS_TEST_EXPECT_MSG_GT(incast.Switch()->GetMmu()->GetDrops(), 0, "the small buffer drops");
        NS_TEST_EXPECT_MSG_EQ(incast.PausesSent(), 0, "no PFC");
        NS_TEST_EXPECT_MSG_GT(retransmitted, 0, "go-back-N resent");
        NS_TEST_EXPECT_MSG_EQ(incast.delivered, incast.posted, "every byte delivered");
        NS_TEST_EXPECT_MSG_EQ(incast.acked, incast.posted, "every message acknowledged");
        Reset();
    }
};

// The headroom formula, written out here: R (2 d + t_r) + 3 frames + a PFC frame.
uint64_t
Headroom(uint64_t rateBps, uint64_t delayNs, uint64_t responseNs)
{
    const uint64_t bits = rateBps / 1000000 * (2 * delayNs + responseNs) / 1000; // R x time
    return (bits + 7) / 8 + 3 * kFrame + 64;
}

// Long cables (5 us) make the bytes in flight after an XOFF large: with the
// formula's headroom no packet is lost; with half of it packets are.
class HeadroomTestCase : public TestCase
{
  public:
    HeadroomTestCase(double fraction)
        : TestCase(fraction >= 1 ? "PFC headroom: the formula's headroom never overflows"
                                 : "PFC headroom: half the formula's headroom overflows"),
          m_fraction(fraction)
    {
    }

  private:
    void DoRun() override
    {
        Reset();
        const double rate = 100e9;
        const double delay = 5e-6;
        const double response = 1e-6;
        const uint64_t h = Headroom(uint64_t(rate), uint64_t(delay * 1e9), uint64_t(response * 1e9));
        NS_TEST_ASSERT_MSG_EQ(DltraceRdmaSwitchMmu::PfcHeadroom(uint64_t(rate),
                                                               Seconds(delay),
                                                               kMtu,
                                                               Seconds(response)),
                              h,
                              "the MMU computes the documented formula");
        const uint64_t given = static_cast<uint64_t>(h * m_fraction);
        Config::SetDefault("ns3::DltraceRdmaSwitchMmu::BufferSize", UintegerValue(3000000));
        Config::SetDefault("ns3::DltraceRdmaSwitchMmu::HeadroomBytes", UintegerValue(given));
        Config::SetDefault("ns3::DltraceRdmaNetDevice::PfcResponseTime",
                           TimeValue(Seconds(response)));
        Incast incast(8, uint64_t(rate), uint64_t(delay * 1e9), "none");
        for (uint32_t s = 0; s < 8; ++s)
        {
            incast.Send(s, 1000000, Seconds(0));
        }
        Simulator::Run();
        Ptr<DltraceRdmaSwitchMmu> mmu = incast.Switch()->GetMmu();
        std::cout << "headroom " << given << " B of " << h << ": peak use "
                  << mmu->GetPeakHeadroomUse() << " B, " << mmu->GetDrops() << " drops, "
                  << incast.PausesSent() << " pauses" << std::endl;
        NS_TEST_EXPECT_MSG_GT(incast.PausesSent(), 0, "PFC paused the senders");
        NS_TEST_EXPECT_MSG_EQ(incast.delivered, incast.posted, "every byte delivered");
        if (m_fraction >= 1)
        {
            NS_TEST_EXPECT_MSG_EQ(mmu->GetDrops(), 0, "the formula's headroom never overflows");
            NS_TEST_EXPECT_MSG_GT(mmu->GetPeakHeadroomUse(), h / 2, "and half would not do");
        }
        else
        {
            NS_TEST_EXPECT_MSG_GT(mmu->GetDrops(), 0, "half the headroom overflows");
        }
        Reset();
    }

    double m_fraction;
};

// --- DCQCN -----------------------------------------------------------------

// The fixed point of the DCQCN fluid model (Zhu et al., "ECN or Delay:
// Lessons Learnt from Analysis of DCQCN and TIMELY", CoNEXT 2016, eqs. 5-8)
// for N flows sharing C: R_C = C/N and, with q = 1 - p,
//   alpha = 1 - q^(tau' R_C)                      (d alpha/dt = 0)
//   (R_T - R_C) a / tau = R_AI R_C e              (dR_T/dt = 0)
//   R_C alpha a / (2 tau) = (R_T - R_C)/2 R_C b   (dR_C/dt = 0)
// where a = 1 - q^(tau R_C), b = p/(q^-B - 1) + p/(q^-(T R_C) - 1) and
// e = q^(F B) p/(q^-B - 1) + q^(F T R_C) p/(q^-(T R_C) - 1), rates in
// packets/s, B the byte counter in packets. Eliminating R_T - R_C leaves
// alpha a^2 = tau^2 R_C R_AI e b, solved for p by bisection.
double
DcqcnFixedPointP(uint32_t n, double capacityBps, double raiBps)
{
    const double tau = 50e-6, tauPrime = 55e-6, timer = 55e-6, f = 5;
    const double pkt = kFrame;
    const double rc = capacityBps / 8 / pkt / n;
    const double bytePackets = 10e6 / pkt;
    const double rai = raiBps / 8 / pkt;
    auto events = [](double p, double count) {
        double x = std::expm1(std::min(-count * std::log1p(-p), 700.0));
        return x > 0 ? p / x : 0.0;
    };
    auto residual = [&](double p) {
        const double q = 1 - p;
        const double a = 1 - std::pow(q, tau * rc);
        const double alpha = 1 - std::pow(q, tauPrime * rc);
        const double b = events(p, bytePackets) + events(p, timer * rc);
        const double e = std::pow(q, f * bytePackets) * events(p, bytePackets) +
                         std::pow(q, f * timer * rc) * events(p, timer * rc);
        return alpha * a * a - tau * tau * rc * rai * e * b;
    };
    double lo = 1e-9, hi = 0.5;
    for (int i = 0; i < 200; ++i)
    {
        double mid = std::sqrt(lo * hi);
        if ((residual(lo) < 0) == (residual(mid) < 0))
        {
            lo = mid;
        }
        else
        {
            hi = mid;
        }
    }
    return lo;
}

class DcqcnTestCase : public TestCase
{
  public:
    explicit DcqcnTestCase(uint32_t flows)
        : TestCase("DCQCN: " + std::to_string(flows) +
                   " flows converge to fair share at the fluid model's fixed point"),
          m_flows(flows)
    {
    }

  private:
    void DoRun() override
    {
        Reset();
        // 10 Gb/s with the DCQCN paper's 40 Gb/s increase steps scaled by 1/4,
        // ECN at the production thresholds scaled to 10 Gb/s (40 / 160 KB, Pmax 0.2).
        const double rate = 10e9;
        const double rai = 10e6;
        Config::SetDefault("ns3::DltraceRdmaDcqcn::RateAi", DoubleValue(rai));
        Config::SetDefault("ns3::DltraceRdmaDcqcn::RateHai", DoubleValue(10 * rai));
        Incast incast(m_flows, uint64_t(rate), 1000, "dcqcn");
        const Time stagger = MilliSeconds(1);
        const Time measureFrom = MilliSeconds(40);
        const Time end = MilliSeconds(100);
        for (uint32_t s = 0; s < m_flows; ++s)
        {
            incast.Send(s, 100000000, stagger * s); // more than they can send by END
        }
        QueueSampler queue;
        queue.Start(incast.Bottleneck(), measureFrom, MicroSeconds(10));
        uint64_t marksAt = 0;
        uint64_t txAt = 0;
        uint64_t cnpsAt = 0;
        Ptr<DltraceRdmaNic> receiverNic = incast.fabric.GetNic(incast.receiver);
        Simulator::Schedule(measureFrom, [&]() {
            cnpsAt = receiverNic->GetCnpsSent();
            marksAt = incast.Switch()->GetMmu()->GetEcnMarks();
            txAt = incast.Bottleneck()->GetTxBytes();
        });
        // Per-flow throughput from the packets each QP has had acknowledged.
        std::vector<uint64_t> sentAt(m_flows), sentEnd(m_flows);
        Simulator::Schedule(measureFrom, [&]() {
            for (uint32_t s = 0; s < m_flows; ++s)
            {
                sentAt[s] = incast.qps[s]->GetAckedPackets();
            }
        });
        Simulator::Schedule(end, [&]() {
            for (uint32_t s = 0; s < m_flows; ++s)
            {
                sentEnd[s] = incast.qps[s]->GetAckedPackets();
            }
        });
        Simulator::Stop(end);
        Simulator::Run();
        const double window = (end - measureFrom).GetSeconds();
        const double fair = rate / m_flows;
        double total = 0;
        for (uint32_t s = 0; s < m_flows; ++s)
        {
            const double r = (sentEnd[s] - sentAt[s]) * 8.0 * kFrame / window;
            total += r;
            std::cout << "DCQCN " << m_flows << " flows: flow " << s << " " << r / 1e9
                      << " Gb/s (fair " << fair / 1e9 << ")" << std::endl;
            NS_TEST_EXPECT_MSG_LT(std::abs(r - fair) / fair, 0.10, "within 10% of fair share");
        }
        const uint64_t dataPackets = (incast.Bottleneck()->GetTxBytes() - txAt) / kFrame;
        const double marked = double(incast.Switch()->GetMmu()->GetEcnMarks() - marksAt) /
                              std::max<uint64_t>(dataPackets, 1);
        const double pStar = DcqcnFixedPointP(m_flows, rate, rai);
        // RED (40 KB at p = 0, Pmax 0.2 at 160 KB) inverted at p*.
        const double kMin = 40000, kMax = 160000, pMax = 0.2;
        const double qStar = kMin + pStar / pMax * (kMax - kMin);
        // The share of CNP intervals (tau = 50 us) with a CNP: 1 - (1 - p*)^(tau R_C) in the model.
        const double tau = 50e-6;
        const double aStar = 1 - std::pow(1 - pStar, tau * rate / m_flows / 8 / kFrame);
        const double cnpShare =
            double(receiverNic->GetCnpsSent() - cnpsAt) / m_flows / (window / tau);
        std::cout << "DCQCN " << m_flows << " flows: CNP share " << cnpShare << " (fluid a* "
                  << aStar << ")" << std::endl;
        std::cout << "DCQCN " << m_flows << " flows: utilisation " << total / rate
                  << ", marking " << marked << " (fluid p* " << pStar << "), mean queue "
                  << queue.Mean() << " B (fluid q* " << qStar << " B), peak " << queue.peak
                  << std::endl;
        m_marked = marked;
        m_pStar = pStar;
        m_queue = queue.Mean();
        m_qStar = qStar;
        NS_TEST_EXPECT_MSG_GT(total / rate, 0.9, "the bottleneck stays busy");
        // Tolerances. The fluid model is a mean-field model: it treats marks as
        // independent with the mean probability p*, while the packet-level
        // queue fluctuates around q* (peak above Kmax/2 here) and marks come
        // in clusters at its peaks. (1) What the reaction point acts on is the
        // share of CNP intervals with a CNP; the model's a* is matched to 20%
        // (the dead-time CNP pacing and the clustering each move it by a few
        // per cent; measured 7-15%). (2) For a given share of intervals with a
        // mark, clustered marks need a larger mean: 1 - (1-p)^n is the most a
        // mean of n p marks per interval can cover, so the marked fraction is
        // at least p* (less 20% for (1)) and, measured, below 2 p*. (3) The
        // mean queue sits below q* because it dips under KMin where nothing
        // marks; RED is linear above KMin, so the gap is the mean depth of
        // those dips: within 15%.
        NS_TEST_EXPECT_MSG_LT(std::abs(cnpShare - aStar) / aStar, 0.20, "CNP share near a*");
        NS_TEST_EXPECT_MSG_GT(marked, 0.8 * pStar, "marking at least p*");
        NS_TEST_EXPECT_MSG_LT(marked, 2.0 * pStar, "marking below 2 p*");
        NS_TEST_EXPECT_MSG_LT(std::abs(queue.Mean() - qStar) / qStar, 0.15, "queue near q*");
        Reset();
    }

    uint32_t m_flows;
    double m_marked = 0, m_pStar = 0, m_queue = 0, m_qStar = 0;
};

// --- HPCC ------------------------------------------------------------------

// 8-to-1 incast at 100 Gb/s with HPCC: after the first round trips the
// bottleneck queue stays near zero (mean below one frame per sender: with
// the aggregate paced at about eta x C < C, a frame waits at most for the
// frames that arrived with it, one per sender) while utilisation stays
// near eta (between eta - 0.05 and 1).
class HpccTestCase : public TestCase
{
  public:
    HpccTestCase()
        : TestCase("HPCC: incast queue near zero at utilisation near eta")
    {
    }

  private:
    void DoRun() override
    {
        Reset();
        const double rate = 100e9;
        const double eta = 0.95;
        Incast incast(8, uint64_t(rate), 1000, "hpcc");
        for (uint32_t s = 0; s < 8; ++s)
        {
            incast.Send(s, 2000000, Seconds(0));
        }
        const Time from = MicroSeconds(300);
        const Time to = MicroSeconds(1100);
        QueueSampler queue;
        queue.until = to;
        queue.Start(incast.Bottleneck(), from, NanoSeconds(500));
        uint64_t txFrom = 0, txTo = 0;
        Simulator::Schedule(from, [&]() { txFrom = incast.Bottleneck()->GetTxBytes(); });
        Simulator::Schedule(to, [&]() {
            txTo = incast.Bottleneck()->GetTxBytes();
        });
        Simulator::Run();
        const double utilisation = (txTo - txFrom) * 8.0 / (rate * (to - from).GetSeconds());
        std::cout << "HPCC incast: utilisation " << utilisation << ", mean queue " << queue.Mean()
                  << " B, peak " << queue.peak << " B, drops "
                  << incast.Switch()->GetMmu()->GetDrops() << ", pauses " << incast.PausesSent()
                  << std::endl;
        NS_TEST_EXPECT_MSG_EQ(incast.delivered, incast.posted, "every byte delivered");
        NS_TEST_EXPECT_MSG_LT(queue.Mean(), 8.0 * kFrame, "steady-state queue near zero");
        NS_TEST_EXPECT_MSG_GT(utilisation, eta - 0.05, "utilisation near eta");
        NS_TEST_EXPECT_MSG_EQ(incast.PausesSent(), 0, "no PFC needed");
        Reset();
    }
};

// One 100 Gb/s hop, base RTT 4 us (cap line rate x T = 50,000 bytes). The
// first ACK after an idle spell compares INT stamps from before it: the
// hop's bytes over 100 us read as U near 0, and the window jumps to the
// cap. Its reference window Wc is capped too (HPCC's public simulator caps
// its new rate before storing it), so the next round trip at line rate (U
// = 1) cuts to Wc Eta / U + W_AI = 47,500 + 20 bytes. Uncapped, Wc would be
// about 1,200 times the cap and the window would stay there.
class HpccCappedReferenceTestCase : public TestCase
{
  public:
    HpccCappedReferenceTestCase()
        : TestCase("HPCC: the reference window is capped, one cut after an idle spell leaves the cap")
    {
    }

  private:
    void DoRun() override
    {
        Ptr<DltraceRdmaHpcc> hpcc = CreateObject<DltraceRdmaHpcc>();
        hpcc->Start(100e9, MicroSeconds(4), kFrame);
        DltraceRdmaHeader h;
        h.SetFlag(DltraceRdmaHeader::INT_ENABLED);
        h.nHops = 1;
        h.hops[0].rateMbps = 100000;
        auto ack = [&](uint32_t tsNs, uint32_t txBytes, uint32_t acked, uint32_t next) {
            h.hops[0].tsNs = tsNs;
            h.hops[0].txBytes = txBytes;
            DltraceRdmaAckInfo info;
            info.ackedPsn = acked;
            info.nextPsn = next;
            info.header = &h;
            hpcc->OnAck(info);
        };
        ack(0, 0, 0, 10);              // the last ACK before the idle spell
        ack(100000, 1000, 10, 100);    // 100 us later: U = 0.0008
        // (within a byte: the window is line rate x T truncated to bytes)
        NS_TEST_EXPECT_MSG_EQ_TOL(double(hpcc->GetWindow()), 50000.0, 1.0, "U near 0: the window at the cap");
        ack(104000, 51000, 100, 200);  // one RTT at line rate: U = 1
        NS_TEST_EXPECT_MSG_EQ_TOL(double(hpcc->GetWindow()), 47520.0, 1.0, "Wc Eta / U + W_AI with Wc at the cap");
    }
};

// --- TIMELY ----------------------------------------------------------------

// 4 long flows on a 10 Gb/s bottleneck, base RTT about 6 us, with T_low
// and T_high set for this fabric as the paper sets them for its own (T_low
// above the base RTT plus a few frames of queue: 10 us, 4 us or 4.6 frames
// above the base; T_high 50 us), the paper's other parameters. Algorithm 1
// as written has no resting point inside the band: below T_low it adds
// delta (10 Mb/s) per completion; inside, a gradient of one frame of queue
// (0.87 us / MinRtt 20 us x alpha) cuts the rate by 3%, thirty times delta
// at 2.5 Gb/s. So the RTT settles at T_low's edge, a limit cycle of a few
// frames around T_low (with the paper's T_low = 50 us on this fabric it
// swings between the base RTT and the band instead, 4% of samples in band;
// README). The test asserts that settling in steady state (150-200 ms;
// the flows start within the first 0.3 ms and ramp for about 100 ms): no
// sample above T_low + 3 us (3.5 frames of queue), so none above T_high;
// the mean RTT within 3 us (half the base RTT) of T_low; the band reached;
// the link over 90% busy.
class TimelyTestCase : public TestCase
{
  public:
    TimelyTestCase()
        : TestCase("TIMELY: under steady load the RTT settles at T_low, below T_high")
    {
    }

  private:
    void DoRun() override
    {
        Reset();
        const double rate = 10e9;
        const double tLow = 10e-6, tHigh = 50e-6, margin = 3e-6;
        Config::SetDefault("ns3::DltraceRdmaTimely::TLow", TimeValue(Seconds(tLow)));
        Config::SetDefault("ns3::DltraceRdmaTimely::THigh", TimeValue(Seconds(tHigh)));
        Incast incast(4, uint64_t(rate), 1000, "timely");
        for (uint32_t s = 0; s < 4; ++s)
        {
            incast.Send(s, 1000000000, MicroSeconds(100) * s);
        }
        const Time from = MilliSeconds(150);
        const Time end = MilliSeconds(200);
        uint64_t inBand = 0, samples = 0, above = 0;
        double sum = 0, peak = 0;
        std::function<void()> sample = [&]() {
            for (const auto& qp : incast.qps)
            {
                Ptr<DltraceRdmaTimely> t = DynamicCast<DltraceRdmaTimely>(qp->GetCongestionControl());
                double rtt = t->GetLastRtt().GetSeconds();
                sum += rtt;
                ++samples;
                inBand += rtt >= tLow && rtt <= tHigh;
                above += rtt > tLow + margin;
                peak = std::max(peak, rtt);
            }
            Simulator::Schedule(MicroSeconds(20), sample);
        };
        Simulator::Schedule(from, sample);
        uint64_t txFrom = 0;
        Simulator::Schedule(from, [&]() { txFrom = incast.Bottleneck()->GetTxBytes(); });
        Simulator::Stop(end);
        Simulator::Run();
        const double utilisation =
            (incast.Bottleneck()->GetTxBytes() - txFrom) * 8.0 / (rate * (end - from).GetSeconds());
        const double mean = sum / samples;
        std::cout << "TIMELY (T_low 10 us, T_high 50 us): mean RTT " << mean * 1e6 << " us, " << inBand
                  << " of " << samples << " samples in [T_low, T_high], peak " << peak * 1e6
                  << " us, utilisation " << utilisation << std::endl;
        NS_TEST_EXPECT_MSG_EQ(above, 0, "no RTT above T_low + 3 us (so none above T_high)");
        NS_TEST_EXPECT_MSG_LT(std::abs(mean - tLow), margin, "the mean RTT settles at T_low");
        NS_TEST_EXPECT_MSG_GT(inBand, 0, "the band is reached");
        NS_TEST_EXPECT_MSG_GT(utilisation, 0.9, "the bottleneck stays busy");
        Reset();
    }
};

// The 8-to-1 incast of issue 45: 1 MB per sender, 100 Gb/s star with 1 us
// links and PFC, TIMELY with its defaults. The senders start at line rate,
// the bottleneck's queue grows to several MB (hundreds of us of RTT) and
// the rising RTT cuts every sender to the floor (100 Mb/s) long before the
// queue drains. From the drain on, every RTT is below T_low, so Algorithm
// 1 adds delta per completion event (SegmentBytes acknowledged): a sender
// at rate r gains delta per 8 S / r seconds, so r >= r_min e^(t / tau)
// with tau = 8 S / delta, and it has sent r_min tau (e^(t / tau) - 1) bits
// t after the drain. The last sender's remaining bytes R therefore arrive
// by t_drain + tau ln(1 + 8 R / (r_min tau)), plus a few round trips (an
// ACK returns before its rate step counts). delta is the paper's 10 Mb/s
// at its 10 Gb/s NICs kept in proportion (100 Mb/s at 100 Gb/s): tau =
// 1.3 ms. With delta left at 10 Mb/s (tau = 13 ms) the incast took 7.1 ms,
// over this bound (about 3.6 ms); the HPCC authors' ns-3 took 1.39 ms
// (issue 45; docs/results/rdma.md).
class TimelyIncastTestCase : public TestCase
{
  public:
    TimelyIncastTestCase()
        : TestCase("TIMELY: an 8-to-1 incast on 100G links recovers from the cut with "
                   "delta in proportion to the line rate")
    {
    }

  private:
    void DoRun() override
    {
        Reset();
        const double rate = 100e9;
        const uint64_t delayNs = 1000;
        const uint32_t senders = 8;
        const uint64_t bytes = 1000000;
        const double delta = 10e6 * rate / 10e9; // the paper's 10 Mb/s at 10 Gb/s
        const double segmentBits = 8.0 * 16384;  // the paper's 16 KB completion event
        const double minRate = 100e6;            // DltraceRdmaCongestionControl's floor
        Incast incast(senders, uint64_t(rate), delayNs, "timely");
        for (uint32_t s = 0; s < senders; ++s)
        {
            incast.Send(s, bytes, Seconds(0));
        }
        // The first moment the bottleneck's queue is empty again, and each
        // sender's acknowledged bytes then.
        Time drained;
        uint64_t leastAcked = 0;
        bool built = false;
        std::function<void()> watch = [&]() {
            uint64_t q = incast.Bottleneck()->GetQueueBytes();
            built = built || q > kFrame;
            if (built && q == 0)
            {
                drained = Simulator::Now();
                leastAcked = bytes;
                for (const auto& qp : incast.qps)
                {
                    uint64_t acked = uint64_t(qp->GetAckedPackets()) * kMtu;
                    leastAcked = std::min(leastAcked, acked);
                }
                return;
            }
            if (incast.delivered < incast.posted) // else the run ends; the checks below fail
            {
                Simulator::Schedule(MicroSeconds(1), watch);
            }
        };
        Simulator::Schedule(Seconds(0), watch);
        Simulator::Run();
        Ptr<DltraceRdmaTimely> cc =
            DynamicCast<DltraceRdmaTimely>(incast.qps[0]->GetCongestionControl());
        const double tau = segmentBits / delta;
        const double remainingBits = 8.0 * (bytes - leastAcked);
        const double roundTrip = 4 * delayNs * 1e-9 + 2 * 8.0 * kFrame / rate;
        const double bound = drained.GetSeconds() +
                             tau * std::log(1 + remainingBits / (minRate * tau)) + 10 * roundTrip;
        const double packets = std::ceil(double(bytes) / kMtu);
        const double ideal = 8.0 * senders * (bytes + packets * 62) / rate;
        const double elapsed = incast.lastDelivery.GetSeconds();
        std::cout << "TIMELY incast: queue drained at " << drained.GetSeconds() * 1e6
                  << " us with at most " << bytes - leastAcked
                  << " B left per sender; last byte at " << elapsed * 1e6 << " us (bound "
                  << bound * 1e6 << " us; the link's time " << ideal * 1e6 << " us, "
                  << elapsed / ideal << "x), pauses " << incast.PausesSent() << ", peak queue "
                  << incast.Bottleneck()->GetPeakQueueBytes() << " B" << std::endl;
        NS_TEST_EXPECT_MSG_EQ_TOL(cc->GetDelta(), delta, 1, "delta in proportion to the line rate");
        NS_TEST_EXPECT_MSG_EQ(incast.delivered, incast.posted, "every byte delivered");
        NS_TEST_EXPECT_MSG_EQ(incast.acked, incast.posted, "every message acknowledged");
        NS_TEST_EXPECT_MSG_EQ(incast.Switch()->GetMmu()->GetDrops(), 0, "lossless");
        NS_TEST_EXPECT_MSG_GT(drained.GetSeconds(), 0, "the queue built and drained");
        NS_TEST_EXPECT_MSG_LT(drained.GetSeconds(), elapsed, "the incast outlasted its queue");
        NS_TEST_EXPECT_MSG_LT(elapsed, bound, "the senders recover from the floor at tau");
        NS_TEST_EXPECT_MSG_GT(elapsed, ideal, "no faster than the bottleneck");
        Reset();
    }
};

// --- Load balancing and out-of-order receivers ------------------------------

// Two 1 MB flows, h0 -> h2 and h1 -> h3, across a 2-leaf, 2-spine leaf-spine
// at 100 Gb/s and 1:1 (each leaf's two uplinks carry its two hosts' rate).
// Under ECMP their flow hashes are chosen to collide on one spine, so they
// share one uplink. The closed forms: one flow alone takes its frames'
// serialization at line rate plus four hops (IDEAL); two on one uplink take
// twice the serialization. EXTRA: more topology keys (a degraded link).
struct SpineFlows
{
    DltraceRdmaHelper fabric;
    std::vector<Ptr<DltraceRdmaQueuePair>> qps;
    std::vector<Time> done;
    uint64_t posted = 0;
    uint64_t delivered = 0;
    static constexpr uint64_t kBytes = 1000000;
    static constexpr uint64_t kRate = 100000000000ull;

    explicit SpineFlows(const std::string& lb, const std::string& extra = "")
        : done(2)
    {
        const uint32_t flows = 2;
        dltrace::models::TopologySpec spec;
        std::string error;
        const bool parsed = dltrace::models::ParseTopology(
            "leaf-spine:leaves=2,spines=2,hosts-per-leaf=2,rate=100Gbps,delay=1us,lb=" + lb + extra,
            4,
            &spec,
            &error);
        NS_ABORT_MSG_UNLESS(parsed, error);
        const dltrace::models::TopologyGraph graph = dltrace::models::BuildTopology(spec);
        fabric.SetCongestionControl("none");
        fabric.Build(graph);
        // Flow hashes that ECMP puts flows 0 and 1 on one spine: the first b whose uplink matches a's.
        const auto to0 = graph.HopsTo(flows), to1 = graph.HopsTo(flows + 1);
        const uint64_t a = 1;
        uint64_t b = 2;
        while (graph.Route(1, flows + 1, to1, b)[1] != graph.Route(0, flows, to0, a)[1])
        {
            ++b;
        }
        for (uint32_t f = 0; f < flows; ++f)
        {
            fabric.GetNic(flows + f)->SetDeliverCallback(MakeBoundCallback(&SpineFlows::Delivered, this, f));
            qps.push_back(fabric.CreateQueuePair(f, flows + f, 3, f == 0 ? a : b));
            posted += kBytes;
            qps.back()->PostSend(kBytes);
        }
        Simulator::Run();
    }
    static void Delivered(SpineFlows* t, uint32_t flow, uint32_t, uint32_t, uint32_t, uint64_t bytes)
    {
        t->delivered += bytes;
        t->done[flow] = Simulator::Now();
    }
    static double Ideal()
    {
        const double packets = std::ceil(double(kBytes) / kMtu);
        return 8.0 * (kBytes + packets * 62) / kRate + 4 * (1e-6 + 8.0 * kFrame / kRate);
    }
    double Slowest() const
    {
        return std::max_element(done.begin(), done.end())->GetSeconds();
    }
    uint64_t Resent() const
    {
        uint64_t n = 0;
        for (const auto& qp : qps)
        {
            n += qp->GetRetransmittedPackets();
        }
        return n;
    }
    uint64_t Nacks() const
    {
        uint64_t n = 0;
        for (uint32_t f = 0; f < qps.size(); ++f)
        {
            n += fabric.GetNic(uint32_t(qps.size()) + f)->GetNacksSent();
        }
        return n;
    }
    /// Bytes leaf 0 sent up to each spine (data; ACKs flow the other way).
    std::vector<uint64_t> Uplinks() const
    {
        std::vector<uint64_t> up;
        const auto& graph = fabric.GetGraph();
        for (size_t l = 0; l < graph.links.size(); ++l)
        {
            if (graph.links[l].name.rfind("leaf0-spine", 0) == 0)
            {
                up.push_back(fabric.GetLinks()[l].a->GetTxBytes());
            }
        }
        return up;
    }
};

// ECMP with colliding hashes: one uplink carries both flows and the other
// none, so the slower flow takes twice the ideal (the closed form; > 1.8x
// allows for the head start of the first packets). Adaptive routing and
// spraying split every flow over both spines: each flow at line rate (within
// 1.3x of the ideal), the uplinks' bytes equal within 10%. Flowlets keep a
// flow's packets on one path: no reordering, nothing resent.
class LoadBalancingTestCase : public TestCase
{
  public:
    LoadBalancingTestCase()
        : TestCase("--topo lb=: ECMP collides two flows on one spine; ar and spray split them evenly")
    {
    }

  private:
    void DoRun() override
    {
        const double ideal = SpineFlows::Ideal();
        Reset();
        {
            SpineFlows ecmp("ecmp");
            const auto up = ecmp.Uplinks();
            std::cout << "lb=ecmp (collision): " << ecmp.Slowest() / ideal << " x ideal, uplinks " << up[0]
                      << " / " << up[1] << " B" << std::endl;
            NS_TEST_EXPECT_MSG_EQ(ecmp.delivered, ecmp.posted, "every byte delivered");
            NS_TEST_EXPECT_MSG_GT(ecmp.Slowest(), 1.8 * ideal, "two flows on one uplink take twice as long");
            NS_TEST_EXPECT_MSG_EQ(std::min(up[0], up[1]), 0, "one uplink idle");
            NS_TEST_EXPECT_MSG_EQ(ecmp.Resent(), 0, "one path per flow: nothing reordered");
        }
        for (const std::string lb : {"ar", "spray"})
        {
            Reset();
            Config::SetDefault("ns3::DltraceRdmaNic::OutOfOrder", BooleanValue(true));
            SpineFlows spread(lb);
            const auto up = spread.Uplinks();
            const double split = std::abs(double(up[0]) - double(up[1])) / double(up[0] + up[1]);
            std::cout << "lb=" << lb << " (out of order): " << spread.Slowest() / ideal << " x ideal, uplinks "
                      << up[0] << " / " << up[1] << " B, " << spread.Resent() << " resent" << std::endl;
            NS_TEST_EXPECT_MSG_EQ(spread.delivered, spread.posted, lb << ": every byte delivered");
            NS_TEST_EXPECT_MSG_LT(spread.Slowest(), 1.3 * ideal, lb << ": each flow near line rate");
            NS_TEST_EXPECT_MSG_LT(split, 0.1, lb << ": the spines carry equal bytes");
        }
        Reset();
        {
            SpineFlows flowlet("flowlet");
            NS_TEST_EXPECT_MSG_EQ(flowlet.delivered, flowlet.posted, "flowlet: every byte delivered");
            NS_TEST_EXPECT_MSG_EQ(flowlet.Resent(), 0, "flowlet: one path per flowlet, nothing reordered");
        }
        Reset();
    }
};

// Adaptive routing reorders packets where its paths differ: here leaf 0's
// uplink to spine 1 runs at a quarter of the rate (two flows on equal paths
// alternate evenly and never reorder). A receiver that places out of order
// takes them as they come: nothing is resent and every byte arrives once. Go-back-N (the default) takes a
// reordered packet for a loss: the receiver NACKs, the sender resends from
// the gap, and still every byte arrives.
class OutOfOrderReceiverTestCase : public TestCase
{
  public:
    OutOfOrderReceiverTestCase()
        : TestCase("OutOfOrder: with lb=ar nothing is resent; go-back-N resends yet delivers every byte")
    {
    }

  private:
    static constexpr const char* kSlowUplink = ",degrade=leaf0-spine1@0.5";
    void DoRun() override
    {
        Reset();
        Config::SetDefault("ns3::DltraceRdmaNic::OutOfOrder", BooleanValue(true));
        uint64_t oooResent = 0;
        double oooTime = 0;
        {
            SpineFlows ooo("ar", kSlowUplink);
            oooResent = ooo.Resent();
            oooTime = ooo.Slowest();
            NS_TEST_EXPECT_MSG_EQ(ooo.delivered, ooo.posted, "out of order: every byte delivered");
            NS_TEST_EXPECT_MSG_EQ(oooResent, 0, "out of order: nothing resent");
            NS_TEST_EXPECT_MSG_EQ(ooo.Nacks(), 0, "out of order: no NACK");
        }
        Reset();
        SpineFlows gbn("ar", kSlowUplink);
        std::cout << "lb=ar, a slow uplink: go-back-N resent " << gbn.Resent() << " packets, " << gbn.Nacks()
                  << " NACKs, slowest " << gbn.Slowest() * 1e6 << " us; out of order resent " << oooResent
                  << ", slowest " << oooTime * 1e6 << " us" << std::endl;
        NS_TEST_EXPECT_MSG_GT(gbn.Resent(), 0, "go-back-N: reordering costs resends");
        NS_TEST_EXPECT_MSG_EQ(gbn.delivered, gbn.posted, "go-back-N: every byte delivered");
        Reset();
    }
};

// --- dltrace simulate --transport rdma --------------------------------------

DltraceScenarioConfig
RdmaConfig(const std::string& topology, const std::string& cc)
{
    DltraceScenarioConfig c;
    c.topology = topology;
    c.transport = "rdma";
    c.rdmaCongestionControl = cc;
    c.flowMonitor = false;
    c.utilInterval = Seconds(0);
    return c;
}

DltraceJobSpec
RingJob(int n, uint64_t bytes, std::vector<uint32_t> hosts, uint32_t priority)
{
    DltraceJobSpec j;
    j.schedule = dltrace_test::AllReduce("ring", n, bytes);
    j.lower.algorithm = "ring";
    j.hosts = std::move(hosts);
    j.priority = priority;
    return j;
}

// Runs CONFIG; per job its duration (s), or -1 when an endpoint did not
// finish or received other than its scheduled bytes.
std::vector<double>
RunScenario(const DltraceScenarioConfig& config)
{
    return dltrace_test::RunScenario(config, [](DltraceScenario& s) {
        std::vector<double> times;
        for (uint32_t j = 0; j < s.GetJobCount(); ++j)
        {
            bool ok = true;
            for (const auto& r : s.GetJob(j)->GetResults())
            {
                ok = ok && r.complete && r.bytes_received == r.bytes_scheduled_recv &&
                     r.bytes_sent == r.bytes_scheduled_send;
            }
            times.push_back(ok ? s.GetJobDuration(j).GetSeconds() : -1.0);
        }
        return times;
    });
}

// A 4 MB ring all-reduce on 4 hosts of a 10 Gb/s star, under every RDMA
// congestion control: every endpoint receives exactly its scheduled bytes,
// and the time matches the bandwidth term 2 (n-1)/n S / B (latency terms
// are ~0.1%) with the wire bytes counted: per 1,024 payload bytes a
// 1,086-byte frame one way and, since a ring sends both ways on every host
// link, the 64-byte ACK of the opposite direction's packet on the same
// link. HPCC adds INT (2 + 16 bytes per switch, on data and ACK) and holds
// the link at eta = 0.95; its window also settles to eta at each step's
// start, so it gets 10% where the others get 5%.
class RdmaScenarioTestCase : public TestCase
{
  public:
    RdmaScenarioTestCase()
        : TestCase("dltrace simulate --transport rdma: a ring all-reduce delivers every "
                   "scheduled byte at line rate under none, dcqcn, hpcc and timely")
    {
    }

  private:
    void DoRun() override
    {
        const uint64_t bytes = 4000000;
        for (const std::string cc : {"none", "dcqcn", "hpcc", "timely"})
        {
            const bool hpcc = cc == "hpcc";
            const double intBytes = hpcc ? 2 + 16 : 0;
            const double wire = (kFrame + intBytes + 64 + intBytes) / kMtu;
            const double estimate = 2.0 * 3 / 4 * bytes * 8 / 10e9 * wire / (hpcc ? 0.95 : 1.0);
            const double tolerance = hpcc ? 0.10 : 0.05;
            Reset();
            DltraceScenarioConfig c = RdmaConfig("star:hosts=4,rate=10Gbps,delay=1us", cc);
            c.jobs.push_back(RingJob(4, bytes, {}, 0));
            const double t = RunScenario(c).at(0);
            std::cout << "rdma " << cc << ": ring all-reduce " << t * 1e3 << " ms (estimate "
                      << estimate * 1e3 << " ms)" << std::endl;
            NS_TEST_EXPECT_MSG_GT(t, 0, cc << ": every endpoint got its scheduled bytes");
            NS_TEST_EXPECT_MSG_LT(std::abs(t - estimate) / estimate, tolerance, cc << ": near line rate");
        }
        Reset();
    }
};

// Two 4 MB ring all-reduces share a dumbbell's 10 Gb/s bottleneck, each
// job with two hosts on each side. With --transport rdma the job's class
// is its RDMA traffic class and switch ports serve classes by strict
// priority; over TCP (NewReno, FIFO bands) its sockets carry DSCP CS<N>
// and the switches run an 8-band PrioQueueDisc. Either way the job in the
// higher class finishes well before it does at equal priority, and ahead of
// the other job, which still finishes.
class PriorityTestCase : public TestCase
{
  public:
    explicit PriorityTestCase(bool rdma)
        : TestCase(rdma ? "--job ...:priority=N: strict priority lets the higher class go first"
                        : "--job ...:priority=N over TCP: DSCP and a priority queue let the higher "
                          "class go first"),
          m_rdma(rdma)
    {
    }

  private:
    void DoRun() override
    {
        const std::string topo = "dumbbell:hosts=8,rate=10Gbps,bottleneck=10Gbps,delay=1us";
        auto run = [&](uint32_t priorityA) {
            Reset();
            DltraceScenarioConfig c = RdmaConfig(topo, "none");
            if (!m_rdma)
            {
                c.transport = "tcp";
                c.congestionControl = "TcpNewReno";
                c.queueDisc = "fifo";
            }
            c.jobs.push_back(RingJob(4, 4000000, {0, 4, 1, 5}, priorityA));
            c.jobs.push_back(RingJob(4, 4000000, {2, 6, 3, 7}, 0));
            return RunScenario(c);
        };
        std::vector<double> equal = run(0);
        std::vector<double> first = run(1);
        std::cout << (m_rdma ? "rdma" : "tcp") << " priority: equal " << equal[0] * 1e3 << " / "
                  << equal[1] * 1e3 << " ms; job 0 first " << first[0] * 1e3 << " / "
                  << first[1] * 1e3 << " ms" << std::endl;
        NS_TEST_EXPECT_MSG_GT(equal[0], 0, "both jobs finish");
        NS_TEST_EXPECT_MSG_GT(first[1], 0, "the lower class finishes too");
        NS_TEST_EXPECT_MSG_LT(first[0], 0.8 * equal[0], "the higher class is faster");
        NS_TEST_EXPECT_MSG_GT(first[1], first[0], "and ahead of the other job");
        Reset();
    }

    bool m_rdma;
};

class DltraceRdmaTestSuite : public TestSuite
{
  public:
    DltraceRdmaTestSuite()
        : TestSuite("dltrace-rdma", UNIT)
    {
        AddTestCase(new PfcIncastTestCase, TestCase::QUICK);
        AddTestCase(new LossyGoBackNTestCase, TestCase::QUICK);
        AddTestCase(new HeadroomTestCase(1.0), TestCase::QUICK);
        AddTestCase(new HeadroomTestCase(0.5), TestCase::QUICK);
        AddTestCase(new DcqcnTestCase(2), TestCase::QUICK);
        AddTestCase(new DcqcnTestCase(4), TestCase::QUICK);
        AddTestCase(new DcqcnTestCase(8), TestCase::QUICK);
        AddTestCase(new HpccTestCase, TestCase::QUICK);
        AddTestCase(new HpccCappedReferenceTestCase, TestCase::QUICK);
        AddTestCase(new TimelyTestCase, TestCase::QUICK);
        AddTestCase(new TimelyIncastTestCase, TestCase::QUICK);
        AddTestCase(new RdmaScenarioTestCase, TestCase::QUICK);
        AddTestCase(new PriorityTestCase(true), TestCase::QUICK);
        AddTestCase(new PriorityTestCase(false), TestCase::QUICK);
        AddTestCase(new LoadBalancingTestCase, TestCase::QUICK);
        AddTestCase(new OutOfOrderReceiverTestCase, TestCase::QUICK);
    }
};

DltraceRdmaTestSuite g_dltraceRdmaTestSuite;

} // namespace
