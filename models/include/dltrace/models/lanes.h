// SPDX-License-Identifier: GPL-2.0-only
// A connection's lane: its channel, and the RailMode its op's traffic takes
// on the fabric above the channel's bits, so that messages whose NIC rules
// differ never share a connection. One encoding for every simulator.
#pragma once

#include <cstdint>

#include "dltrace/models/placement.h"
#include "dltrace/models/topology.h"

namespace dltrace::models {

constexpr uint32_t kLaneModeShift = 14;  // channels stay below 2^14 (models::Step)

// A TCP connection's send buffer unless a run sets one (ns-3's --sndbuf, the
// flow simulator's --send-buffer): a send is done once the buffer holds what
// has not arrived of it, so both simulators call the same moment done.
constexpr uint32_t kTcpSendBufferBytes = 256u << 10;

inline uint16_t MakeLane(uint16_t channel, RailMode mode) {
  return uint16_t(channel | uint32_t(mode) << kLaneModeShift);
}
inline uint16_t LaneChannel(uint16_t lane) { return uint16_t(lane & ((1u << kLaneModeShift) - 1)); }
inline RailMode LaneMode(uint16_t lane) { return RailMode(lane >> kLaneModeShift); }

// The RailMode of OP's traffic on GRAPH for a job with NIC's settings:
// kDirect with one GPU per host (classic runs keep their connections).
inline RailMode OpRailMode(const TopologyGraph& graph, const ScheduleOp& op, const NcclNicOptions& nic) {
  return graph.gpus_per_host > 1 ? nic.ModeFor(RailCollective(op)) : RailMode::kDirect;
}

}  // namespace dltrace::models
