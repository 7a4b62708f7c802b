// SPDX-License-Identifier: GPL-2.0-only
// What topology.cc (the spec parser) and fabric.cc (the graph builders and
// the fabric file reader) share inside models/.
#pragma once

#include <string>

#include "dltrace/models/topology.h"

namespace dltrace::models {

// The host model's values fit together (ports and planes, domain size); false with one line.
bool CheckHostModel(const TopologySpec& spec, std::string* error);

// KEY=VALUE of the keys every kind takes (the host model, faults) onto C;
// false when KEY is not one of them; *OK false when VALUE is bad.
bool ParseCommonKey(const std::string& key, const std::string& value, TopologySpec* c, bool* ok);

// PATH's fabric (JSON), with OVERRIDES ("fail=...,degrade=...") applied; false with one line naming the problem.
bool ParseFabricFile(const std::string& path, const std::string& overrides, uint32_t hosts_needed,
                     TopologySpec* out, std::string* error);

}  // namespace dltrace::models
