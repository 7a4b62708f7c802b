// Topology construction and the "KIND:key=value,..." parser with defaults
// sized to the hosts a scenario needs.
#include "dltrace-topology-helper.h"

#include "ns3/data-rate.h"
#include "ns3/log.h"
#include "ns3/point-to-point-helper.h"
#include "ns3/queue-size.h"
#include "ns3/string.h"

#include <cmath>
#include <cstdlib>
#include <sstream>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("DltraceTopologyHelper");

namespace
{

bool
ParseScaled(const std::string& text,
            const std::vector<std::pair<std::string, double>>& units,
            double* out)
{
    char* end = nullptr;
    double v = std::strtod(text.c_str(), &end);
    if (text.empty() || end == text.c_str() || !(v >= 0))
    {
        return false;
    }
    std::string unit(end);
    for (const auto& u : units)
    {
        if (unit == u.first)
        {
            *out = v * u.second;
            return true;
        }
    }
    return false;
}

bool
ParseCount(const std::string& text, uint32_t min, uint32_t* out)
{
    char* end = nullptr;
    long v = std::strtol(text.c_str(), &end, 10);
    if (text.empty() || *end != '\0' || v < long(min) || v > 100000)
    {
        return false;
    }
    *out = uint32_t(v);
    return true;
}

std::string
RateText(uint64_t bps)
{
    std::ostringstream s;
    if (bps >= 1000000000ull)
    {
        s << double(bps) / 1e9 << " Gbit/s";
    }
    else
    {
        s << double(bps) / 1e6 << " Mbit/s";
    }
    return s.str();
}

} // namespace

bool
DltraceParseRate(const std::string& text, uint64_t* bps)
{
    double v = 0;
    if (!ParseScaled(text,
                     {{"", 1},
                      {"bps", 1},
                      {"Kbps", 1e3},
                      {"kbps", 1e3},
                      {"K", 1e3},
                      {"Mbps", 1e6},
                      {"M", 1e6},
                      {"Gbps", 1e9},
                      {"G", 1e9},
                      {"Tbps", 1e12},
                      {"T", 1e12}},
                     &v) ||
        v < 1)
    {
        return false;
    }
    *bps = uint64_t(std::llround(v));
    return true;
}

bool
DltraceParseTime(const std::string& text, Time* t)
{
    double ns = 0;
    if (!ParseScaled(text, {{"ns", 1}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}}, &ns))
    {
        return false;
    }
    *t = NanoSeconds(int64_t(std::llround(ns)));
    return true;
}

bool
DltraceTopologyConfig::Parse(const std::string& text,
                             uint32_t hostsNeeded,
                             DltraceTopologyConfig* out,
                             std::string* error)
{
    DltraceTopologyConfig c;
    const size_t colon = text.find(':');
    c.kind = text.substr(0, colon);
    if (c.kind != "star" && c.kind != "dumbbell" && c.kind != "ring" && c.kind != "leaf-spine" &&
        c.kind != "fat-tree")
    {
        *error = "unknown topology '" + c.kind +
                 "' (one of star, dumbbell, ring, leaf-spine, fat-tree)";
        return false;
    }
    std::string params = colon == std::string::npos ? "" : text.substr(colon + 1);
    std::stringstream ss(params);
    std::string item;
    while (std::getline(ss, item, ','))
    {
        if (item.empty())
        {
            continue;
        }
        const size_t eq = item.find('=');
        const std::string key = item.substr(0, eq);
        const std::string value = eq == std::string::npos ? "" : item.substr(eq + 1);
        bool ok = eq != std::string::npos;
        bool known = true;
        if (key == "rate")
        {
            ok = ok && DltraceParseRate(value, &c.rateBps);
        }
        else if (key == "delay")
        {
            ok = ok && DltraceParseTime(value, &c.delay);
        }
        else if (key == "bottleneck" && (c.kind == "dumbbell" || c.kind == "ring"))
        {
            ok = ok && DltraceParseRate(value, &c.bottleneckBps);
        }
        else if (key == "hosts" && (c.kind == "star" || c.kind == "dumbbell" || c.kind == "ring"))
        {
            ok = ok && ParseCount(value, 1, &c.hosts);
        }
        else if (key == "switches" && c.kind == "ring")
        {
            ok = ok && ParseCount(value, 3, &c.switches);
        }
        else if (key == "leaves" && c.kind == "leaf-spine")
        {
            ok = ok && ParseCount(value, 1, &c.leaves);
        }
        else if (key == "spines" && c.kind == "leaf-spine")
        {
            ok = ok && ParseCount(value, 1, &c.spines);
        }
        else if (key == "hosts-per-leaf" && c.kind == "leaf-spine")
        {
            ok = ok && ParseCount(value, 1, &c.hostsPerLeaf);
        }
        else if (key == "oversub" && c.kind == "leaf-spine")
        {
            char* end = nullptr;
            c.oversubscription = std::strtod(value.c_str(), &end);
            ok = ok && !value.empty() && *end == '\0' && c.oversubscription >= 0.01 &&
                 c.oversubscription <= 1000;
        }
        else if (key == "k" && c.kind == "fat-tree")
        {
            ok = ok && ParseCount(value, 2, &c.k) && c.k % 2 == 0;
        }
        else
        {
            known = false;
        }
        if (!known)
        {
            *error = "topology " + c.kind + ": unknown parameter '" + key + "'";
            return false;
        }
        if (!ok)
        {
            *error = "topology " + c.kind + ": bad value in '" + item + "'";
            return false;
        }
    }
    const uint32_t n = std::max<uint32_t>(hostsNeeded, 2);
    if (c.kind == "star")
    {
        c.hosts = c.hosts ? c.hosts : n;
    }
    else if (c.kind == "dumbbell")
    {
        c.hosts = c.hosts ? c.hosts : n + n % 2;
    }
    else if (c.kind == "ring")
    {
        c.switches = c.switches ? c.switches : std::max<uint32_t>(3, std::min<uint32_t>(4, n));
        c.hosts = c.hosts ? c.hosts : n;
    }
    else if (c.kind == "leaf-spine")
    {
        c.hostsPerLeaf = c.hostsPerLeaf ? c.hostsPerLeaf : std::min<uint32_t>(4, n);
        c.leaves = c.leaves ? c.leaves
                            : std::max<uint32_t>(2, (n + c.hostsPerLeaf - 1) / c.hostsPerLeaf);
        c.spines = c.spines ? c.spines : 2;
    }
    else if (c.kind == "fat-tree")
    {
        if (!c.k)
        {
            c.k = 4;
            while (c.k * c.k * c.k / 4 < n)
            {
                c.k += 2;
            }
        }
    }
    *out = c;
    return true;
}

