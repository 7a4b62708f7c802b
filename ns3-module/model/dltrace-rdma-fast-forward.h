// SPDX-License-Identifier: GPL-2.0-only
// Steady-state fast-forward of the RDMA fabric: when every busy queue pair's
// rate and every queue have held for a window, credit the stretch until the
// next event at those rates instead of simulating its packets.
#ifndef DLTRACE_RDMA_FAST_FORWARD_H
#define DLTRACE_RDMA_FAST_FORWARD_H

#include "ns3/event-id.h"
#include "ns3/nstime.h"
#include "ns3/object.h"
#include "ns3/ptr.h"

#include <cstdint>
#include <deque>
#include <map>
#include <vector>

namespace ns3
{

class DltraceLinkMonitor;
class DltraceRdmaHelper;
class DltraceRdmaNetDevice;
class DltraceRdmaNetwork;

/**
 * \ingroup dltrace
 * \brief Skips the steady stretches of a run on the RDMA fabric (whole fabric at once).
 *
 * Every Window/4 of simulated time it takes a snapshot: per queue pair
 * whether it is busy, packets sent and acknowledged and when its newest
 * packet left; per port the queued bytes and whether it is paused; the
 * counts of CNPs, ECN marks, PFC frames, NACKs, resends, timeouts and
 * drops; messages posted and delivered; per link direction bytes and
 * packets. Window is by default each congestion control's SteadyWindow
 * (the largest among the busy QPs': DCQCN 5 us, HPCC 20 us), and at
 * least WindowPackets frames at their line rate. The fabric
 * is steady when, over the last Window, no message was posted or
 * delivered, none of those counts moved, no port is paused, every queue
 * stayed within QueueTolerance bytes of its depth now, and every busy QP
 * sent as many packets in the window's first half as in its second and
 * had as many acknowledged as it sent (within Tolerance), and its
 * congestion control says its rate holds for at least MinSkip
 * (GetSteadyHorizon: DCQCN and TIMELY only at line rate; HPCC only with U
 * held over its last round trips).
 *
 * Then the next event is the first of: a busy QP's message coming within a
 * margin of its last packet (its packets in flight, plus 8, so the tail
 * and its ACKs run packet by packet), and the next anchored event of the
 * DltraceTimeline (a job's compute step ending, a sample, the stop time),
 * and the end of any congestion control's steady horizon. When it is at
 * least MinSkip away, everything is skipped to it: each busy QP is
 * credited its rate over the window (packets between the departures of
 * the window's first and last, over the time between them) times the skip
 * in packets of its message (DltraceRdmaQueuePair::FastForward), its
 * receiver the same bytes, each link direction its measured bytes and
 * packets per second times the skip (links.csv), and the timeline moves
 * on. A skip that ends at an anchored event is followed by a check right
 * after that event. Nothing is skipped before the last job started.
 *
 * Per set (PerSet): the busy QPs fall into connected sets, two QPs in one
 * set when their paths (data one way, ACKs and CNPs back) share a link
 * direction. When there are two sets or more and the fabric as a whole is
 * not steady (one set's messages start and end while another's rates
 * hold), each set that is steady by the same test, on its own QPs, link
 * directions, nodes and counters, is held: its ports send nothing and
 * their frames on the wire wait (DltraceRdmaNetDevice::Hold), its QPs send
 * nothing (DltraceRdmaQueuePair::Hold), while ns-3's clock and the other
 * sets go on. The hold ends at the set's own next event (a QP near its
 * tail, a congestion control's horizon), or when anything comes to it (a
 * message posted on one of its QPs or across its links, a frame queued on
 * one of its ports, a PFC frame): then its QPs and links are credited what
 * they would have carried over the hold at the window's rates, and its
 * frames go on as much later as the hold lasted. Nothing is held on
 * fabrics whose load balancer is not per-flow ECMP (a QP's path is not
 * one set of links there).
 */
class DltraceRdmaFastForward : public Object
{
  public:
    static TypeId GetTypeId();
    DltraceRdmaFastForward();

    /// Watches NETWORK's QPs on FABRIC; credits link bytes to LINKS.
    void Watch(const DltraceRdmaHelper* fabric, Ptr<DltraceRdmaNetwork> network, Ptr<DltraceLinkMonitor> links);
    /// Starts checking; nothing is skipped before NOT_BEFORE (on the timeline).
    void Start(Time notBefore);

    uint64_t GetSkips() const;
    Time GetSkippedTime() const;
    /// Data packets credited to QPs instead of simulated.
    uint64_t GetSkippedPackets() const;
    /// Link transmissions (data, ACKs, ...) credited to links.csv instead of simulated.
    uint64_t GetSkippedLinkPackets() const;
    /// Holds of a steady set (PerSet), and their lengths summed.
    uint64_t GetHolds() const;
    Time GetHeldTime() const;
    /// The run is over: ends the holds still on, crediting what they carried.
    void Finish();

  protected:
    void DoDispose() override;

