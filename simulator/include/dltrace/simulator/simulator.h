// SPDX-License-Identifier: GPL-2.0-only
// The one interface every simulator backend implements (the ns-3 module at
// packet level, the flow simulator on SimGrid, later ones): configured from
// one SimulationConfig, run with progress, and handing back records that the
// one output writer in runs/ turns into files and the summary.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "dltrace/models/mltcp.h"
#include "dltrace/models/placement.h"
#include "dltrace/runs/simulation_output.h"

namespace dltrace::simulator {

// Everything a simulation is configured by, whichever backend runs it.
struct SimulationConfig {
  std::string topology = "star";            // models::ParseTopology syntax
  std::vector<models::JobPlacement> jobs;   // placed on hosts by the backend (models::PlaceJobs)
  std::string transport = "tcp";            // tcp; a backend refuses one it does not model
  std::string congestion_control;           // --cc; empty: the backend's default
  models::MltcpFunction mltcp;              // F of MLTCP's congestion controls and shares
  uint64_t util_interval_ns = 1000000;      // links.csv sample period (0: off)
  std::string out_dir;                      // made by the caller after Configure succeeded
  bool progress = true;                     // progress lines on stderr for long runs
  // The backend's own settings, as the options its SimulatorInfo::settings
  // declared (name without dashes, value; a flag's value is "1"; repeatable
  // settings appear once per value, in order). Opaque to everything else.
  std::vector<std::pair<std::string, std::string>> settings;
};

class Simulator {
 public:
  virtual ~Simulator() = default;
  // Checks the arguments alone (transport, congestion control, settings),
  // before any file is read: false with one line (a usage error).
  virtual bool Check(const SimulationConfig& config, std::string* error) = 0;
  // Reads the jobs, places them and builds the network: false with one line
  // naming the file or value. Nothing is written yet.
  virtual bool Configure(const SimulationConfig& config, std::string* error) = 0;
  // Runs to the end (config.out_dir exists by now, for files the backend
  // writes as it runs); false with *error when an endpoint did not finish
  // (its records say how far it got).
  virtual bool Run(std::string* error) = 0;
  // What the run produced, for runs::WriteSimulationOutputs and the summary.
  virtual const runs::SimulationRecords& Records() const = 0;
  // Files of the backend's own beyond the common ones (ns-3: flowmon.xml),
  // and their names for the line that lists the outputs.
  virtual bool WriteOwnOutputs(const std::string& dir, std::string* error) const {
    (void)dir;
    (void)error;
    return true;
  }
  virtual std::vector<std::string> OwnOutputNames() const { return {}; }
  // A backend that runs as several processes (ns-3 with --partitions): false
  // in all but the one that prints the summary and writes the outputs (it
  // holds everyone's records after Run); the others only run.
  virtual bool WritesOutputs() const { return true; }
};

// One option a backend takes beyond SimulationConfig's common fields.
struct SettingSpec {
  enum class Kind { kText, kNumber, kFlag };
  enum class Bound { kNone, kPositive, kNonNegative, kRange };  // kNumber: what the command line accepts
  std::string flag;   // "--queue"
  std::string help;
  Kind kind = Kind::kText;
  Bound bound = Bound::kNone;
  double min = 0, max = 0;   // kRange: inclusive
  std::string default_text;  // shown in --help
  bool repeatable = false;
  std::string type_name;     // shown in --help, e.g. "KEY:VALUE"
};

// A setting of KIND with FLAG and HELP, the other fields at their defaults.
SettingSpec Setting(const std::string& flag, const std::string& help,
                    SettingSpec::Kind kind = SettingSpec::Kind::kText);
// A number setting the command line checks against BOUND (MIN and MAX for
// kRange), with DEFAULT_TEXT shown in --help.
SettingSpec Number(const std::string& flag, const std::string& help, SettingSpec::Bound bound,
                   const std::string& default_text = "", double min = 0, double max = 0);
// S, repeatable.
SettingSpec Repeatable(SettingSpec s);

struct SimulatorInfo {
  std::string name;         // what --simulator/--engine takes: "ns3", "flow"
  std::string title;        // "ns-3", "SimGrid"
  std::string description;  // one line for --help
  std::string build;        // which build of its simulator (dltrace --version); empty: none to say
  std::vector<SettingSpec> settings;
  std::function<std::unique_ptr<Simulator>()> make;
};

// Each built backend registers itself once (the build generates the calls:
// RegisterBuiltInSimulators below).
void RegisterSimulator(SimulatorInfo info);
// A backend that configure could not build, with one line naming what it misses.
void RegisterMissingSimulator(const std::string& name, const std::string& title, const std::string& missing);

// Registers every backend this build has, and notes the missing ones (generated by configure).
void RegisterBuiltInSimulators();

const std::vector<SimulatorInfo>& Simulators();
// NAME's entry; null when it is not built (then *missing, when not null, says
// why, or is empty for a name no build knows).
const SimulatorInfo* FindSimulator(const std::string& name, std::string* missing = nullptr);
// Every name, built or not, in registration order.
std::vector<std::string> SimulatorNames();
// "TITLE simulator: BUILD" lines for dltrace --version, built or not.
std::vector<std::string> SimulatorBuildLines();

// Every value of a repeatable setting NAME, in order.
std::vector<std::string> SettingValues(const SimulationConfig& config, const std::string& name);

}  // namespace dltrace::simulator
