// SPDX-License-Identifier: GPL-2.0-only
// Which MPI process (ns-3 SystemId) simulates each node of a topology, for
// `dltrace simulate --partitions N` on ns-3's distributed simulator.
#ifndef DLTRACE_PARTITION_H
#define DLTRACE_PARTITION_H

#include "ns3/nstime.h"

#include "dltrace/models/topology.h"

#include <cstdint>
#include <string>
#include <vector>

namespace ns3
{

/**
 * \ingroup dltrace
 * \brief A topology cut into partitions along its point-to-point links.
 *
 * By default a part is a pod (fat-tree: the switches named podP-... with the
 * hosts under them) or a leaf (any other switch with hosts, with its hosts);
 * parts go to partitions in contiguous blocks, and switches without hosts
 * (spines, cores) are dealt round-robin over the partitions. A map file
 * overrides this: one "NODE PARTITION" line per node (names as in links.csv:
 * h0, leaf1, spine0, pod2-edge1, core3), '#' starts a comment.
 *
 * The lookahead (ns-3's distributed simulators take it from the links) is the
 * smallest propagation delay of a link whose ends are in different partitions.
 */
struct DltracePartition
{
    uint32_t count = 1;             ///< partitions (MPI processes)
    uint32_t hosts = 0;             ///< graph nodes below this are hosts
    std::vector<uint32_t> systemId; ///< per graph node: its partition
    uint32_t parts = 0;             ///< default partitioning: pods or leaves found
    uint32_t crossingLinks = 0;     ///< links whose ends are in different partitions
    Time lookahead;                 ///< smallest delay of a crossing link
    std::string how;                ///< "by leaf", "by pod", "map FILE"

    /**
     * Partitions GRAPH into N. MAP_FILE empty: by pod or leaf.
     * \return false with one line in *error: N above the parts, a map file
     *   that does not name every node once, no link crossing partitions, or a
     *   lookahead of zero
     */
    static bool Make(const dltrace::models::TopologyGraph& graph,
                     uint32_t n,
                     const std::string& mapFile,
                     DltracePartition* out,
                     std::string* error);
    /// One line, e.g. "2 partitions by leaf (4 parts), 8 links cross, lookahead 1 us".
    std::string Describe() const;
    /// Hosts (graph nodes below graph.hosts) in partition P.
    uint32_t HostsIn(uint32_t p) const;
};

} // namespace ns3

#endif /* DLTRACE_PARTITION_H */
