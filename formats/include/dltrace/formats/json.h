// The one JSON string escaper every JSON writer uses (dump and info, results
// files, exports, the report's embedded data).
#pragma once

#include <string>

namespace dltrace::formats {

// The body of a JSON string (without the quotes) for S: quotes, backslashes
// and control characters escaped, and '<' as \u003c, so the JSON can sit
// inside an HTML <script> element.
std::string JsonEscape(const std::string& s);

}  // namespace dltrace::formats
