// A small streaming JSON writer for --json output (no dependency needed).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dltrace::cli {

class JsonWriter {
 public:
  JsonWriter& BeginObject();
  JsonWriter& EndObject();
  JsonWriter& BeginArray();
  JsonWriter& EndArray();
  JsonWriter& Key(const std::string& key);
  JsonWriter& String(const std::string& value);
  JsonWriter& Int(int64_t value);
  JsonWriter& Uint(uint64_t value);
  JsonWriter& Double(double value);  // NaN/inf become null
  JsonWriter& Bool(bool value);
  JsonWriter& Null();

  template <typename T>
  JsonWriter& Field(const std::string& key, const T& value) {
    Key(key);
    return Value(value);
  }

  const std::string& str() const { return out_; }

 private:
  JsonWriter& Value(const std::string& v) { return String(v); }
  JsonWriter& Value(const char* v) { return String(v); }
  JsonWriter& Value(double v) { return Double(v); }
  JsonWriter& Value(bool v) { return Bool(v); }
  JsonWriter& Value(int v) { return Int(v); }
  JsonWriter& Value(long v) { return Int(v); }
  JsonWriter& Value(long long v) { return Int(v); }
  JsonWriter& Value(unsigned v) { return Uint(v); }
  JsonWriter& Value(unsigned long v) { return Uint(v); }
  JsonWriter& Value(unsigned long long v) { return Uint(v); }
  void Separate();

  std::string out_;
  std::vector<bool> first_;  // per open container: no element written yet
  bool after_key_ = false;
};

}  // namespace dltrace::cli
