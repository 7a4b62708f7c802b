// SPDX-License-Identifier: GPL-2.0-only
// dltrace place: CASSINI's time shifts for jobs that share links. Loads and
// lowers each job, places it on the topology's hosts as simulate would, and
// prints (and writes with -o) the start offset of each job as --job specs.
#include "commands.h"

#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <sstream>

#include "dltrace/models/cassini.h"
#include "dltrace/models/job.h"
#include "dltrace/models/placement.h"
#include "dltrace/models/topology.h"
#include "dltrace/runs/atomic_file.h"
#include "dltrace/runs/json.h"

namespace dltrace::cli {

namespace {

struct PlaceOptions {
  models::JobPlacement defaults;
  std::vector<std::string> job_specs;
  std::string topology = "star";
  std::string plan_path;
  models::CassiniOptions cassini;
};

std::string HostText(const std::vector<uint32_t>& hosts) {
  std::string out;
  for (size_t i = 0; i < hosts.size();) {
    size_t j = i;
    while (j + 1 < hosts.size() && hosts[j + 1] == hosts[j] + 1) ++j;
    out += (out.empty() ? "" : ",") + std::to_string(hosts[i]) + (j > i ? "-" + std::to_string(hosts[j]) : "");
    i = j + 1;
  }
  return out;
}

int RunPlace(PlaceOptions o) {
  const char* self = "place";
  if (o.job_specs.empty()) return UsageError(self, "give the jobs with --job TRACE (twice or more)");
  std::string error;
  std::vector<models::JobPlacement> jobs;
  std::vector<std::unique_ptr<models::Job>> loaded;
  std::vector<uint32_t> endpoints;
  for (const std::string& text : o.job_specs) {
    models::JobPlacement job = o.defaults;
    if (!models::ParseJobPlacement(text, &job, &error)) return UsageError(self, error);
    models::JobOptions jo;
    jo.lower = job.lower;
    jo.runnable = true;
    auto loaded_job = models::LoadJob(job.trace, jo, &error);
    if (!loaded_job) return Fail(error);
    if (job.lower.algorithm.empty()) job.lower.algorithm = loaded_job->schedule.algorithm;  // the trace's default
    endpoints.push_back(uint32_t(loaded_job->schedule.ranks.size()));
    loaded.push_back(std::move(loaded_job));
    jobs.push_back(job);
  }
  uint32_t hosts_needed = 0, gpus = 1;
  if (!models::TopologyGpusPerHost(o.topology, &gpus, &error)) return UsageError(self, error);
  if (!models::PlaceJobs(&jobs, endpoints, &hosts_needed, &error, nullptr, gpus)) return UsageError(self, error);
  models::TopologySpec spec;
  if (!models::ParseTopology(o.topology, hosts_needed, &spec, &error)) return UsageError(self, error);
  if (!spec.Fits(hosts_needed, &error)) return UsageError(self, error);
  const models::TopologyGraph graph = models::BuildTopology(spec);
  const models::Link network{double(spec.rate_bps) / 1e9, 0};
  std::vector<models::JobDemand> demand;
  for (size_t j = 0; j < jobs.size(); ++j)
    demand.push_back(models::ProfileJob(loaded[j]->schedule, jobs[j].hosts, uint32_t(j), graph, network));
  std::vector<double> capacity;
  for (const auto& link : graph.links) capacity.push_back(double(link.rate_bps));
  const models::CassiniPlan plan = models::PlaceCassini(demand, capacity, o.cassini);

  std::printf("# CASSINI time shifts on %s (each job alone at link rate: alpha-beta estimate)\n",
              spec.Describe().c_str());
  std::printf("%-4s %-10s %12s %12s  %s\n", "job", "hosts", "period_ms", "start_ms", "trace");
  std::vector<std::string> specs;
  runs::Json out = runs::Json::object();
  out["topology"] = o.topology;
  out["jobs"] = runs::Json::array();
  for (size_t j = 0; j < jobs.size(); ++j) {
    const uint64_t start = uint64_t(std::llround(plan.start_ns[j]));
    // Hosts, not GPUs: with several GPUs per host, each host once and the GPUs per host.
    std::vector<uint32_t> hosts;
    for (uint32_t node : jobs[j].hosts)
      if (gpus == 1 || hosts.empty() || hosts.back() != node / gpus) hosts.push_back(node / gpus);
    std::printf("%-4zu %-10s %12.3f %12.3f  %s\n", j, HostText(hosts).c_str(), demand[j].period_ns / 1e6,
                double(start) / 1e6, jobs[j].trace.c_str());
    std::string job_spec = jobs[j].trace + ":hosts=" + HostText(hosts) + ":start=" + std::to_string(start) +
                           "ns:algo=" + jobs[j].lower.algorithm;
    if (gpus > 1) job_spec += ":gpus-per-host=" + std::to_string(jobs[j].gpus_per_host ? jobs[j].gpus_per_host : gpus);
    if (jobs[j].lower.channels != 1) job_spec += ":channels=" + std::to_string(jobs[j].lower.channels);
    if (jobs[j].iterations > 0) job_spec += ":iterations=" + std::to_string(jobs[j].iterations);
    specs.push_back(job_spec);
    out["jobs"].push_back({{"trace", jobs[j].trace},
                           {"hosts", hosts},
                           {"algo", jobs[j].lower.algorithm},
                           {"period_ns", demand[j].period_ns},
                           {"start_ns", start},
                           {"spec", job_spec}});
  }
  std::printf("\n# shared links (MB above capacity per circle: all at 0 -> shifted)\n");
  out["links"] = runs::Json::array();
  for (const models::LinkShift& l : plan.links) {
    const models::TopologyLink& link = graph.links[l.link / 2];
    const std::string from = graph.names[l.link % 2 ? link.b : link.a], to = graph.names[l.link % 2 ? link.a : link.b];
    std::string who;
    for (uint32_t j : l.jobs) who += (who.empty() ? "" : ",") + std::to_string(j);
    std::printf("%-24s jobs %-8s circle %9.3f ms  %10.3f -> %10.3f\n", (from + "->" + to).c_str(), who.c_str(),
                l.circle_ns / 1e6, l.excess_before / 1e6, l.excess_after / 1e6);
    out["links"].push_back({{"from", from},
                            {"to", to},
                            {"jobs", l.jobs},
                            {"circle_ns", l.circle_ns},
                            {"shift_ns", l.shift_ns},
                            {"excess_bytes_before", l.excess_before},
                            {"excess_bytes_after", l.excess_after}});
  }
  if (plan.links.empty()) std::printf("(none: the jobs share no link, every job starts at 0)\n");
  out["notes"] = plan.notes;
  for (const std::string& note : plan.notes) Warn(note);
  std::printf("\n# run it:\ndltrace simulate --topo %s", o.topology.c_str());
  for (const std::string& s : specs) std::printf(" --job %s", s.c_str());
  std::printf("\n");
  if (!o.plan_path.empty()) {
    if (!runs::WriteFileAtomically(o.plan_path, out.dump(2) + "\n", &error)) return Fail(error);
    std::printf("plan: %s (dltrace simulate --plan %s)\n", o.plan_path.c_str(), o.plan_path.c_str());
  }
  return kExitOk;
}

}  // namespace

Command AddPlaceCommand(CLI::App& dltrace) {
  auto o = std::make_shared<PlaceOptions>();
  CLI::App* cmd = dltrace.add_subcommand(
      "place", "CASSINI time shifts: start offsets that interleave the communication of jobs sharing links");
  cmd->add_option("--job", o->job_specs,
                  "a job: TRACE[:hosts=0-3][:gpus-per-host=N][:algo=A][:channels=C] (repeat; default hosts: the next free ones, as "
                  "simulate places them)")
      ->type_name("SPEC")
      ->required()
      ->allow_extra_args(false);
  cmd->add_option("--topo", o->topology, "the topology simulate will run on (its --topo SPEC)")
      ->type_name("SPEC")
      ->capture_default_str();
  AddLowerOptions(cmd, &o->defaults.lower);
  cmd->add_option("--bins", o->cassini.bins, "points on each link's circle (the shift resolution)")
      ->check(CLI::Range(8, 100000))
      ->capture_default_str();
  cmd->add_option_function<double>(
         "--quantum-ms", [o](double ms) { o->cassini.quantum_ns = ms * 1e6; },
         "periods are rounded to this for the circle (their least common multiple)")
      ->default_str("0.1")
      ->check(Positive());
  cmd->add_option("-o,--output", o->plan_path, "write the plan as JSON (for dltrace simulate --plan)")
      ->type_name("PLAN.json");
  cmd->footer("Exit status: 0 ok, 1 error (unreadable trace), 2 usage (bad spec, jobs that do not fit the topology).");
  return {cmd, [o](const Args&) { return RunPlace(*o); }};
}

}  // namespace dltrace::cli
