// Writes what a dltrace simulation produced: results files in the socket
// replayer's format, flows.csv, links.csv and flowmon.xml, each atomically.
#ifndef DLTRACE_OUTPUT_WRITER_H
#define DLTRACE_OUTPUT_WRITER_H

#include "ns3/dltrace-job.h"
#include "ns3/dltrace-link-monitor.h"
#include "ns3/flow-monitor.h"
#include "ns3/nstime.h"

#include "dltrace/runs/results_file.h"

#include <string>
#include <vector>

namespace ns3
{

/**
 * \ingroup dltrace
 * \brief The output files of a run, written into one directory.
 *
 * Every file goes through a temporary name (dltrace::runs::AtomicFile), so a
 * reader never sees half a file. The directory must exist.
 */
class DltraceOutputWriter
{
  public:
    /// Writes into DIR.
    explicit DltraceOutputWriter(std::string dir);

    /// Job JOB's results as the results files have them (source "ns3").
    static std::vector<dltrace::runs::ResultsFile> MakeResultsFiles(Ptr<DltraceJob> job);

    /**
     * DIR/rank<E>.results.json for one job, DIR/job<J>/rank<E>.results.json
     * (job<J> made here) for several.
     * \return false with one line in *error naming the file
     */
    bool WriteResults(const std::vector<Ptr<DltraceJob>>& jobs, std::string* error) const;
    /**
     * DIR/flows.csv: one row per message, from the send step's start on the
     * sender to the receive step's end on the receiver, in seconds since the
     * simulation began (STARTS: each job's start offset).
     */
    bool WriteFlows(const std::vector<Ptr<DltraceJob>>& jobs,
                    const std::vector<Time>& starts,
                    std::string* error) const;
    /// DIR/links.csv: each sample's bytes and utilisation per link direction.
    bool WriteLinks(const DltraceLinkMonitor& links, std::string* error) const;
    /// DIR/flowmon.xml (with histograms and per-probe statistics).
    bool WriteFlowMonitor(Ptr<FlowMonitor> monitor, std::string* error) const;

  private:
    std::string m_dir;
};

} // namespace ns3

#endif /* DLTRACE_OUTPUT_WRITER_H */
