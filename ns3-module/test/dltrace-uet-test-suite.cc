// SPDX-License-Identifier: GPL-2.0-only
// The Ultra Ethernet transport's checks: incasts that must deliver every byte
// without PFC or drops, trimming when queues are small, completion between the
// closed-form ideal and a multiple of it (simulated time: load cannot move it),
// spraying over a leaf-spine's spines, and the scenario's refusals of bad values.
#include "ns3/boolean.h"
#include "ns3/config.h"
#include "ns3/dltrace-rdma-helper.h"
#include "ns3/dltrace-rdma-net-device.h"
#include "ns3/dltrace-scenario.h"
#include "ns3/simulator.h"
#include "ns3/string.h"
#include "ns3/test.h"
#include "ns3/uinteger.h"

#include "dltrace-test-schedules.h"

#include "dltrace/models/topology.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

using namespace ns3;

namespace
{

constexpr uint32_t kFrame = 4150; // uet-htsim's default MTU: 64 bytes of headers, 4086 of payload
constexpr uint32_t kPayload = kFrame - DltraceRdmaHeader::kUetOverhead;

void
Reset()
{
    Simulator::Destroy();
    Config::Reset();
}

// N senders (hosts 0..N-1) each send BYTES to host N over a star; UET with CC.
struct UetIncast
{
    DltraceRdmaHelper fabric;
    std::vector<Ptr<DltraceUetPdc>> pdcs;
    uint64_t delivered = 0;
    uint64_t acked = 0;
    Time lastAck;

    UetIncast(uint32_t senders, uint64_t rateBps, bool rccc, uint32_t queuePackets, uint64_t bytes)
    {
        Config::SetDefault("ns3::DltraceRdmaNic::Mtu", UintegerValue(kPayload));
        Config::SetDefault("ns3::DltraceRdmaSwitchMmu::PfcEnabled", BooleanValue(false));
        Config::SetDefault("ns3::DltraceRdmaSwitchMmu::BufferSize", UintegerValue(64u << 20));
        DltraceRdmaHelper::UetConfig uet;
        uet.rccc = rccc;
        uet.queuePackets = queuePackets;
        fabric.SetUet(uet);
        dltrace::models::TopologySpec spec;
        spec.kind = "star";
        spec.hosts = senders + 1;
        spec.rate_bps = rateBps;
        spec.delay_ns = 1000;
        fabric.Build(dltrace::models::BuildTopology(spec));
        fabric.GetNic(senders)->SetDeliverCallback(MakeCallback(&UetIncast::Delivered, this));
        for (uint32_t s = 0; s < senders; ++s)
        {
            pdcs.push_back(fabric.CreateUetPdc(s, senders, 3, 1000 + s));
            pdcs.back()->SetMessageAckedCallback(MakeCallback(&UetIncast::Acked, this));
            pdcs.back()->PostSend(bytes);
        }
    }
    void Delivered(uint32_t, uint32_t, uint32_t, uint64_t bytes)
    {
        delivered += bytes;
    }
    void Acked(uint32_t, uint64_t bytes)
    {
        acked += bytes;
        lastAck = Simulator::Now();
    }
    uint64_t Drops() const
    {
        uint64_t d = 0;
        for (uint32_t i = 0; i < fabric.GetSwitchCount(); ++i)
        {
            d += fabric.GetSwitch(i)->GetMmu()->GetDrops();
        }
        for (const auto& l : fabric.GetLinks())
        {
            d += l.a->GetDrops() + l.b->GetDrops();
        }
        return d;
    }
    uint64_t Pauses() const
    {
        uint64_t n = 0;
        for (const auto& l : fabric.GetLinks())
        {
            for (uint32_t c = 0; c < DltraceRdmaNetDevice::kClasses; ++c)
            {
                n += l.a->GetPfcCounters(c).pausesSent + l.b->GetPfcCounters(c).pausesSent;
            }
        }
        return n;
    }
    uint64_t Resent() const
    {
        uint64_t n = 0;
        for (const auto& p : pdcs)
        {
            n += p->GetRetransmittedPackets();
        }
        return n;
    }
};

// Closed form: every sender's frames cross the receiver's link one after the
// other, after the first frame's trip (two hops of 1 us and serialization)
// and before the last ACK's trip back (two hops of 1 us).
double
IdealIncastSeconds(uint32_t senders, uint64_t bytes, double rateBps)
{
    const double packets = std::ceil(double(bytes) / kPayload);
    const double wire = senders * (double(bytes) + packets * DltraceRdmaHeader::kUetOverhead);
    return wire * 8 / rateBps + 2e-6 + kFrame * 8 / rateBps + 2e-6;
}

class UetIncastTestCase : public TestCase
{
  public:
    /// QUEUE_PACKETS: the switch data queue in frames (0: one BDP, the default).
    UetIncastTestCase(bool rccc, uint64_t rateBps, uint32_t queuePackets)
        : TestCase(std::string("UET ") + (rccc ? "RCCC" : "NSCC") + ": a 4-to-1 incast at " +
                   std::to_string(rateBps / 1000000000) + " Gbit with " +
                   (queuePackets ? std::to_string(queuePackets) + "-frame" : "1-BDP") +
                   " queues trims, loses nothing, needs no PFC and ends within 1.5x the ideal"),
          m_rccc(rccc),
          m_rate(rateBps),
          m_queuePackets(queuePackets)
    {
    }

