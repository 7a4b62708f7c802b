// SPDX-License-Identifier: GPL-2.0-only
// dltrace: one program, one subcommand per stage of the pipeline. The command
// line is parsed by CLI11: each cmd_*.cc declares its subcommand and options.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>

#include "commands.h"

namespace dltrace::cli {

int Fail(const std::string& message) {
  std::fprintf(stderr, "dltrace: error: %s\n", message.c_str());
  return kExitError;
}

void Warn(const std::string& message) {
  std::fprintf(stderr, "dltrace: warning: %s\n", message.c_str());
}

int StatusOf(const std::vector<std::string>& warnings) { return warnings.empty() ? kExitOk : kExitIncomplete; }

int WarnAll(const std::vector<std::string>& warnings) {
  for (const auto& w : warnings) Warn(w);
  return StatusOf(warnings);
}

int UsageError(const std::string& command, const std::string& message) {
  std::fprintf(stderr, "dltrace %s: %s\n", command.c_str(), message.c_str());
  return kExitUsage;
}

std::string FreshDirName(const std::string& prefix) {
  char stamp[32];
  std::time_t now = std::time(nullptr);
  std::tm local;
  localtime_r(&now, &local);
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &local);
  std::string base = prefix + stamp, name = base;
  for (int i = 2; access(name.c_str(), F_OK) == 0; ++i) name = base + "-" + std::to_string(i);
  return name;
}

bool MakeDirs(const std::string& dir, std::string* error) {
  std::string partial;
  for (size_t pos = 0; pos != std::string::npos;) {
    pos = dir.find('/', pos + 1);
    partial = dir.substr(0, pos);
    if (!partial.empty() && mkdir(partial.c_str(), 0777) != 0 && errno != EEXIST) {
      *error = partial + ": " + std::strerror(errno);
      return false;
    }
  }
  return true;
}

}  // namespace dltrace::cli

namespace {

using namespace dltrace::cli;

// CLI11's error as the one line after "dltrace COMMAND: ".
std::string ParseErrorMessage(const CLI::App& dltrace, const CLI::App* command, const CLI::ParseError& e) {
  if (dynamic_cast<const CLI::ExtrasError*>(&e)) {
    const std::vector<std::string> extras = dltrace.remaining(true);
    if (!extras.empty() && extras[0].size() > 1 && extras[0][0] == '-') return "unknown option " + extras[0];
    if (!extras.empty()) return (command ? "unexpected argument " : "unknown command ") + extras[0];
  }
  if (dynamic_cast<const CLI::RequiredError*>(&e) && command)
    for (const CLI::Option* o : command->get_options())
      if (o->get_required() && o->count() == 0) return "missing " + o->get_name();
  return e.what();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App dltrace(std::string("dltrace ") + DLTRACE_VERSION_STRING +
                       ": record, replay and simulate distributed-training traffic",
                   "dltrace");
  std::string version = std::string("dltrace ") + DLTRACE_VERSION_STRING;
  for (const auto& line : SimulatorBuildLines()) version += "\n" + line;
  dltrace.set_version_flag("--version", version);
  dltrace.footer("'dltrace COMMAND --help' shows a command's options.");
  dltrace.option_defaults()->always_capture_default();
  dltrace.get_formatter()->column_width(28);
  dltrace.require_subcommand(0, 1);
  const std::vector<Command> commands = {
      AddInfoCommand(dltrace),     AddDumpCommand(dltrace),     AddRecordCommand(dltrace),
      AddRecoverCommand(dltrace),
      AddSynthCommand(dltrace),    AddScaleCommand(dltrace),    AddScheduleCommand(dltrace),
      AddReplayCommand(dltrace),
      AddSimulateCommand(dltrace), AddPlaceCommand(dltrace),    AddCompareCommand(dltrace),  AddConvertCommand(dltrace),
      AddReportCommand(dltrace),   AddCalibrateCommand(dltrace),
  };
  if (argc < 2) {
    std::fputs(dltrace.help().c_str(), stderr);
    return kExitUsage;
  }
  Args args(argv + 1, argv + argc), rest;
  const Command* named = nullptr;
  for (const auto& c : commands)
    if (c.app->get_name() == args[0]) named = &c;
  if (named && named->takes_rest) {
    auto dashes = std::find(args.begin() + 1, args.end(), "--");
    if (dashes != args.end()) {
      rest.assign(dashes + 1, args.end());
      args.erase(dashes, args.end());
    }
  }
  std::reverse(args.begin(), args.end());  // CLI11 takes the arguments last first
  try {
    dltrace.parse(std::move(args));
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == int(CLI::ExitCodes::Success)) return dltrace.exit(e);
    const CLI::App* command = named && named->app->parsed() ? named->app : nullptr;
    const std::string message = ParseErrorMessage(dltrace, command, e);
    if (command) return UsageError(command->get_name(), message);
    std::fprintf(stderr, "dltrace: %s (try 'dltrace --help')\n", message.c_str());
    return kExitUsage;
  }
  for (const auto& c : commands)
    if (c.app->parsed()) return c.run(rest);
  std::fputs(dltrace.help().c_str(), stderr);
  return kExitUsage;
}
