// SPDX-License-Identifier: GPL-2.0-only
// The registry of simulator backends and the settings helpers.
#include "dltrace/simulator/simulator.h"

namespace dltrace::simulator {

namespace {

struct Missing {
  std::string name, title, missing;
};

std::vector<SimulatorInfo>& Built() {
  static std::vector<SimulatorInfo> built;
  return built;
}

std::vector<Missing>& NotBuilt() {
  static std::vector<Missing> missing;
  return missing;
}

}  // namespace

void RegisterSimulator(SimulatorInfo info) {
  for (const auto& s : Built())
    if (s.name == info.name) return;
  Built().push_back(std::move(info));
}

void RegisterMissingSimulator(const std::string& name, const std::string& title, const std::string& missing) {
  for (const auto& s : NotBuilt())
    if (s.name == name) return;
  NotBuilt().push_back({name, title, missing});
}

const std::vector<SimulatorInfo>& Simulators() { return Built(); }

const SimulatorInfo* FindSimulator(const std::string& name, std::string* missing) {
  for (const auto& s : Built())
    if (s.name == name) return &s;
  if (missing) {
    missing->clear();
    for (const auto& m : NotBuilt())
      if (m.name == name) *missing = m.missing;
  }
  return nullptr;
}

std::vector<std::string> SimulatorNames() {
  std::vector<std::string> names;
  for (const auto& s : Built()) names.push_back(s.name);
  for (const auto& m : NotBuilt()) names.push_back(m.name);
  return names;
}

std::vector<std::string> SimulatorBuildLines() {
  std::vector<std::string> lines;
  for (const auto& s : Built())
    if (!s.build.empty()) lines.push_back(s.title + " simulator: " + s.build);
  for (const auto& m : NotBuilt()) lines.push_back(m.title + " simulator: not built (" + m.missing + ")");
  return lines;
}

SettingSpec Setting(const std::string& flag, const std::string& help, SettingSpec::Kind kind) {
  SettingSpec s;
  s.flag = flag;
  s.help = help;
  s.kind = kind;
  return s;
}

SettingSpec Number(const std::string& flag, const std::string& help, SettingSpec::Bound bound,
                   const std::string& default_text, double min, double max) {
  SettingSpec s = Setting(flag, help, SettingSpec::Kind::kNumber);
  s.bound = bound;
  s.default_text = default_text;
  s.min = min;
  s.max = max;
  return s;
}

SettingSpec Repeatable(SettingSpec s) {
  s.repeatable = true;
  return s;
}

std::vector<std::string> SettingValues(const SimulationConfig& config, const std::string& name) {
  std::vector<std::string> values;
  for (const auto& [k, v] : config.settings)
    if (k == name) values.push_back(v);
  return values;
}

}  // namespace dltrace::simulator