  private:
    void DoRun() override
    {
        Reset();
        const uint32_t senders = 4;
        const uint64_t bytes = 1000000;
        UetIncast incast(senders, m_rate, m_rccc, m_queuePackets, bytes);
        Simulator::Run();
        const double ideal = IdealIncastSeconds(senders, bytes, double(m_rate));
        const double took = incast.lastAck.GetSeconds();
        std::cout << GetName() << ": " << took * 1e6 << " us (ideal " << ideal * 1e6 << " us), trimmed "
                  << incast.fabric.GetUetTrimmed() << ", resent " << incast.Resent() << std::endl;
        NS_TEST_EXPECT_MSG_EQ(incast.delivered, senders * bytes, "every byte delivered");
        NS_TEST_EXPECT_MSG_EQ(incast.acked, senders * bytes, "every message acknowledged");
        NS_TEST_EXPECT_MSG_EQ(incast.Drops(), 0, "trimming instead of drops");
        NS_TEST_EXPECT_MSG_EQ(incast.Pauses(), 0, "no PFC");
        NS_TEST_EXPECT_MSG_GT(incast.fabric.GetUetTrimmed(), 0, "4 windows of 1.5 BDP into one queue trim");
        NS_TEST_EXPECT_MSG_GT_OR_EQ(incast.Resent(), 1, "trimmed packets are resent");
        NS_TEST_EXPECT_MSG_GT_OR_EQ(took, ideal - 1e-6, "no faster than the receiver's link");
        NS_TEST_EXPECT_MSG_LT(took, 1.5 * ideal, "within 1.5x of the ideal");
        Reset();
    }
    bool m_rccc;
    uint64_t m_rate;
    uint32_t m_queuePackets;
};

// One PDC across a leaf-spine of 4 spines: oblivious spraying sends over every
// spine, and the packets (in any order) still make one message.
class UetSprayTestCase : public TestCase
{
  public:
    UetSprayTestCase()
        : TestCase("UET: oblivious spraying spreads one PDC over all 4 spines of a leaf-spine")
    {
    }

