// SPDX-License-Identifier: GPL-2.0-only
// The dltrace module's tests: a ring all-reduce against the alpha-beta
// estimate, two jobs sharing a bottleneck, DCTCP's ECN marks at the switches,
// ECMP on a fat-tree, and the name/spec checks users hit first.
#include "ns3/dltrace-rdma-net-device.h"
#include "ns3/dltrace-rdma-switch-mmu.h"
#include "ns3/dltrace-scenario.h"
#include "ns3/dltrace-tcp-mltcp.h"
#include "ns3/config.h"
#include "ns3/boolean.h"
#include "ns3/double.h"
#include "ns3/tcp-socket-state.h"
#include "ns3/string.h"
#include "ns3/test.h"
#include "ns3/uinteger.h"

#include "dltrace-test-schedules.h"

#include "dltrace/models/algorithms.h"
#include "dltrace/models/cassini.h"
#include "dltrace/models/estimate.h"
#include "dltrace/models/mltcp.h"

#include <algorithm>
#include <memory>

using namespace ns3;

namespace
{

using dltrace_test::AllReduce;

DltraceJobSpec
Job(std::shared_ptr<dltrace::models::Schedule> schedule, std::vector<uint32_t> hosts)
{
    DltraceJobSpec j;
    j.schedule = schedule;
    j.lower.algorithm = "ring";
    j.hosts = std::move(hosts);
    return j;
}

DltraceScenarioConfig
Quiet(const std::string& topology, const std::string& cc)
{
    DltraceScenarioConfig c;
    c.topology = topology;
    c.congestionControl = cc;
    c.flowMonitor = false;
    c.utilInterval = Seconds(0);
    return c;
}

// Runs CONFIG; returns each job's duration in seconds (negative when a job
// did not finish), and the ECN marks.
std::vector<double>
RunJobs(const DltraceScenarioConfig& config, uint64_t* marks = nullptr, uint64_t* bytesMissing = nullptr)
{
    return dltrace_test::RunScenario(config, [&](DltraceScenario& s) {
        std::vector<double> times;
        uint64_t missing = 0;
        for (uint32_t j = 0; j < s.GetJobCount(); ++j)
        {
            bool complete = true;
            for (const auto& r : s.GetJob(j)->GetResults())
            {
                complete = complete && r.complete;
                missing += r.bytes_scheduled_recv - std::min(r.bytes_scheduled_recv, r.bytes_received);
                missing += r.bytes_received - std::min(r.bytes_scheduled_recv, r.bytes_received);
            }
            times.push_back(complete ? s.GetJobDuration(j).GetSeconds() : -1.0);
        }
        if (marks)
        {
            *marks = s.GetEcnMarks();
        }
        if (bytesMissing)
        {
            *bytesMissing = missing;
        }
        return times;
    });
}

class RingAllReduceMatchesEstimateTestCase : public TestCase
{
  public:
    RingAllReduceMatchesEstimateTestCase()
        : TestCase("4 hosts on one 10 Gbps switch: a 10 MB ring all-reduce is within 10% of "
                   "the alpha-beta estimate and delivers every scheduled byte")
    {
    }

