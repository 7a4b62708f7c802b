// SPDX-License-Identifier: GPL-2.0-only
// The JSON dltrace writes (results files, exports, the report's data, the cli's --json
// and dump): nlohmann-json values, turned into text in one way.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace dltrace::runs {

// Objects keep their fields in the order they were added, as readers see them.
using Json = nlohmann::ordered_json;

// Compact text of J. Numbers round-trip, NaN and infinities become null, and
// bytes that are not UTF-8 (a host or path from a damaged trace) become U+FFFD
// instead of an exception.
inline std::string JsonText(const Json& j) {
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace dltrace::runs
