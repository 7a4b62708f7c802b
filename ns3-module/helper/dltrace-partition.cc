// SPDX-License-Identifier: GPL-2.0-only
// DltracePartition: the default cut by pod or leaf, a user's map file, and
// the checks ns-3's distributed simulators need (a cut, a lookahead above 0).
#include "dltrace-partition.h"

#include <fstream>
#include <map>
#include <sstream>

namespace ns3
{

namespace
{

// The part of each node: a pod or a leaf with its hosts; UINT32_MAX for a
// switch without hosts. Sets *parts and *how.
std::vector<uint32_t>
DefaultParts(const dltrace::models::TopologyGraph& g, uint32_t* parts, std::string* how)
{
    const uint32_t none = UINT32_MAX;
    std::vector<uint32_t> part(g.names.size(), none);
    std::map<std::string, uint32_t> ids;
    auto id = [&](const std::string& key) {
        auto it = ids.emplace(key, uint32_t(ids.size())).first;
        return it->second;
    };
    bool pods = false;
    for (uint32_t n = g.hosts; n < g.names.size(); ++n)
    {
        const std::string& name = g.names[n];
        if (name.rfind("pod", 0) == 0 && name.find('-') != std::string::npos)
        {
            part[n] = id(name.substr(0, name.find('-')));
            pods = true;
        }
    }
    // Hosts go with the switch they hang from (a leaf, or a pod's edge).
    for (uint32_t h = 0; h < g.hosts; ++h)
    {
        for (const auto& [peer, link] : g.adjacent[h])
        {
            (void)link;
            if (!g.IsSwitch(peer))
            {
                continue;
            }
            if (part[peer] == none)
            {
                part[peer] = id(g.names[peer]);
            }
            part[h] = part[peer];
            break;
        }
    }
    *parts = uint32_t(ids.size());
    *how = pods ? "by pod" : "by leaf";
    return part;
}

bool
ReadMap(const dltrace::models::TopologyGraph& g,
        uint32_t n,
        const std::string& file,
        std::vector<uint32_t>* systemId,
        std::string* error)
{
    std::ifstream in(file);
    if (!in)
    {
        *error = "--partition-map " + file + ": cannot read it";
        return false;
    }
    std::map<std::string, uint32_t> index;
    for (uint32_t i = 0; i < g.names.size(); ++i)
    {
        index[g.names[i]] = i;
    }
    const uint32_t unset = UINT32_MAX;
    systemId->assign(g.names.size(), unset);
    std::string line;
    for (uint32_t lineNo = 1; std::getline(in, line); ++lineNo)
    {
        line = line.substr(0, line.find('#'));
        std::istringstream words(line);
        std::string name, extra;
        long long p = -1;
        if (!(words >> name))
        {
            continue;
        }
        const std::string where = file + ":" + std::to_string(lineNo) + ": ";
        if (!(words >> p) || (words >> extra))
        {
            *error = where + "expected NODE PARTITION, e.g. \"leaf0 0\"";
            return false;
        }
        auto it = index.find(name);
        if (it == index.end())
        {
            *error = where + "no node named " + name + " in this topology";
            return false;
        }
        if (p < 0 || p >= (long long)n)
        {
            *error = where + "partition " + std::to_string(p) + " is not in 0.." + std::to_string(n - 1);
            return false;
        }
        if ((*systemId)[it->second] != unset)
        {
            *error = where + name + " is mapped twice";
            return false;
        }
        (*systemId)[it->second] = uint32_t(p);
    }
    for (uint32_t i = 0; i < g.names.size(); ++i)
    {
        if ((*systemId)[i] == unset)
        {
            *error = "--partition-map " + file + ": node " + g.names[i] +
                     " has no partition (every node needs one line)";
            return false;
        }
    }
    return true;
}

} // namespace

bool
DltracePartition::Make(const dltrace::models::TopologyGraph& g,
                       uint32_t n,
                       const std::string& mapFile,
                       DltracePartition* out,
                       std::string* error)
{
    DltracePartition& r = *out;
    r = DltracePartition();
    r.count = n;
    r.hosts = g.hosts;
    if (!mapFile.empty())
    {
        r.how = "map " + mapFile;
        if (!ReadMap(g, n, mapFile, &r.systemId, error))
        {
            return false;
        }
    }
    else
    {
        std::vector<uint32_t> part = DefaultParts(g, &r.parts, &r.how);
        if (r.parts < 2)
        {
            *error = "--partitions " + std::to_string(n) + ": this topology has no cut of point-to-point " +
                     "links " + r.how + " (one " + (r.how == "by pod" ? "pod" : "switch with hosts") +
                     "); give --partition-map FILE, or a leaf-spine or fat-tree";
            return false;
        }
        if (n > r.parts)
        {
            *error = "--partitions " + std::to_string(n) + " is more than the " + std::to_string(r.parts) +
                     " parts of this topology " + r.how + "; give at most " + std::to_string(r.parts) +
                     " or a --partition-map";
            return false;
        }
        r.systemId.assign(g.names.size(), 0);
        uint32_t spare = 0;
        for (uint32_t i = 0; i < g.names.size(); ++i)
        {
            // Contiguous blocks of parts; switches without hosts round-robin.
            r.systemId[i] = part[i] == UINT32_MAX ? spare++ % n : uint32_t(uint64_t(part[i]) * n / r.parts);
        }
    }
    int64_t smallest = -1;
    for (const auto& link : g.links)
    {
        if (r.systemId[link.a] == r.systemId[link.b])
        {
            continue;
        }
        ++r.crossingLinks;
        if (smallest < 0 || int64_t(link.delay_ns) < smallest)
        {
            smallest = int64_t(link.delay_ns);
        }
    }
    if (r.crossingLinks == 0)
    {
        *error = "--partitions " + std::to_string(n) + ": no point-to-point link crosses partitions (" +
                 r.how + "), so there is nothing to run in parallel";
        return false;
    }
    r.lookahead = NanoSeconds(smallest);
    if (smallest == 0)
    {
        *error = "--partitions " + std::to_string(n) +
                 ": a link crossing partitions has zero delay, so the lookahead is 0 and no partition "
                 "could ever run ahead (give the topology delay=, e.g. delay=1us)";
        return false;
    }
    return true;
}

uint32_t
DltracePartition::HostsIn(uint32_t p) const
{
    uint32_t k = 0;
    for (uint32_t h = 0; h < hosts && h < systemId.size(); ++h)
    {
        k += systemId[h] == p ? 1 : 0;
    }
    return k;
}

std::string
DltracePartition::Describe() const
{
    std::ostringstream s;
    s << count << " partitions " << how;
    if (parts)
    {
        s << " (" << parts << " parts)";
    }
    s << ", " << crossingLinks << " links cross, lookahead " << lookahead.GetNanoSeconds() << " ns";
    return s.str();
}

} // namespace ns3
