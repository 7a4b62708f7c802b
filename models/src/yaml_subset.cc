// SPDX-License-Identifier: GPL-2.0-only
// ParseYamlSubset: block structure by indentation, one-line flow values (yaml_subset.h).
#include "yaml_subset.h"

#include <cstdlib>
#include <vector>

namespace dltrace::models {

namespace {

struct Line {
  size_t indent = 0;
  std::string text;  // without indentation, comment and trailing spaces
  int number = 0;    // 1-based, for errors
};

class Parser {
 public:
  explicit Parser(std::vector<Line> lines) : lines_(std::move(lines)) {}

  bool Document(nlohmann::json* out, std::string* error) {
    error_ = error;
    if (lines_.empty()) {
      *out = nullptr;
      return true;
    }
    if (!Block(lines_[0].indent, out)) return false;
    if (at_ < lines_.size()) return Fail(lines_[at_].number, "indentation does not match any block above");
    return true;
  }

 private:
  bool Fail(int line, const std::string& what) {
    *error_ = "line " + std::to_string(line) + ": " + what;
    return false;
  }

  static bool IsItem(const std::string& t) { return t == "-" || t.compare(0, 2, "- ") == 0; }

  // Where KEY: ends in T (a colon followed by a space or the end, outside
  // quotes and brackets), or npos.
  static size_t KeyColon(const std::string& t) {
    char quote = 0;
    int depth = 0;
    for (size_t i = 0; i < t.size(); ++i) {
      const char c = t[i];
      if (quote) {
        if (c == quote) quote = 0;
      } else if (c == '"' || c == '\'') {
        quote = c;
      } else if (c == '[' || c == '{') {
        ++depth;
      } else if (c == ']' || c == '}') {
        --depth;
      } else if (c == ':' && depth == 0 && (i + 1 == t.size() || t[i + 1] == ' ')) {
        return i;
      }
    }
    return std::string::npos;
  }

  bool Block(size_t indent, nlohmann::json* out) {
    return IsItem(lines_[at_].text) ? Sequence(indent, out) : Mapping(indent, out);
  }

  bool Sequence(size_t indent, nlohmann::json* out) {
    *out = nlohmann::json::array();
    while (at_ < lines_.size() && lines_[at_].indent == indent && IsItem(lines_[at_].text)) {
      Line& l = lines_[at_];
      const size_t skip = l.text.find_first_not_of(' ', 1);
      nlohmann::json item;
      if (skip == std::string::npos) {  // "-" alone: the item is the block below
        ++at_;
        if (at_ >= lines_.size() || lines_[at_].indent <= indent) {
          item = nullptr;
        } else if (!Block(lines_[at_].indent, &item)) {
          return false;
        }
      } else if (l.text[skip] != '[' && l.text[skip] != '{' && KeyColon(l.text.substr(skip)) != std::string::npos) {
        // "- key: value": a mapping whose first line starts after "- ".
        l.text = l.text.substr(skip);
        l.indent += skip;
        if (!Mapping(l.indent, &item)) return false;
      } else {
        if (!Flow(l.text.substr(skip), l.number, &item)) return false;
        ++at_;
      }
      out->push_back(std::move(item));
    }
    return true;
  }

  bool Mapping(size_t indent, nlohmann::json* out) {
    *out = nlohmann::json::object();
    while (at_ < lines_.size() && lines_[at_].indent == indent) {
      const Line& l = lines_[at_];
      if (IsItem(l.text)) return Fail(l.number, "a sequence item where a mapping's key was expected");
      const size_t colon = KeyColon(l.text);
      if (colon == std::string::npos) return Fail(l.number, "expected 'key: value', got '" + l.text + "'");
      nlohmann::json key;
      if (!Flow(l.text.substr(0, colon), l.number, &key)) return false;
      const std::string name = key.is_string() ? key.get<std::string>() : key.dump();
      if (out->contains(name)) return Fail(l.number, "key '" + name + "' given twice");
      const size_t rest = l.text.find_first_not_of(' ', colon + 1);
      const int number = l.number;
      ++at_;
      nlohmann::json value;
      if (rest != std::string::npos) {
        if (!Flow(l.text.substr(rest), number, &value)) return false;
      } else if (at_ < lines_.size() && lines_[at_].indent > indent) {
        if (!Block(lines_[at_].indent, &value)) return false;
      } else if (at_ < lines_.size() && lines_[at_].indent == indent && IsItem(lines_[at_].text)) {
        if (!Sequence(indent, &value)) return false;  // "key:" then "- item" at the key's column
      }
      (*out)[name] = std::move(value);
    }
    return true;
  }

  // One value on one line: flow collections and scalars.
  bool Flow(const std::string& text, int number, nlohmann::json* out) {
    const char c = text.empty() ? ' ' : text[0];
    if (c != '[' && c != '{' && c != '"' && c != '\'' && c != '&' && c != '*' && c != '!' && c != '|' && c != '>') {
      *out = Scalar(text);  // a plain scalar in block context runs to the line's end, commas and all
      return true;
    }
    size_t i = 0;
    if (!FlowValue(text, &i, number, out)) return false;
    i = text.find_first_not_of(' ', i);
    if (i != std::string::npos) return Fail(number, "unexpected '" + text.substr(i) + "'");
    return true;
  }

