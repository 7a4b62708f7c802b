// SPDX-License-Identifier: GPL-2.0-only
// Installs a DltraceJob's applications: one per endpoint, on the node the
// rank -> node mapping names, with the job's endpoint addresses filled in.
#ifndef DLTRACE_HELPER_H
#define DLTRACE_HELPER_H

#include "ns3/application-container.h"
#include "ns3/dltrace-job.h"
#include "ns3/node-container.h"
#include "ns3/object-factory.h"

#include <vector>

namespace ns3
{

/**
 * \ingroup dltrace
 * \brief Installs DltraceApplication instances for one job.
 */
class DltraceHelper
{
  public:
    /// JOB must have its schedule (DltraceJob::Load or SetSchedule).
    explicit DltraceHelper(Ptr<DltraceJob> job);

    /// Sets an attribute of every DltraceApplication this helper makes.
    void SetAttribute(const std::string& name, const AttributeValue& value);

    /**
     * Installs endpoint E on NODES[E] (its first non-loopback address is where
     * the endpoint listens); several endpoints may share a node. Every
     * endpoint's address is set, but an application is made only on nodes of
     * this process's partition (Node::GetSystemId() equal to
     * Simulator::GetSystemId(): all of them unless the run is partitioned).
     * \param nodes one node per endpoint of the job, in endpoint order
     * \return the applications made, in endpoint order
     */
    ApplicationContainer Install(const std::vector<Ptr<Node>>& nodes);
    /// Endpoint E on HOSTS.Get(E).
    ApplicationContainer Install(const NodeContainer& hosts);

  private:
    /// Source ports of every endpoint's connections (DltraceJob::SetSourcePort).
    void AssignSourcePorts(const std::vector<Ptr<Node>>& nodes);

    Ptr<DltraceJob> m_job;
    ObjectFactory m_factory;
};

} // namespace ns3

#endif /* DLTRACE_HELPER_H */
