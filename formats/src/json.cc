#include "dltrace/formats/json.h"

#include <cstdio>

namespace dltrace::formats {

std::string JsonEscape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else if (c == '<') {
          out += "\\u003c";
        } else {
          out += char(c);
        }
    }
  }
  return out;
}

}  // namespace dltrace::formats
