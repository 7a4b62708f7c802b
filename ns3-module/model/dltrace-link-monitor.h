// SPDX-License-Identifier: GPL-2.0-only
// Counts what each direction of each link carries (bytes, packets, device
// drops) and samples the bytes per direction every Interval, for links.csv.
#ifndef DLTRACE_LINK_MONITOR_H
#define DLTRACE_LINK_MONITOR_H

#include "ns3/net-device.h"
#include "ns3/nstime.h"
#include "ns3/object.h"
#include "ns3/packet.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace ns3
{

/**
 * \ingroup dltrace
 * \brief Per-direction link counters and periodic utilisation samples.
 *
 * AddLink() connects to both devices' PhyTxEnd and MacTxDrop trace sources;
 * Start() schedules the first sample, and sampling goes on while anything
 * else is still scheduled; Finish() samples the last, shorter period of a
 * run that stopped between two samples.
 */
class DltraceLinkMonitor : public Object
{
  public:
    /// One direction of a link: what its transmitting device put on the wire.
    struct Direction
    {
        std::string name; ///< "h3-leaf0" from h3's device, "leaf0-h3" back
        uint64_t rateBps = 0;
        uint64_t bytes = 0;
        uint64_t packets = 0;
    };

    /// Bytes each direction carried between the previous sample (or 0) and TimeS.
    struct Sample
    {
        double timeS;
        std::vector<uint64_t> bytes; ///< per direction, in AddLink order
    };

    static TypeId GetTypeId();
    DltraceLinkMonitor();
    ~DltraceLinkMonitor() override;

    /// Watches a link of RATE_BPS: direction NAME ("a-b") sent by A, REVERSE_NAME ("b-a") by B.
    void AddLink(const std::string& name,
                 const std::string& reverseName,
                 uint64_t rateBps,
                 Ptr<NetDevice> a,
                 Ptr<NetDevice> b);
    /// Schedules the first sample one Interval from now (nothing when Interval is 0).
    void Start();
    /// After Simulator::Run: samples what the links carried since the last
    /// sample when the run stopped after it (a run that ends when its jobs
    /// do stops between samples), as the flow simulator's last sample does.
    void Finish();

    /**
     * Calls HOOK after every EVERY packets put on the watched links (over all
     * directions): a cheap place to look at the wall clock while the
     * simulation runs (DltraceScenario's progress lines). EVERY 0: never.
     */
    void SetPacketHook(uint64_t every, std::function<void()> hook);

    uint32_t GetDirectionCount() const;
    const Direction& GetDirection(uint32_t d) const;
    const std::vector<Sample>& GetSamples() const;
    /// Packets put on links, over every direction.
    uint64_t GetLinkPackets() const;
    /// Packets the devices dropped before transmitting (MacTxDrop).
    uint64_t GetDeviceDrops() const;
    /// Counts what direction D carried during a fast-forward, as if it had gone.
    void Credit(uint32_t d, uint64_t bytes, uint64_t packets);
    /// Called before each sample (a fast-forward credits the links it holds).
    void SetBeforeSampleCallback(std::function<void()> cb);

  private:
    static void CountTx(uint64_t* bytes, uint64_t* packets, Ptr<const Packet> packet);
    static void CountLinkTx(DltraceLinkMonitor* monitor, Direction* direction, Ptr<const Packet> packet);
    void SampleLinks();
    void TakeSample();

    Time m_interval;
    // unique_ptr: the trace callbacks hold each direction's address.
    std::vector<std::unique_ptr<Direction>> m_directions;
    std::vector<uint64_t> m_sampledBytes; ///< per direction, at the last sample
    std::vector<Sample> m_samples;
    uint64_t m_hookEvery = 0;
    uint64_t m_untilHook = 0;
    std::function<void()> m_hook;
    std::function<void()> m_beforeSample;
    uint64_t m_deviceDropBytes;
    uint64_t m_deviceDrops;
};

} // namespace ns3

#endif /* DLTRACE_LINK_MONITOR_H */
