// SPDX-License-Identifier: GPL-2.0-only
// The simulator registry: what `dltrace simulate --simulator NAME` finds, and
// the one line it gives for a backend the build could not make.
#include <gtest/gtest.h>

#include "dltrace/simulator/simulator.h"

namespace dltrace::simulator {
namespace {

class NullSimulator final : public Simulator {
 public:
  bool Check(const SimulationConfig&, std::string*) override { return true; }
  bool Configure(const SimulationConfig&, std::string*) override { return true; }
  bool Run(std::string*) override { return true; }
  const runs::SimulationRecords& Records() const override { return records_; }

 private:
  runs::SimulationRecords records_;
};

TEST(SimulatorRegistry, FindsABuiltBackendAndNamesWhatAnUnbuiltOneMisses) {
  SimulatorInfo info;
  info.name = "null";
  info.title = "Null";
  info.build = "null 1.0";
  info.make = [] { return std::make_unique<NullSimulator>(); };
  RegisterSimulator(info);
  RegisterMissingSimulator("warp", "Warp", "libwarp not found (apt-get install libwarp-dev)");

  std::string missing = "unset";
  const SimulatorInfo* found = FindSimulator("null", &missing);
  ASSERT_NE(found, nullptr);
  EXPECT_NE(found->make(), nullptr);
  EXPECT_EQ(FindSimulator("warp", &missing), nullptr);
  EXPECT_EQ(missing, "libwarp not found (apt-get install libwarp-dev)");
  EXPECT_EQ(FindSimulator("nosuch", &missing), nullptr);
  EXPECT_EQ(missing, "");
  EXPECT_EQ(SimulatorNames(), (std::vector<std::string>{"null", "warp"}));
  EXPECT_EQ(SimulatorBuildLines(),
            (std::vector<std::string>{"Null simulator: null 1.0",
                                      "Warp simulator: not built (libwarp not found (apt-get install libwarp-dev))"}));
}

TEST(SimulatorRegistry, RepeatedSettingsKeepTheirOrder) {
  SimulationConfig c;
  c.settings = {{"cfg", "a:1"}, {"queue", "red"}, {"cfg", "b:2"}, {"queue", "fifo"}};
  EXPECT_EQ(SettingValues(c, "cfg"), (std::vector<std::string>{"a:1", "b:2"}));
}

}  // namespace
}  // namespace dltrace::simulator
