// DltraceJobSpec::Parse: the --job syntax of dltrace simulate and the
// dltrace-simulate example (trace, hosts, start, algorithm, channels, iterations).
#include "dltrace-job-spec.h"

#include "ns3/dltrace-topology-helper.h"
#include "ns3/log.h"

#include <cstdlib>
#include <sstream>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("DltraceJobSpec");

namespace
{

// "0-3,8,10-11" -> {0,1,2,3,8,10,11}
bool
ParseHostList(const std::string& text, std::vector<uint32_t>* out)
{
    std::stringstream ss(text);
    std::string item;
    out->clear();
    while (std::getline(ss, item, ','))
    {
        char* end = nullptr;
        long a = std::strtol(item.c_str(), &end, 10);
        long b = a;
        if (end == item.c_str() || a < 0)
        {
            return false;
        }
        if (*end == '-')
        {
            const char* rest = end + 1;
            b = std::strtol(rest, &end, 10);
            if (end == rest || b < a)
            {
                return false;
            }
        }
        if (*end != '\0' || b - a > 100000)
        {
            return false;
        }
        for (long h = a; h <= b; ++h)
        {
            out->push_back(uint32_t(h));
        }
    }
    return !out->empty();
}

} // namespace

bool
DltraceJobSpec::Parse(const std::string& text, DltraceJobSpec* out, std::string* error)
{
    DltraceJobSpec spec = *out; // defaults: what TEXT does not say stays
    std::vector<std::string> parts;
    std::stringstream ss(text);
    std::string part;
    while (std::getline(ss, part, ':'))
    {
        parts.push_back(part);
    }
    if (parts.empty() || parts[0].empty())
    {
        *error = "--job needs TRACE[:hosts=A-B][:start=T][:algo=A][:channels=C][:iterations=N], got '" +
                 text + "'";
        return false;
    }
    spec.trace = parts[0];
    for (size_t i = 1; i < parts.size(); ++i)
    {
        const size_t eq = parts[i].find('=');
        const std::string key = parts[i].substr(0, eq);
        const std::string value = eq == std::string::npos ? "" : parts[i].substr(eq + 1);
        char* end = nullptr;
        bool ok = eq != std::string::npos && !value.empty();
        if (key == "hosts")
        {
            ok = ok && ParseHostList(value, &spec.hosts);
        }
        else if (key == "start")
        {
            ok = ok && DltraceParseTime(value, &spec.start);
        }
        else if (key == "algo")
        {
            spec.lower.algorithm = value;
            ok = ok && dltrace::models::FindAlgorithm(value) != nullptr;
        }
        else if (key == "channels")
        {
            long c = std::strtol(value.c_str(), &end, 10);
            ok = ok && *end == '\0' && c >= 1 && c <= 64;
            spec.lower.channels = int(c);
        }
        else if (key == "iterations")
        {
            long c = std::strtol(value.c_str(), &end, 10);
            ok = ok && *end == '\0' && c >= 1;
            spec.iterations = uint32_t(c);
        }
        else
        {
            *error = "--job " + text + ": unknown key '" + key +
                     "' (hosts, start, algo, channels, iterations)";
            return false;
        }
        if (!ok)
        {
            *error = "--job " + text + ": bad value in '" + parts[i] + "'";
            return false;
        }
    }
    *out = spec;
    return true;
}

} // namespace ns3
