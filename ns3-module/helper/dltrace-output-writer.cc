// DltraceOutputWriter: a run's results files (through the runs/ library),
// flows.csv, links.csv and flowmon.xml.
#include "dltrace-output-writer.h"

#include "ns3/log.h"

#include "dltrace/runs/atomic_file.h"

#include <sys/stat.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <iomanip>
#include <map>
#include <sstream>
#include <utility>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("DltraceOutputWriter");

DltraceOutputWriter::DltraceOutputWriter(std::string dir)
    : m_dir(std::move(dir))
{
}

std::vector<dltrace::runs::ResultsFile>
DltraceOutputWriter::MakeResultsFiles(Ptr<DltraceJob> job)
{
    return dltrace::runs::MakeResultsFiles(job->GetSchedule(),
                                           job->GetResults(),
                                           "ns3",
                                           job->GetTracePath(),
                                           job->GetAlgorithm());
}

bool
DltraceOutputWriter::WriteResults(const std::vector<Ptr<DltraceJob>>& jobs, std::string* error) const
{
    for (size_t j = 0; j < jobs.size(); ++j)
    {
        std::string jobDir = m_dir;
        if (jobs.size() > 1)
        {
            jobDir = m_dir + "/job" + std::to_string(j);
            if (mkdir(jobDir.c_str(), 0777) != 0 && errno != EEXIST)
            {
                *error = jobDir + ": " + std::strerror(errno);
                return false;
            }
        }
        for (const auto& f : MakeResultsFiles(jobs[j]))
        {
            if (!dltrace::runs::WriteResultsFile(f,
                                                 jobDir + "/" +
                                                     dltrace::runs::ResultsFileName(f.endpoint),
                                                 error))
            {
                return false;
            }
        }
    }
    return true;
}

bool
DltraceOutputWriter::WriteFlows(const std::vector<Ptr<DltraceJob>>& jobs,
                                const std::vector<Time>& starts,
                                std::string* error) const
{
    std::ostringstream flows;
    flows << "job,op,src,dst,channel,bytes,local,start_s,end_s,fct_ns\n";
    for (size_t j = 0; j < jobs.size(); ++j)
    {
        const auto& schedule = jobs[j]->GetSchedule();
        const auto& results = jobs[j]->GetResults();
        // Message completion: the send step's start on the sender to the
        // receive step's end on the receiver (both clocks start at the job's start).
        const double origin = starts.at(j).GetSeconds();
        // Per receiver: (sender, tag) -> its receive step.
        std::vector<std::map<std::pair<int32_t, uint64_t>, size_t>> recvStep(schedule.ranks.size());
        for (size_t e = 0; e < schedule.ranks.size(); ++e)
        {
            const auto& steps = schedule.ranks[e].steps;
            for (size_t i = 0; i < steps.size(); ++i)
            {
                if (steps[i].type == dltrace::models::StepType::kRecv)
                {
                    recvStep[e][{steps[i].peer, steps[i].tag}] = i;
                }
            }
        }
        for (size_t e = 0; e < schedule.ranks.size() && e < results.size(); ++e)
        {
            const auto& steps = schedule.ranks[e].steps;
            for (size_t i = 0; i < steps.size(); ++i)
            {
                const auto& s = steps[i];
                if (s.type != dltrace::models::StepType::kSend || !results[e].steps[i].valid ||
                    size_t(s.peer) >= results.size())
                {
                    continue;
                }
                auto it = recvStep[size_t(s.peer)].find({int32_t(e), s.tag});
                if (it == recvStep[size_t(s.peer)].end())
                {
                    continue;
                }
                const auto& t = results[size_t(s.peer)].steps[it->second];
                const uint64_t sendStart = results[e].steps[i].start_ns;
                if (!t.valid || t.end_ns < t.start_ns || t.end_ns == 0 || t.end_ns < sendStart)
                {
                    continue;
                }
                const double start = origin + results[e].steps[i].start_ns * 1e-9;
                const double end = origin + t.end_ns * 1e-9;
                char row[256];
                std::snprintf(row,
                              sizeof row,
                              "%zu,%u,%zu,%d,%u,%" PRIu64 ",%d,%.9f,%.9f,%" PRIu64 "\n",
                              j,
                              s.op,
                              e,
                              s.peer,
                              unsigned(s.channel),
                              s.bytes,
                              s.local ? 1 : 0,
                              start,
                              end,
                              t.end_ns - sendStart);
                flows << row;
            }
        }
    }
    return dltrace::runs::WriteFileAtomically(m_dir + "/flows.csv", flows.str(), error);
}

bool
DltraceOutputWriter::WriteLinks(const DltraceLinkMonitor& links, std::string* error) const
{
    const auto& samples = links.GetSamples();
    std::ostringstream out;
    out << "time_s,link,bytes,utilisation\n";
    for (size_t i = 0; i < samples.size(); ++i)
    {
        const double prev = i ? samples[i - 1].timeS : 0.0;
        const double dt = samples[i].timeS - prev;
        for (uint32_t d = 0; d < links.GetDirectionCount(); ++d)
        {
            const auto& direction = links.GetDirection(d);
            const uint64_t b = samples[i].bytes[d];
            const double util = dt > 0 ? b * 8.0 / (direction.rateBps * dt) : 0.0;
            out << std::setprecision(9) << samples[i].timeS << "," << direction.name << "," << b
                << "," << std::setprecision(4) << util << "\n";
        }
    }
    return dltrace::runs::WriteFileAtomically(m_dir + "/links.csv", out.str(), error);
}

bool
DltraceOutputWriter::WriteFlowMonitor(Ptr<FlowMonitor> monitor, std::string* error) const
{
    dltrace::runs::AtomicFile xml(m_dir + "/flowmon.xml");
    if (!xml.Open(error))
    {
        return false;
    }
    monitor->SerializeToXmlFile(xml.temporary_path(), true, true);
    return xml.Commit(error);
}

} // namespace ns3