  private:
    void DoRun() override
    {
        auto schedule = AllReduce("ring", 4, 10000000);
        DltraceScenarioConfig c = Quiet("star:hosts=4,rate=10Gbps,delay=1us", "TcpNewReno");
        c.jobs.push_back(Job(schedule, {}));
        DltraceScenario s;
        std::string error;
        NS_TEST_ASSERT_MSG_EQ(s.Setup(c, &error), true, error);
        // The applications' trace sources, connected the way users do.
        uint32_t starts = 0;
        uint32_t finishes = 0;
        Time lastEnd;
        Config::ConnectWithoutContext(
            "/NodeList/*/ApplicationList/*/$ns3::DltraceApplication/OpStart",
            MakeBoundCallback(+[](uint32_t* n, uint32_t, uint32_t op) { *n += op == 0 ? 1 : 1000; },
                              &starts));
        Config::ConnectWithoutContext(
            "/NodeList/*/ApplicationList/*/$ns3::DltraceApplication/OpFinish",
            MakeBoundCallback(
                +[](std::pair<uint32_t*, Time*> out, uint32_t, uint32_t op, Time start, Time end) {
                    *out.first += op == 0 && start < end ? 1 : 1000;
                    *out.second = Max(*out.second, end);
                },
                std::make_pair(&finishes, &lastEnd)));
        s.Run();
        NS_TEST_EXPECT_MSG_EQ(starts, 4u, "OpStart once per endpoint for the one op");
        NS_TEST_EXPECT_MSG_EQ(finishes, 4u, "OpFinish once per endpoint, with start < end");
        NS_TEST_EXPECT_MSG_GT(lastEnd, Seconds(0), "OpFinish carries the op's end time");
        uint64_t scheduled = 0;
        uint64_t received = 0;
        uint64_t sent = 0;
        for (const auto& r : s.GetJob(0)->GetResults())
        {
            NS_TEST_ASSERT_MSG_EQ(r.complete, true, "endpoint " << r.endpoint << ": " << r.error);
            scheduled += r.bytes_scheduled_recv;
            received += r.bytes_received;
            sent += r.bytes_sent;
        }
        NS_TEST_EXPECT_MSG_EQ(received, scheduled, "bytes delivered equal bytes scheduled");
        NS_TEST_EXPECT_MSG_EQ(sent, scheduled, "bytes sent equal bytes scheduled");
        // 2(n-1)/n * S on each link; one message crosses two links (host-switch-host).
        const dltrace::models::Estimate e =
            dltrace::models::EstimateSchedule(*schedule, dltrace::models::Link{10, 2000});
        const double simulated = s.GetJobDuration(0).GetSeconds();
        const double estimated = e.total_ns * 1e-9;
        std::clog << "ring all-reduce 10 MB, 4 x 10 Gbit/s: simulated " << simulated * 1e3
                  << " ms, estimate " << estimated * 1e3 << " ms" << std::endl;
        NS_TEST_EXPECT_MSG_GT(estimated, 0.010, "the estimate covers 15 MB per rank at 10 Gbit/s");
        NS_TEST_EXPECT_MSG_EQ_TOL(simulated, estimated, 0.10 * estimated,
                                  "simulated time within 10% of the alpha-beta estimate");
        s.Destroy();
    }
};

class TwoJobsShareBottleneckTestCase : public TestCase
{
  public:
    TwoJobsShareBottleneckTestCase()
        : TestCase("two jobs across one dumbbell bottleneck each take longer than alone; "
                   "with DCTCP the switch queues mark ECN")
    {
    }