  private:
    void DoRun() override
    {
        Reset();
        Config::SetDefault("ns3::DltraceRdmaNic::Mtu", UintegerValue(kPayload));
        Config::SetDefault("ns3::DltraceRdmaSwitchMmu::PfcEnabled", BooleanValue(false));
        Config::SetDefault("ns3::DltraceUetPdc::LoadBalancer", StringValue("oblivious"));
        DltraceRdmaHelper fabric;
        fabric.SetUet(DltraceRdmaHelper::UetConfig());
        dltrace::models::TopologySpec spec;
        spec.kind = "leaf-spine";
        spec.leaves = 2;
        spec.spines = 4;
        spec.hosts_per_leaf = 1;
        fabric.Build(dltrace::models::BuildTopology(spec));
        uint64_t delivered = 0;
        fabric.GetNic(1)->SetDeliverCallback(MakeBoundCallback(
            +[](uint64_t* d, uint32_t, uint32_t, uint32_t, uint64_t b) { *d += b; },
            &delivered));
        Ptr<DltraceUetPdc> pdc = fabric.CreateUetPdc(0, 1, 3, 42);
        const uint64_t bytes = 4000000;
        pdc->PostSend(bytes);
        Simulator::Run();
        NS_TEST_EXPECT_MSG_EQ(delivered, bytes, "every byte delivered");
        uint32_t spinesUsed = 0;
        for (const auto& link : fabric.GetLinks())
        {
            // Leaf-to-spine cables: the sender's leaf sends up on the a or b side.
            if (link.name.find("spine") != std::string::npos && link.name.find("leaf0") != std::string::npos)
            {
                const uint64_t up = link.name.rfind("leaf0", 0) == 0 ? link.a->GetTxBytes() : link.b->GetTxBytes();
                spinesUsed += up > bytes / 8 ? 1 : 0;
            }
        }
        NS_TEST_EXPECT_MSG_EQ(spinesUsed, 4, "each spine carries at least an eighth of the bytes");
        Reset();
    }
};

// The load balancers' rules, value by value (uet-htsim's uec_mp.cpp).
class UetLoadBalancerTestCase : public TestCase
{
  public:
    UetLoadBalancerTestCase()
        : TestCase("UET load balancers: oblivious visits every value each round, bitmap skips penalised values, "
                   "reps and mixed reuse values that came back clean")
    {
    }

  private:
    void DoRun() override
    {
        Reset();
        Ptr<UniformRandomVariable> rng = CreateObject<UniformRandomVariable>();
        const uint32_t n = 16;
        for (uint32_t values : {16u, 12u})
        {
            DltraceUetLoadBalancer lb(DltraceUetLoadBalancer::OBLIVIOUS, values, rng);
            for (uint32_t round = 0; round < 3; ++round)
            {
                std::vector<bool> seen(values, false);
                for (uint32_t i = 0; i < values; ++i)
                {
                    const uint32_t e = lb.Next();
                    NS_TEST_EXPECT_MSG_LT(e, values, "a value in range");
                    const bool again = e < values && seen[e];
                    NS_TEST_EXPECT_MSG_EQ(again, false, "no value twice in a round of " << values);
                    seen[std::min(e, values - 1)] = true;
                }
            }
        }
        {
            // A NACKed value (penalty 4) is skipped on the next 4 rounds, then used again.
            DltraceUetLoadBalancer lb(DltraceUetLoadBalancer::BITMAP, n, rng);
            lb.OnFeedback(5, DltraceUetLoadBalancer::NACK);
            uint32_t uses = 0;
            for (uint32_t i = 0; i < 4 * n; ++i)
            {
                uses += lb.Next() == 5 ? 1 : 0;
            }
            NS_TEST_EXPECT_MSG_EQ(uses, 0, "skipped while penalised");
            for (uint32_t i = 0; i < 2 * n; ++i)
            {
                uses += lb.Next() == 5 ? 1 : 0;
            }
            NS_TEST_EXPECT_MSG_GT(uses, 0, "used again once forgiven");
        }
        for (auto kind : {DltraceUetLoadBalancer::REPS, DltraceUetLoadBalancer::MIXED})
        {
            DltraceUetLoadBalancer lb(kind, n, rng);
            lb.OnFeedback(9, DltraceUetLoadBalancer::GOOD);
            lb.OnFeedback(3, DltraceUetLoadBalancer::ECN);
            lb.OnFeedback(12, DltraceUetLoadBalancer::GOOD);
            NS_TEST_EXPECT_MSG_EQ(lb.Next(), 9, "the oldest clean value first");
            NS_TEST_EXPECT_MSG_EQ(lb.Next(), 12, "then the next clean one (not the marked one)");
        }
        DltraceUetLoadBalancer::Kind kind;
        NS_TEST_EXPECT_MSG_EQ(DltraceUetLoadBalancer::Parse("ecmp", &kind), false, "unknown name refused");
        Reset();
    }
};

// --- dltrace simulate --transport uet ---------------------------------------

DltraceScenarioConfig
UetConfig(std::vector<std::string> params, const std::string& cc = "nscc")
{
    DltraceScenarioConfig c;
    c.topology = "star:hosts=4,rate=100Gbps";
    c.transport = "uet";
    c.rdmaCongestionControl = cc;
    c.ccParams = std::move(params);
    c.flowMonitor = false;
    c.utilInterval = Seconds(0);
    DltraceJobSpec j;
    j.schedule = dltrace_test::AllReduce("ring", 4, 4000000);
    j.lower.algorithm = "ring";
    c.jobs.push_back(j);
    return c;
}

class UetScenarioTestCase : public TestCase
{
  public:
    UetScenarioTestCase()
        : TestCase("--transport uet: a ring all-reduce completes, the summary has its uet line, no drop and no PFC pause")
    {
    }

