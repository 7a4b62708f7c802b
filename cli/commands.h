// The dltrace subcommands: each is one function taking its arguments (after
// the subcommand name) and returning the process exit status.
#pragma once

#include <string>
#include <vector>

#include "dltrace/models/algorithms.h"

namespace dltrace::cli {

// Exit statuses every subcommand uses.
constexpr int kExitOk = 0;
constexpr int kExitError = 1;       // bad arguments, unreadable or corrupt input
constexpr int kExitUsage = 2;       // unknown subcommand or option
constexpr int kExitIncomplete = 3;  // printed what it could; input was truncated or partial

using Args = std::vector<std::string>;

struct Command {
  const char* name;
  const char* summary;
  const char* usage;
  int (*run)(const Args& args);
};

const std::vector<Command>& AllCommands();

// Prints "dltrace: error: MESSAGE" on stderr; returns kExitError.
int Fail(const std::string& message);
// Prints "dltrace: warning: MESSAGE" on stderr.
void Warn(const std::string& message);
// A whole argument as a number ("1e9", "0.5"); false for anything else.
bool ParseNumber(const std::string& text, double* out);
// A name "PREFIX<yyyymmdd-hhmmss>" (with "-N" added) that does not exist yet:
// where a run goes when no -o was given, never an earlier run's directory.
std::string FreshDirName(const std::string& prefix);
// Creates DIR and its missing parents; false (and why in *error) otherwise.
bool MakeDirs(const std::string& dir, std::string* error);
// The lowering options schedule, replay, simulate and convert share (--algo,
// --channels, --chunk-bytes, --servers, --colocated, --async, --gossip-peers,
// --iteration-ops, --local-gbps, --local-latency-us): when ARGS[*I] is one,
// takes it and its value into *O (moving *I past the value) and returns 1;
// -1 when its value is missing or out of range; 0 for any other argument.
int ParseLowerOption(const Args& args, size_t* i, models::LowerOptions* o);
// Prints the usage of one command and returns kExitUsage.
int UsageError(const Command& command, const std::string& message);
const Command& FindCommand(const char* name);

int RunInfo(const Args& args);
int RunSynth(const Args& args);
int RunSchedule(const Args& args);
int RunDump(const Args& args);
int RunRecord(const Args& args);
int RunReplay(const Args& args);
int RunSimulate(const Args& args);
int RunCompare(const Args& args);
int RunConvert(const Args& args);
int RunReport(const Args& args);

}  // namespace dltrace::cli