  private:
    void DoRun() override
    {
        // Hosts 0,1 on the left switch, 2,3 on the right: each job crosses the bottleneck.
        auto a = AllReduce("ring", 2, 20000000);
        auto b = AllReduce("ring", 2, 20000000);
        const std::string topo = "dumbbell:hosts=4,rate=10Gbps,delay=2us";
        for (const std::string cc : {"TcpNewReno", "TcpDctcp"})
        {
            DltraceScenarioConfig alone = Quiet(topo, cc);
            alone.jobs.push_back(Job(a, {0, 2}));
            const double aloneA = RunJobs(alone)[0];
            alone.jobs[0] = Job(b, {1, 3});
            const double aloneB = RunJobs(alone)[0];

            DltraceScenarioConfig both = Quiet(topo, cc);
            both.jobs.push_back(Job(a, {0, 2}));
            both.jobs.push_back(Job(b, {1, 3}));
            uint64_t marks = 0;
            uint64_t missing = 0;
            auto together = RunJobs(both, &marks, &missing);
            std::clog << cc << ": alone " << aloneA * 1e3 << " / " << aloneB * 1e3
                      << " ms, together " << together[0] * 1e3 << " / " << together[1] * 1e3
                      << " ms, " << marks << " ECN marks" << std::endl;
            NS_TEST_ASSERT_MSG_GT(aloneA, 0, cc << ": job A alone finished");
            NS_TEST_ASSERT_MSG_GT(aloneB, 0, cc << ": job B alone finished");
            NS_TEST_ASSERT_MSG_GT(together[0], 0, cc << ": job A finished beside B");
            NS_TEST_ASSERT_MSG_GT(together[1], 0, cc << ": job B finished beside A");
            NS_TEST_EXPECT_MSG_EQ(missing, 0, cc << ": every scheduled byte arrived");
            NS_TEST_EXPECT_MSG_GT(together[0], 1.3 * aloneA, cc << ": A slower when sharing");
            NS_TEST_EXPECT_MSG_GT(together[1], 1.3 * aloneB, cc << ": B slower when sharing");
            if (std::string(cc) == "TcpDctcp")
            {
                NS_TEST_EXPECT_MSG_GT(marks, 0, "DCTCP: the RED queues marked ECN");
            }
            else
            {
                NS_TEST_EXPECT_MSG_EQ(marks, 0, "NewReno over FIFO queues: no ECN marks");
            }
        }
    }
};

class FatTreeEcmpTestCase : public TestCase
{
  public:
    FatTreeEcmpTestCase()
        : TestCase("fat-tree k=4 and leaf-spine: an all-reduce across pods completes with "
                   "every byte (flow-hash ECMP routes)")
    {
    }

  private:
    void DoRun() override
    {
        for (const std::string topo : {"fat-tree:k=4,rate=10Gbps", "leaf-spine:rate=10Gbps,oversub=2"})
        {
            DltraceScenarioConfig c = Quiet(topo, "TcpBic");
            c.jobs.push_back(Job(AllReduce("hd", 8, 4000000), {}));
            uint64_t missing = 0;
            auto t = RunJobs(c, nullptr, &missing);
            NS_TEST_EXPECT_MSG_GT(t[0], 0, topo << ": the job finished");
            NS_TEST_EXPECT_MSG_EQ(missing, 0, topo << ": every scheduled byte arrived");
        }
    }
};

class NamesAndSpecsTestCase : public TestCase
{
  public:
    NamesAndSpecsTestCase()
        : TestCase("congestion-control names and topology specs are checked before use")
    {
    }