  bool FlowValue(const std::string& t, size_t* i, int number, nlohmann::json* out) {
    *i = t.find_first_not_of(' ', *i);
    if (*i == std::string::npos) return Fail(number, "a value is missing");
    const char c = t[*i];
    if (c == '&' || c == '*' || c == '!' || c == '|' || c == '>')
      return Fail(number, std::string("'") + c + "' (anchors, aliases, tags and block scalars) is not read here");
    if (c == '[' || c == '{') {
      const char close = c == '[' ? ']' : '}';
      *out = c == '[' ? nlohmann::json::array() : nlohmann::json::object();
      ++*i;
      for (bool first = true;; first = false) {
        *i = t.find_first_not_of(' ', *i);
        if (*i == std::string::npos) return Fail(number, std::string("'") + c + "' is not closed on its line");
        if (t[*i] == close) {
          ++*i;
          return true;
        }
        if (!first) {
          if (t[*i] != ',') return Fail(number, std::string("expected ',' or '") + close + "'");
          ++*i;
        }
        nlohmann::json v;
        if (!FlowValue(t, i, number, &v)) return false;
        if (c == '[') {
          out->push_back(std::move(v));
          continue;
        }
        *i = t.find_first_not_of(' ', *i);
        if (*i == std::string::npos || t[*i] != ':') return Fail(number, "expected ':' after a key in '{...}'");
        ++*i;
        nlohmann::json value;
        if (!FlowValue(t, i, number, &value)) return false;
        (*out)[v.is_string() ? v.get<std::string>() : v.dump()] = std::move(value);
      }
    }
    if (c == '"' || c == '\'') {
      std::string s;
      for (size_t k = *i + 1; k < t.size(); ++k) {
        if (t[k] == c) {
          if (c == '\'' && k + 1 < t.size() && t[k + 1] == '\'') {  // '' is a quote
            s += '\'';
            ++k;
            continue;
          }
          *i = k + 1;
          *out = s;
          return true;
        }
        if (c == '"' && t[k] == '\\' && k + 1 < t.size()) ++k;
        s += t[k];
      }
      return Fail(number, std::string("a ") + c + " string is not closed on its line");
    }
    size_t end = *i;
    while (end < t.size() && t[end] != ',' && t[end] != ']' && t[end] != '}' &&
           !(t[end] == ':' && (end + 1 == t.size() || t[end + 1] == ' ' || t[end + 1] == ',')))
      ++end;
    std::string s = t.substr(*i, end - *i);
    while (!s.empty() && s.back() == ' ') s.pop_back();
    *i = end;
    *out = Scalar(s);
    return true;
  }

  static nlohmann::json Scalar(const std::string& s) {
    if (s == "true" || s == "True") return true;
    if (s == "false" || s == "False") return false;
    if (s == "null" || s == "~" || s.empty()) return nullptr;
    char* end = nullptr;
    const long long n = std::strtoll(s.c_str(), &end, 10);
    if (*end == '\0') return n >= 0 ? nlohmann::json(uint64_t(n)) : nlohmann::json(n);  // as JSON's parser reads them
    const double d = std::strtod(s.c_str(), &end);
    if (*end == '\0') return d;
    return s;
  }

  std::vector<Line> lines_;
  size_t at_ = 0;
  std::string* error_ = nullptr;
};

// S without a comment: '#' at its start or after a space, outside quotes.
std::string StripComment(const std::string& s) {
  char quote = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (quote) {
      if (c == quote) quote = 0;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '#' && (i == 0 || s[i - 1] == ' ' || s[i - 1] == '\t')) {
      return s.substr(0, i);
    }
  }
  return s;
}

}  // namespace

bool ParseYamlSubset(std::istream& in, nlohmann::json* out, std::string* error) {
  std::vector<Line> lines;
  std::string raw;
  for (int number = 1; std::getline(in, raw); ++number) {
    if (!raw.empty() && raw.back() == '\r') raw.pop_back();
    if (number == 1 && raw.compare(0, 3, "\xEF\xBB\xBF") == 0) raw = raw.substr(3);
    if (raw == "---" && lines.empty()) continue;  // the document's start
    if (raw == "---" || raw == "...") {
      *error = "line " + std::to_string(number) + ": one document per fabric file";
      return false;
    }
    std::string text = StripComment(raw);
    while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.pop_back();
    const size_t indent = text.find_first_not_of(' ');
    if (indent == std::string::npos) continue;
    if (text[indent] == '\t') {
      *error = "line " + std::to_string(number) + ": a tab in the indentation (YAML indents with spaces)";
      return false;
    }
    lines.push_back({indent, text.substr(indent), number});
  }
  return Parser(std::move(lines)).Document(out, error);
}

}  // namespace dltrace::models
