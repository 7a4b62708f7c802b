// SPDX-License-Identifier: GPL-2.0-only
// The ns-3 module as the `ns3` backend of dltrace's one simulator interface
// (simulator/): what `dltrace simulate --simulator ns3` runs.
#ifndef DLTRACE_SIMULATOR_BACKEND_H
#define DLTRACE_SIMULATOR_BACKEND_H

namespace dltrace::simulator
{

/**
 * \ingroup dltrace
 * \brief Adds the `ns3` simulator (and its settings: --queue, --segment-size,
 * ... --pcap) to the registry. The build generates the call.
 */
void RegisterNs3();

} // namespace dltrace::simulator

#endif /* DLTRACE_SIMULATOR_BACKEND_H */