  private:
    void DoRun() override
    {
        Reset();
        for (const std::string cc : {"nscc", "rccc"})
        {
            std::string summary;
            const bool ok = dltrace_test::RunScenario(UetConfig({"lb=reps", "queue-packets=4"}, cc),
                                                      [&](DltraceScenario& s) {
                                                          std::ostringstream os;
                                                          s.PrintSummary(os);
                                                          summary = os.str();
                                                          bool done = true;
                                                          for (const auto& r : s.GetJob(0)->GetResults())
                                                          {
                                                              done = done && r.complete &&
                                                                     r.bytes_received == r.bytes_scheduled_recv;
                                                          }
                                                          return done;
                                                      });
            NS_TEST_EXPECT_MSG_EQ(ok, true, cc << ": every endpoint received its bytes");
            NS_TEST_EXPECT_MSG_NE(summary.find("uet: "), std::string::npos, cc << ": a uet summary line");
            NS_TEST_EXPECT_MSG_NE(summary.find(" 0 drops, 0 PFC pauses"), std::string::npos,
                                  cc << ": no drop, no pause: " << summary);
            Reset();
        }
    }
};

class UetBadValuesTestCase : public TestCase
{
  public:
    UetBadValuesTestCase()
        : TestCase("--transport uet: bad --cc-param values, load balancer names and entropy counts of 0 get one "
                   "clear line")
    {
    }

  private:
    void DoRun() override
    {
        struct Case
        {
            std::vector<std::string> params;
            std::string cc;
            std::string expect;
        };
        const std::vector<Case> cases = {
            {{"lb=spray"}, "nscc", "unknown load balancer (oblivious, bitmap, reps, mixed)"},
            {{"entropies=0"}, "nscc", "entropies is a whole number of entropy values, 1 to 65536"},
            {{"mtu=64"}, "nscc", "mtu is the full data frame in bytes, 65 to 9000"},
            {{"queue=-1"}, "nscc", "queue is the switch data queue in BDPs"},
            {{"Eta=0.9"}, "nscc", "uet has no such parameter"},
            {{"lb"}, "nscc", "not name=value"},
            {{}, "dcqcn", "--cc dcqcn: --transport uet runs nscc or rccc"},
        };
        for (const auto& c : cases)
        {
            Reset();
            DltraceScenario s;
            std::string error;
            const bool ok = s.Setup(UetConfig(c.params, c.cc), &error);
            NS_TEST_EXPECT_MSG_EQ(ok, false, "refused: " << c.expect);
            NS_TEST_EXPECT_MSG_NE(error.find(c.expect), std::string::npos, "error '" << error << "'");
            NS_TEST_EXPECT_MSG_EQ(error.find('\n'), std::string::npos, "one line");
            s.Destroy();
        }
        Reset();
    }
};

class DltraceUetTestSuite : public TestSuite
{
  public:
    DltraceUetTestSuite()
        : TestSuite("dltrace-uet", UNIT)
    {
        AddTestCase(new UetIncastTestCase(false, 100000000000ull, 8), TestCase::QUICK);
        AddTestCase(new UetIncastTestCase(true, 100000000000ull, 8), TestCase::QUICK);
        AddTestCase(new UetIncastTestCase(false, 400000000000ull, 0), TestCase::QUICK);
        AddTestCase(new UetIncastTestCase(true, 400000000000ull, 0), TestCase::QUICK);
        AddTestCase(new UetSprayTestCase, TestCase::QUICK);
        AddTestCase(new UetLoadBalancerTestCase, TestCase::QUICK);
        AddTestCase(new UetScenarioTestCase, TestCase::QUICK);
        AddTestCase(new UetBadValuesTestCase, TestCase::QUICK);
    }
};

DltraceUetTestSuite g_dltraceUetTestSuite;

} // namespace
