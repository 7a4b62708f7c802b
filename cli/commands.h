// SPDX-License-Identifier: GPL-2.0-only
// The dltrace subcommands: each cmd_*.cc declares its subcommand and options
// on the one CLI11 app (Add*Command) and runs from the parsed options.
#pragma once

#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "dltrace/models/algorithms.h"

namespace dltrace::cli {

// Exit statuses every subcommand uses.
constexpr int kExitOk = 0;
constexpr int kExitError = 1;       // unreadable or corrupt input, a failed run
constexpr int kExitUsage = 2;       // unknown subcommand, bad option or value
constexpr int kExitIncomplete = 3;  // printed what it could; input was truncated or partial

using Args = std::vector<std::string>;

// One subcommand as Add*Command declared it: its CLI11 app, whose options are
// bound to the command's own option struct, and what runs it once the whole
// command line parsed.
struct Command {
  CLI::App* app;
  // REST: what followed the first "--" when takes_rest, else empty.
  std::function<int(const Args& rest)> run;
  // Everything after the first "--" belongs to the command (the program record
  // starts, the options compare passes to its runs) and is never parsed here.
  bool takes_rest = false;
};

Command AddInfoCommand(CLI::App& dltrace);
Command AddDumpCommand(CLI::App& dltrace);
Command AddRecordCommand(CLI::App& dltrace);
Command AddRecoverCommand(CLI::App& dltrace);
Command AddSynthCommand(CLI::App& dltrace);
Command AddScaleCommand(CLI::App& dltrace);
Command AddScheduleCommand(CLI::App& dltrace);
Command AddReplayCommand(CLI::App& dltrace);
Command AddSimulateCommand(CLI::App& dltrace);
// Per simulator, which build `dltrace simulate` runs on ("ns-3 simulator: ..."),
// or that it is not built and why.
std::vector<std::string> SimulatorBuildLines();
Command AddPlaceCommand(CLI::App& dltrace);
Command AddCompareCommand(CLI::App& dltrace);
Command AddConvertCommand(CLI::App& dltrace);
Command AddReportCommand(CLI::App& dltrace);
Command AddCalibrateCommand(CLI::App& dltrace);

// A file that comes with dltrace: $ENV_VAR when set, else the first of
// RELATIVE (each starting with "/") under this program's directory that
// exists, as an absolute path; "" when none does (options.cc).
std::string FindBesideProgram(const char* env_var, std::initializer_list<const char*> relative);

// Option groups several commands share, declared once (options.cc).
// The lowering options (--algo, --channels, --chunk-bytes, --servers,
// --colocated, --async, --gossip-peers, --iteration-ops, --local-gbps,
// --local-latency-us), bound to *O; their defaults are *O's.
void AddLowerOptions(CLI::App* command, models::LowerOptions* o);
// The positional trace argument NAME (PATH or TRACE), required: WHAT it takes.
CLI::Option* AddTraceArgument(CLI::App* command, std::string* path, const std::string& name = "PATH",
                              const std::string& what = "a trace set");
// -o/--output DIR: where a run's files go; empty (the default) means a fresh
// directory FRESH_PREFIX<time> (FreshDirName). WHAT says which files.
CLI::Option* AddOutputDirOption(CLI::App* command, std::string* dir, const std::string& what,
                                const std::string& fresh_prefix);
// Checks a value is a number > 0 (Positive) or >= 0 (NonNegative).
CLI::Validator Positive();
CLI::Validator NonNegative();
// Checks a value is one of models::AlgorithmNames(): "unknown algorithm 'X' (one of ...)".
CLI::Validator AlgorithmName();

// Prints "dltrace: error: MESSAGE" on stderr; returns kExitError.
int Fail(const std::string& message);
// Prints "dltrace: warning: MESSAGE" on stderr.
void Warn(const std::string& message);
// The exit status of a command that read input with these WARNINGS:
// kExitOk without any, kExitIncomplete with some. WarnAll also prints them.
int StatusOf(const std::vector<std::string>& warnings);
int WarnAll(const std::vector<std::string>& warnings);
// Prints the one line "dltrace COMMAND: MESSAGE" on stderr; returns kExitUsage.
// For checks that span options, as CLI11 reports the others.
int UsageError(const std::string& command, const std::string& message);
// A name "PREFIX<yyyymmdd-hhmmss>" (with "-N" added) that does not exist yet:
// where a run goes when no -o was given, never an earlier run's directory.
std::string FreshDirName(const std::string& prefix);
// Creates DIR and its missing parents; false (and why in *error) otherwise.
bool MakeDirs(const std::string& dir, std::string* error);

}  // namespace dltrace::cli