  private:
    void DoRun() override
    {
        TypeId tid;
        std::string error;
        NS_TEST_EXPECT_MSG_EQ(DltraceFindCongestionControl("dctcp", &tid, &error), true, error);
        NS_TEST_EXPECT_MSG_EQ(tid.GetName(), "ns3::TcpDctcp", "short name");
        NS_TEST_EXPECT_MSG_EQ(DltraceFindCongestionControl("ns3::TcpBic", &tid, &error), true, error);
        NS_TEST_EXPECT_MSG_EQ(DltraceFindCongestionControl("TcpBbr", &tid, &error), true, error);
        NS_TEST_EXPECT_MSG_EQ(DltraceFindCongestionControl("TcpNoSuch", &tid, &error), false, "unknown");
        NS_TEST_EXPECT_MSG_NE(error.find("TcpNewReno"), std::string::npos, "lists the names");

        DltraceTopologyConfig t;
        NS_TEST_EXPECT_MSG_EQ(DltraceTopologyConfig::Parse("leaf-spine", 8, &t, &error), true, error);
        NS_TEST_EXPECT_MSG_GT_OR_EQ(t.HostCount(), 8u, "defaults sized to the hosts needed");
        NS_TEST_EXPECT_MSG_EQ(DltraceTopologyConfig::Parse("fat-tree", 20, &t, &error), true, error);
        NS_TEST_EXPECT_MSG_EQ(t.k, 6u, "smallest k with k^3/4 >= 20 hosts");
        NS_TEST_EXPECT_MSG_EQ(DltraceTopologyConfig::Parse("torus", 8, &t, &error), false, "kind");
        NS_TEST_EXPECT_MSG_EQ(DltraceTopologyConfig::Parse("star:rate=fast", 8, &t, &error), false, "rate");
        NS_TEST_EXPECT_MSG_EQ(DltraceTopologyConfig::Parse("star:k=4", 8, &t, &error), false, "key");
        NS_TEST_EXPECT_MSG_EQ(DltraceTopologyConfig::Parse("leaf-spine:leaves=2,hosts-per-leaf=2,"
                                                           "spines=2,oversub=2,rate=25G,delay=500ns",
                                                           4, &t, &error),
                              true, error);
        NS_TEST_EXPECT_MSG_EQ(t.rate_bps, 25000000000ull, "rate");
        NS_TEST_EXPECT_MSG_EQ(t.delay_ns, 500u, "delay");

        DltraceJobSpec j;
        NS_TEST_EXPECT_MSG_EQ(DltraceJobSpec::Parse("/t:hosts=0-3,6:start=0.5s:algo=tree", &j, &error),
                              true, error);
        NS_TEST_EXPECT_MSG_EQ(j.hosts.size(), 5u, "host list");
        NS_TEST_EXPECT_MSG_EQ(j.start_ns, 500000000u, "start");
        NS_TEST_EXPECT_MSG_EQ(j.lower.algorithm, "tree", "algorithm");
        NS_TEST_EXPECT_MSG_EQ(DltraceJobSpec::Parse("/t:algo=magic", &j, &error), false, "algorithm");
    }
};

// The scenario's config struct and the attributes it sets must not drift
// apart: a default changed in one place only fails here.
class ConfigDefaultsMatchAttributesTestCase : public TestCase
{
  public:
    ConfigDefaultsMatchAttributesTestCase()
        : TestCase("the scenario config's defaults are the network helper's, link monitor's, "
                   "RDMA net device's and switch MMU's attribute defaults")
    {
    }

  private:
    static std::string Default(TypeId tid, const std::string& name)
    {
        TypeId::AttributeInformation info;
        NS_ABORT_MSG_UNLESS(tid.LookupAttributeByName(name, &info),
                            "no attribute " << name << " in " << tid.GetName());
        return info.initialValue->SerializeToString(info.checker);
    }

    static std::string Serialize(const AttributeValue& value, TypeId tid, const std::string& name)
    {
        TypeId::AttributeInformation info;
        NS_ABORT_MSG_UNLESS(tid.LookupAttributeByName(name, &info),
                            "no attribute " << name << " in " << tid.GetName());
        return value.SerializeToString(info.checker);
    }

    void DoRun() override
    {
        const DltraceScenarioConfig c;
        const TypeId net = DltraceNetworkHelper::GetTypeId();
        const std::vector<std::pair<std::string, Ptr<const AttributeValue>>> expected = {
            {"CongestionControl", Create<StringValue>(c.congestionControl)},
            {"SegmentSize", Create<UintegerValue>(c.segmentSize)},
            {"SndBufSize", Create<UintegerValue>(c.sndBufBytes)},
            {"RcvBufSize", Create<UintegerValue>(c.rcvBufBytes)},
            {"MinRto", Create<TimeValue>(c.minRto)},
            {"Recovery", Create<StringValue>(c.recovery)},
            {"QueueDisc", Create<StringValue>(c.queueDisc)},
            {"QueuePackets", Create<UintegerValue>(c.queuePackets)},
            {"EcnThreshold", Create<UintegerValue>(c.ecnThresholdPackets)}};
        for (const auto& [name, value] : expected)
        {
            NS_TEST_EXPECT_MSG_EQ(Serialize(*value, net, name), Default(net, name), name);
        }
        const TypeId links = DltraceLinkMonitor::GetTypeId();
        NS_TEST_EXPECT_MSG_EQ(Serialize(TimeValue(c.utilInterval), links, "Interval"),
                              Default(links, "Interval"),
                              "Interval");
        // --rdma-egress and --no-pfc set these two; their defaults must agree.
        const TypeId device = DltraceRdmaNetDevice::GetTypeId();
        NS_TEST_EXPECT_MSG_EQ(c.rdmaEgress, Default(device, "Scheduler"), "Scheduler");
        const TypeId mmu = DltraceRdmaSwitchMmu::GetTypeId();
        NS_TEST_EXPECT_MSG_EQ(Serialize(BooleanValue(c.pfc), mmu, "PfcEnabled"),
                              Default(mmu, "PfcEnabled"),
                              "PfcEnabled");
    }
};

// MLTCP's window growth on a case computed by hand: F(r) = S r + I with the
// defaults S = 1, I = 0.5, at r = 0.75 (1500 of the job's 2000 bytes of
// iteration 0 sent) is 1.25.
class MltcpWindowGrowthTestCase : public TestCase
{
  public:
    MltcpWindowGrowthTestCase()
        : TestCase("MLTCP: congestion avoidance grows the window by F(bytes_ratio) times the "
                   "algorithm's own step (NewReno per ACK, DCTCP per window)")
    {
    }