uint32_t
DltraceTopologyConfig::HostCount() const
{
    if (kind == "leaf-spine")
    {
        return leaves * hostsPerLeaf;
    }
    if (kind == "fat-tree")
    {
        return k * k * k / 4;
    }
    return hosts;
}

std::string
DltraceTopologyConfig::Describe() const
{
    std::ostringstream s;
    s << kind << ": ";
    if (kind == "leaf-spine")
    {
        s << leaves << " leaves x " << hostsPerLeaf << " hosts, " << spines << " spines, oversub "
          << oversubscription;
    }
    else if (kind == "fat-tree")
    {
        s << "k=" << k << ", " << HostCount() << " hosts";
    }
    else if (kind == "ring")
    {
        s << switches << " switches, " << hosts << " hosts";
    }
    else
    {
        s << hosts << " hosts";
    }
    s << ", " << RateText(rateBps) << " links, " << delay.GetNanoSeconds() / 1000.0
      << " us delay";
    if (bottleneckBps && (kind == "dumbbell" || kind == "ring"))
    {
        s << ", bottleneck " << RateText(bottleneckBps);
    }
    return s.str();
}

Ptr<Node>
DltraceTopologyHelper::NewSwitch(const std::string& name)
{
    Ptr<Node> node = CreateObject<Node>();
    m_switches.Add(node);
    m_switchNames.push_back(name);
    return node;
}

void
DltraceTopologyHelper::Connect(Ptr<Node> a, Ptr<Node> b, uint64_t rateBps, Time delay, bool hostLink)
{
    PointToPointHelper p2p;
    p2p.SetDeviceAttribute("DataRate", DataRateValue(DataRate(rateBps)));
    p2p.SetChannelAttribute("Delay", TimeValue(delay));
    // A short device queue: packets wait in the queue disc, where AQM and
    // ECN marking act (a long device queue would hide them).
    p2p.SetQueue("ns3::DropTailQueue<Packet>", "MaxSize", QueueSizeValue(QueueSize("2p")));
    NetDeviceContainer d = p2p.Install(a, b);
    auto name = [this](Ptr<Node> n) {
        for (uint32_t i = 0; i < m_hosts.GetN(); ++i)
        {
            if (m_hosts.Get(i) == n)
            {
                return "h" + std::to_string(i);
            }
        }
        for (uint32_t i = 0; i < m_switches.GetN(); ++i)
        {
            if (m_switches.Get(i) == n)
            {
                return m_switchNames[i];
            }
        }
        return std::string("?");
    };
    m_links.push_back({d.Get(0), d.Get(1), name(a) + "-" + name(b), rateBps, hostLink});
}