  private:
    struct Snapshot
    {
        Time at; ///< ns-3's clock
        Time window; ///< the window in force
        std::vector<bool> active;
        std::vector<uint32_t> acked;
        std::vector<uint64_t> sent;
        std::vector<Time> lastSend; ///< ns-3's clock when each QP's newest packet left
        std::vector<uint64_t> queues;
        std::vector<uint64_t> linkBytes;
        std::vector<uint64_t> linkPackets;
        // Per set (PerSet): per QP, per link direction, per node.
        std::vector<bool> held;
        std::vector<uint64_t> qpDisturbances; ///< CNPs, resends, timeouts
        std::vector<uint32_t> qpPosted;       ///< messages posted on the QP
        std::vector<uint32_t> open;           ///< not yet acknowledged
        std::vector<uint64_t> pfc;            ///< PFC frames sent per direction
        std::vector<bool> dirPaused;
        std::vector<uint64_t> nodeDisturbances; ///< NACKs and CNPs sent (hosts), marks and drops (switches)
        bool anyUnheld = false; ///< a busy QP not held
        uint64_t disturbances = 0; ///< CNPs, marks, PFC frames, NACKs, resends, timeouts, drops
        uint64_t posted = 0;
        uint64_t delivered = 0;
        bool paused = false;
        bool anyActive = false;
    };

    /// Window, or where it is 0 the largest of the busy QPs' congestion controls'
    /// SteadyWindow and WindowPackets frames at their line rates.
    Time GetWindow() const;
    Snapshot Take() const;
    bool Steady(const Snapshot& now) const;
    void Check();
    void Wake();
    /// Whether the skip taken ends at the next anchored event.
    bool Skip(const Snapshot& old, const Snapshot& now);
    /// Whether busy QP I's rate held over the history up to NOW (FIRST the
    /// oldest snapshot, MIDDLE the one halfway) and its congestion control says it holds.
    bool QpSteady(size_t i, const Snapshot& first, const Snapshot& middle, const Snapshot& now) const;
    /// Packets per second QP I sent between OLD and NOW (from its departures).
    double QpRate(size_t i, const Snapshot& old, const Snapshot& now) const;
    /// Whether a queue of BEFORE bytes is still within QueueTolerance of NOW.
    bool QueueHeld(uint64_t before, uint64_t now) const;
    /// Packets of busy QP I a skip or hold may credit; 0 near its message's tail.
    uint32_t Room(size_t i) const;
    /// How long QP I may be credited at PPS: until its ROOM runs out or its
    /// congestion control's steady horizon ends (s).
    double CreditableFor(size_t i, double pps, uint32_t room) const;
    /// Credits QP I and its receiver PPS x LENGTH packets (at most ROOM);
    /// TIMERS is the time its congestion control's timers did not run.
    void CreditQp(size_t i, double pps, uint32_t room, Time length, Time timers);
    /// Credits link direction D (links.csv, and what snapshots leave out).
    void CreditLink(uint32_t d, uint64_t bytes, uint64_t packets);

    /// A connected set of busy QPs: their link directions and the nodes at their ends.
    struct Set
    {
        std::vector<uint32_t> qps;
        std::vector<uint32_t> dirs;
        std::vector<uint32_t> nodes;
    };
    /// A set held (PerSet), with what it carries per second.
    struct Hold
    {
        std::vector<uint32_t> qps;
        std::vector<double> pps;
        std::vector<uint32_t> room;
        std::vector<uint32_t> dirs;
        std::vector<double> bytesPerS;   ///< per direction in dirs
        std::vector<double> packetsPerS; ///< per direction in dirs
        std::vector<uint64_t> creditedBytes;
        std::vector<uint64_t> creditedPackets;
        Time at;
        EventId release;
        bool live = false;
    };
    /// The link directions of QP I's path and of its ACKs' (cached).
    const std::vector<uint32_t>& RouteDirs(size_t i);
    /// The busy QPs that are not held, in connected sets.
    std::vector<Set> FindSets(const Snapshot& now);
    bool SetSteady(const Snapshot& now, const Set& set) const;
    void HoldSet(const Snapshot& old, const Snapshot& now, const Set& set);
    /// Counts on links.csv what hold H carried up to now.
    void CreditLinks(Hold& h);
    void ReleaseHold(size_t h);
    void BeforePost(size_t qp);
    void Disturbed(Ptr<DltraceRdmaNetDevice> port);

    // Attributes (their defaults are in GetTypeId())
    Time m_window;
    uint32_t m_windowPackets{0};
    double m_tolerance{0};
    uint64_t m_queueTolerance{0};
    Time m_minSkip;
    bool m_perSet{false};

    const DltraceRdmaHelper* m_fabric;
    Ptr<DltraceRdmaNetwork> m_network;
    Ptr<DltraceLinkMonitor> m_links;
    std::vector<Ptr<DltraceRdmaNetDevice>> m_ports;
    Time m_notBefore;
    std::deque<Snapshot> m_history;
    std::vector<uint64_t> m_creditedBytes;   ///< per link direction
    std::vector<uint64_t> m_creditedPackets; ///< per link direction
    EventId m_check;

    // Per set
    bool m_sets{false}; ///< PerSet, on a per-flow ECMP fabric
    std::vector<uint32_t> m_dirNodes;               ///< per direction: its sending node, then its receiving one
    std::vector<std::vector<uint32_t>> m_routeDirs; ///< per QP (RouteDirs)
    std::map<uint32_t, std::vector<uint32_t>> m_hopsTo;
    std::vector<Hold> m_holds;
    std::vector<int64_t> m_holdOfDir; ///< per direction: its live hold in m_holds, or -1
    std::vector<int64_t> m_holdOfQp;  ///< per QP
    /// Per QP: packets credited so far minus those its rates times its skips' lengths
    /// make (within half a packet): a skip rounds against the ones before it.
    std::vector<double> m_creditError;
    size_t m_live{0};
    uint64_t m_holdCount{0};
    Time m_heldTime;

    uint64_t m_skips;
    Time m_skipped;
    uint64_t m_skippedPackets;
    uint64_t m_skippedLinkPackets;
};

} // namespace ns3

#endif /* DLTRACE_RDMA_FAST_FORWARD_H */