  private:
    static Ptr<TcpSocketState> Window(uint32_t segment, uint32_t cwnd)
    {
        Ptr<TcpSocketState> tcb = CreateObject<TcpSocketState>();
        tcb->m_segmentSize = segment;
        tcb->m_cWnd = cwnd;
        tcb->m_ssThresh = cwnd / 2; // congestion avoidance
        return tcb;
    }

    void DoRun() override
    {
        // 2 endpoints exchanging 1000 bytes per iteration: 2000 job bytes per iteration.
        auto schedule = std::make_shared<dltrace::models::Schedule>(
            dltrace::models::PeriodicExchange(2, 2, 1000, 1000));
        auto progress = std::make_shared<dltrace::models::JobProgress>(*schedule);
        progress->Sent(0, 1, 1000);
        progress->Sent(1, 1, 500);
        // NewReno: MSS^2 / cwnd = 1000 * 1000 / 10000 = 100 bytes per ACK; MLTCP 1.25 * 100.
        Ptr<TcpMltcpNewReno> reno = CreateObject<TcpMltcpNewReno>();
        Ptr<TcpSocketState> tcb = Window(1000, 10000);
        reno->IncreaseWindow(tcb, 1);
        NS_TEST_EXPECT_MSG_EQ(tcb->m_cWnd.Get(), 10100u, "unbound: plain NewReno (+100)");
        // The whole job's ratio: 1500 of its 2000 bytes (the default counts the endpoint's).
        reno->SetAttribute("PerEndpoint", BooleanValue(false));
        reno->BindProgress(progress, 0);
        NS_TEST_EXPECT_MSG_EQ_TOL(reno->GetGain(), 1.25, 1e-12, "F(0.75) = 0.75 + 0.5");
        tcb = Window(1000, 10000);
        reno->IncreaseWindow(tcb, 1);
        NS_TEST_EXPECT_MSG_EQ(tcb->m_cWnd.Get(), 10125u, "MLTCP NewReno: +1.25 * 100 bytes");
        // Per endpoint: endpoint 1 sent 500 of its 1000 bytes, F(0.5) = 1.
        reno->SetAttribute("PerEndpoint", BooleanValue(true));
        reno->BindProgress(progress, 1);
        NS_TEST_EXPECT_MSG_EQ_TOL(reno->GetGain(), 1.0, 1e-12, "F(0.5) = 1");
        reno->SetAttribute("Slope", DoubleValue(3.0));
        NS_TEST_EXPECT_MSG_EQ_TOL(reno->GetGain(), 2.0, 1e-12, "F(0.5) = 3 * 0.5 + 0.5");
        // A fork (an accepted socket) keeps the binding and the parameters.
        Ptr<TcpCongestionOps> fork = reno->Fork();
        NS_TEST_EXPECT_MSG_EQ_TOL(DynamicCast<TcpMltcpNewReno>(fork)->GetGain(), 2.0, 1e-12, "fork");
        NS_TEST_EXPECT_MSG_EQ(fork->GetName(), "TcpMltcpNewReno", "the fork's name");

        // DCTCP (Linux Reno counting): one MSS once cwnd/MSS = 10 segments are
        // counted; at F = 1.25 that is after 8 ACKs of one segment (8 * 1.25 = 10), not 10.
        Ptr<TcpMltcpDctcp> dctcp = CreateObject<TcpMltcpDctcp>();
        dctcp->SetAttribute("PerEndpoint", BooleanValue(false));
        dctcp->BindProgress(progress, 0);
        tcb = Window(1000, 10000);
        for (int i = 0; i < 7; ++i)
        {
            dctcp->IncreaseWindow(tcb, 1);
        }
        NS_TEST_EXPECT_MSG_EQ(tcb->m_cWnd.Get(), 10000u, "7 ACKs: 8.75 segments counted");
        dctcp->IncreaseWindow(tcb, 1);
        NS_TEST_EXPECT_MSG_EQ(tcb->m_cWnd.Get(), 11000u, "8th ACK: 10 counted, one MSS more");
        NS_TEST_EXPECT_MSG_EQ(dctcp->Fork()->GetName(), "TcpMltcpDctcp", "DCTCP variant's name");
        // The names --cc takes.
        TypeId tid;
        std::string error;
        NS_TEST_EXPECT_MSG_EQ(DltraceFindCongestionControl("mltcp-newreno", &tid, &error), true, error);
        NS_TEST_EXPECT_MSG_EQ(tid.GetName(), "ns3::TcpMltcpNewReno", "mltcp-newreno");
        NS_TEST_EXPECT_MSG_EQ(DltraceFindCongestionControl("mltcp-dctcp", &tid, &error), true, error);
        NS_TEST_EXPECT_MSG_EQ(tid.GetName(), "ns3::TcpMltcpDctcp", "mltcp-dctcp");
    }
};

// Mean iteration time of each job over its last LAST iterations: per
// endpoint each iteration's length (compute and communication), averaged.
std::vector<double>
MeanLastIterations(const DltraceScenarioConfig& config, int last)
{
    return dltrace_test::RunScenario(config, [&](DltraceScenario& s) {
        std::vector<double> means;
        for (uint32_t j = 0; j < s.GetJobCount(); ++j)
        {
            double sum = 0;
            int n = 0;
            for (const auto& r : s.GetJob(j)->GetResults())
            {
                if (!r.complete)
                {
                    means.push_back(-1);
                    break;
                }
                const int count = int(r.iterations.size());
                for (int i = std::max(0, count - last); i < count; ++i)
                {
                    sum += double(r.iterations[size_t(i)].end_ns - r.iterations[size_t(i)].start_ns);
                    ++n;
                }
            }
            if (means.size() == j)
            {
                means.push_back(n ? sum / n * 1e-9 : -1);
            }
        }
        return means;
    });
}

class MltcpTwoJobsTestCase : public TestCase
{
  public:
    MltcpTwoJobsTestCase()
        : TestCase("MLTCP on two jobs that collide under NewReno on a dumbbell bottleneck: lower "
                   "mean iteration time over the last iterations, which a constant F of the same "
                   "mean does not give")
    {
    }

