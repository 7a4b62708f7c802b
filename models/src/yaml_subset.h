// SPDX-License-Identifier: GPL-2.0-only
// The part of YAML a fabric file needs, read into the JSON value the JSON
// form of the same file gives: block mappings and sequences by indentation
// (spaces), `- ` items (a mapping may start on the item's line), one-line
// flow sequences `[a, b]` and mappings `{a: 1}`, quoted and plain scalars
// (integers, floats, true/false, null or ~; anything else a string) and
// comments. Anchors, tags, multi-line scalars and several documents are not
// read: they are an error naming the line, as is a tab in the indentation.
#pragma once

#include <istream>
#include <nlohmann/json.hpp>
#include <string>

namespace dltrace::models {

// False, with *ERROR as "line N: what", when IN is not that subset.
bool ParseYamlSubset(std::istream& in, nlohmann::json* out, std::string* error);

}  // namespace dltrace::models