void
DltraceTopologyHelper::Build(const DltraceTopologyConfig& c)
{
    m_hosts = NodeContainer();
    m_switches = NodeContainer();
    m_switchNames.clear();
    m_links.clear();
    m_hosts.Create(c.HostCount());
    const uint64_t core = c.bottleneckBps ? c.bottleneckBps : c.rateBps;
    if (c.kind == "star")
    {
        Ptr<Node> sw = NewSwitch("sw0");
        for (uint32_t h = 0; h < c.hosts; ++h)
        {
            Connect(m_hosts.Get(h), sw, c.rateBps, c.delay, true);
        }
    }
    else if (c.kind == "dumbbell")
    {
        Ptr<Node> left = NewSwitch("left");
        Ptr<Node> right = NewSwitch("right");
        const uint32_t half = (c.hosts + 1) / 2;
        for (uint32_t h = 0; h < c.hosts; ++h)
        {
            Connect(m_hosts.Get(h), h < half ? left : right, c.rateBps, c.delay, true);
        }
        Connect(left, right, core, c.delay, false);
    }
    else if (c.kind == "ring")
    {
        for (uint32_t s = 0; s < c.switches; ++s)
        {
            NewSwitch("sw" + std::to_string(s));
        }
        const uint32_t per = (c.hosts + c.switches - 1) / c.switches;
        for (uint32_t h = 0; h < c.hosts; ++h)
        {
            Connect(m_hosts.Get(h), m_switches.Get(h / per), c.rateBps, c.delay, true);
        }
        for (uint32_t s = 0; s < c.switches; ++s)
        {
            Connect(m_switches.Get(s), m_switches.Get((s + 1) % c.switches), core, c.delay, false);
        }
    }
    else if (c.kind == "leaf-spine")
    {
        for (uint32_t l = 0; l < c.leaves; ++l)
        {
            NewSwitch("leaf" + std::to_string(l));
        }
        for (uint32_t s = 0; s < c.spines; ++s)
        {
            NewSwitch("spine" + std::to_string(s));
        }
        // Uplink rate that gives the asked oversubscription: hosts' capacity
        // over the leaf's uplink capacity.
        const double up = double(c.rateBps) * c.hostsPerLeaf / (c.spines * c.oversubscription);
        for (uint32_t h = 0; h < m_hosts.GetN(); ++h)
        {
            Connect(m_hosts.Get(h), m_switches.Get(h / c.hostsPerLeaf), c.rateBps, c.delay, true);
        }
        for (uint32_t l = 0; l < c.leaves; ++l)
        {
            for (uint32_t s = 0; s < c.spines; ++s)
            {
                Connect(m_switches.Get(l),
                        m_switches.Get(c.leaves + s),
                        uint64_t(std::llround(up)),
                        c.delay,
                        false);
            }
        }
    }
    else if (c.kind == "fat-tree")
    {
        const uint32_t half = c.k / 2;
        // Per pod: half edge, then half aggregation switches; then the cores.
        for (uint32_t p = 0; p < c.k; ++p)
        {
            for (uint32_t e = 0; e < half; ++e)
            {
                NewSwitch("pod" + std::to_string(p) + "-edge" + std::to_string(e));
            }
            for (uint32_t a = 0; a < half; ++a)
            {
                NewSwitch("pod" + std::to_string(p) + "-agg" + std::to_string(a));
            }
        }
        for (uint32_t x = 0; x < half * half; ++x)
        {
            NewSwitch("core" + std::to_string(x));
        }
        auto edge = [&](uint32_t p, uint32_t e) { return m_switches.Get(p * c.k + e); };
        auto agg = [&](uint32_t p, uint32_t a) { return m_switches.Get(p * c.k + half + a); };
        auto coreSw = [&](uint32_t x) { return m_switches.Get(c.k * c.k + x); };
        for (uint32_t h = 0; h < m_hosts.GetN(); ++h)
        {
            const uint32_t e = h / half; // global edge index
            Connect(m_hosts.Get(h), edge(e / half, e % half), c.rateBps, c.delay, true);
        }
        for (uint32_t p = 0; p < c.k; ++p)
        {
            for (uint32_t e = 0; e < half; ++e)
            {
                for (uint32_t a = 0; a < half; ++a)
                {
                    Connect(edge(p, e), agg(p, a), c.rateBps, c.delay, false);
                }
            }
            for (uint32_t a = 0; a < half; ++a)
            {
                for (uint32_t j = 0; j < half; ++j)
                {
                    Connect(agg(p, a), coreSw(a * half + j), c.rateBps, c.delay, false);
                }
            }
        }
    }
    else
    {
        NS_FATAL_ERROR("DltraceTopologyHelper: unknown topology kind " << c.kind);
    }
}

NodeContainer
DltraceTopologyHelper::GetHosts() const
{
    return m_hosts;
}

NodeContainer
DltraceTopologyHelper::GetSwitches() const
{
    return m_switches;
}

const std::vector<DltraceTopologyHelper::Link>&
DltraceTopologyHelper::GetLinks() const
{
    return m_links;
}

bool
DltraceTopologyHelper::IsSwitch(Ptr<Node> node) const
{
    for (uint32_t i = 0; i < m_switches.GetN(); ++i)
    {
        if (m_switches.Get(i) == node)
        {
            return true;
        }
    }
    return false;
}

} // namespace ns3