  private:
    void DoRun() override
    {
        // Each job: 2 hosts across a 10 Gbit/s dumbbell, 20 iterations of 6 ms
        // compute then 5 MB each way (4 ms alone): about 10.3 ms per iteration
        // alone, 40 % of it communication. Both start at 0, so their
        // communication phases meet; 30-packet switch queues (with the default
        // 1000 the two flows' 256 KiB windows never overflow them, TCP never
        // leaves slow start and there is no additive increase to scale).
        // MLTCP with F(r) = 2 r + 1 against NewReno, and against the same
        // algorithm with F = 2 throughout (MLTCP's mean F: as aggressive on
        // average, but blind to the bytes ratio).
        auto job = std::make_shared<dltrace::models::Schedule>(
            dltrace::models::PeriodicExchange(2, 20, 6000000, 5000000));
        auto run = [&](const std::string& cc, double slope, double intercept) {
            Config::SetDefault("ns3::TcpMltcpNewReno::Slope", DoubleValue(slope));
            Config::SetDefault("ns3::TcpMltcpNewReno::Intercept", DoubleValue(intercept));
            DltraceScenarioConfig c = Quiet("dumbbell:hosts=4,rate=10Gbps,delay=2us", cc);
            c.queuePackets = 30;
            c.jobs.push_back(Job(job, {0, 2}));
            c.jobs.push_back(Job(job, {1, 3}));
            return MeanLastIterations(c, 8);
        };
        const std::vector<double> reno = run("TcpNewReno", 1.0, 0.5);
        const std::vector<double> flat = run("mltcp-newreno", 0.0, 2.0);
        const std::vector<double> mltcp = run("mltcp-newreno", 2.0, 1.0);
        Config::SetDefault("ns3::TcpMltcpNewReno::Slope", DoubleValue(1.0));
        Config::SetDefault("ns3::TcpMltcpNewReno::Intercept", DoubleValue(0.5));
        std::clog << "mean of the last 8 of 20 iterations, ms: NewReno " << reno[0] * 1e3 << " / "
                  << reno[1] * 1e3 << "; F = 2 " << flat[0] * 1e3 << " / " << flat[1] * 1e3
                  << "; MLTCP F = 2r + 1 " << mltcp[0] * 1e3 << " / " << mltcp[1] * 1e3 << std::endl;
        for (const auto* m : {&reno, &flat, &mltcp})
        {
            NS_TEST_ASSERT_MSG_GT((*m)[0], 0, "job A finished every iteration");
            NS_TEST_ASSERT_MSG_GT((*m)[1], 0, "job B finished every iteration");
        }
        // Alone an iteration is 6 ms + 5 MB at 10 Gbit/s (+ headers, slow start).
        const double alone = 6e-3 + 5e6 * 8 / 10e9;
        // Under NewReno, and with a constant F, the jobs collide: one of them
        // is well above its time alone.
        NS_TEST_EXPECT_MSG_GT(std::max(reno[0], reno[1]), 1.15 * alone, "NewReno: the jobs collide");
        NS_TEST_EXPECT_MSG_GT(std::max(flat[0], flat[1]), 1.15 * alone, "F = 2: the jobs collide");
        // MLTCP interleaves them: lower mean, each job within 5 % of alone.
        NS_TEST_EXPECT_MSG_LT(mltcp[0] + mltcp[1], reno[0] + reno[1], "MLTCP: lower than NewReno");
        NS_TEST_EXPECT_MSG_LT(mltcp[0] + mltcp[1], flat[0] + flat[1], "MLTCP: lower than F = 2");
        NS_TEST_EXPECT_MSG_LT(mltcp[0], 1.05 * alone, "MLTCP: job A interleaved");
        NS_TEST_EXPECT_MSG_LT(mltcp[1], 1.05 * alone, "MLTCP: job B interleaved");
    }
};

class DltraceTestSuite : public TestSuite
{
  public:
    DltraceTestSuite()
        : TestSuite("dltrace", UNIT)
    {
        AddTestCase(new NamesAndSpecsTestCase, TestCase::QUICK);
        AddTestCase(new ConfigDefaultsMatchAttributesTestCase, TestCase::QUICK);
        AddTestCase(new RingAllReduceMatchesEstimateTestCase, TestCase::QUICK);
        AddTestCase(new TwoJobsShareBottleneckTestCase, TestCase::QUICK);
        AddTestCase(new FatTreeEcmpTestCase, TestCase::QUICK);
        AddTestCase(new MltcpWindowGrowthTestCase, TestCase::QUICK);
        AddTestCase(new MltcpTwoJobsTestCase, TestCase::QUICK);
    }
};

DltraceTestSuite g_dltraceTestSuite;

} // namespace
