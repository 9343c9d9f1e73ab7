// The calibration file: one flat JSON object of strings, numbers and arrays of
// numbers. A small reader and writer for exactly that (no dependency).
#include <sys/stat.h>

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <type_traits>

#include "redist/cost.hpp"

namespace redist {
namespace {

// 2: row curves from 8 B rows (1 started at 80 B); 3: the footprint curve. A
// file of an older format is measured again.
constexpr const char* kFormat = "redist-calibration-3";

std::string quote(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\', o += c;
    else if (static_cast<unsigned char>(c) < 0x20) o += ' ';
    else o += c;
  }
  return o + "\"";
}

std::string num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.9g", v);
  return b;
}

std::string array(const std::vector<double>& v) {
  std::string o = "[";
  for (size_t i = 0; i < v.size(); ++i) o += (i ? ", " : "") + num(v[i]);
  return o + "]";
}

struct Value {
  bool is_string = false;
  std::string s;
  std::vector<double> v;  // a number is an array of one
};

class Reader {
 public:
  explicit Reader(const std::string& t) : t_(t) {}
  std::map<std::string, Value> object() {
    std::map<std::string, Value> m;
    expect('{');
    if (peek() == '}') return ++i_, m;
    while (true) {
      std::string k = string();
      expect(':');
      m[k] = value();
      if (peek() == ',') { ++i_; continue; }
      expect('}');
      return m;
    }
  }

 private:
  const std::string& t_;
  size_t i_ = 0;
  [[noreturn]] void bad(const char* what) {
    detail::fail("calibration JSON: ", what, " at character ", i_);
  }
  char peek() {
    while (i_ < t_.size() && std::isspace(static_cast<unsigned char>(t_[i_]))) ++i_;
    return i_ < t_.size() ? t_[i_] : '\0';
  }
  void expect(char c) {
    if (peek() != c) bad(c == '{' ? "expected '{'" : c == '}' ? "expected '}' or ','" : "unexpected character");
    ++i_;
  }
  std::string string() {
    expect('"');
    std::string s;
    while (i_ < t_.size() && t_[i_] != '"') {
      if (t_[i_] == '\\' && i_ + 1 < t_.size()) ++i_;
      s += t_[i_++];
    }
    if (i_ >= t_.size()) bad("unterminated string");
    ++i_;
    return s;
  }
  double number() {
    peek();
    const char* b = t_.c_str() + i_;
    char* e = nullptr;
    const double v = std::strtod(b, &e);
    if (e == b) bad("expected a number");
    i_ += static_cast<size_t>(e - b);
    return v;
  }
  Value value() {
    Value v;
    const char c = peek();
    if (c == '"') {
      v.is_string = true;
      v.s = string();
    } else if (c == '[') {
      ++i_;
      if (peek() == ']') return ++i_, v;
      while (true) {
        v.v.push_back(number());
        if (peek() == ',') { ++i_; continue; }
        expect(']');
        break;
      }
    } else {
      v.v.push_back(number());
    }
    return v;
  }
};

// The curves and their key names (for Machine and const Machine alike).
template <class C>
struct Named {
  const char* x;
  const char* y;
  C* c;
};
template <class M>
auto curves(M& m) -> std::vector<Named<std::remove_reference_t<decltype((m.copy))>>> {
  return {{"pingpong_bytes", "pingpong_s", &m.pingpong},
          {"exchange_bytes", "exchange_s", &m.exchange},
          {"stream_messages", "stream_s_per_message", &m.stream},
          {"copy_row_bytes", "copy_s_per_byte", &m.copy},
          {"datatype_row_bytes", "datatype_s_per_byte", &m.datatype},
          {"vm_read_row_bytes", "vm_read_s_per_byte", &m.vm_read},
          {"copy_small_row_bytes", "copy_small_s_per_byte", &m.copy_small},
          {"datatype_small_row_bytes", "datatype_small_s_per_byte", &m.datatype_small},
          {"vm_read_small_row_bytes", "vm_read_small_s_per_byte", &m.vm_read_small},
          {"footprint_bytes", "footprint_s_per_byte", &m.footprint},
          {"transpose_elem_bytes", "transpose_s_per_byte", &m.transpose},
          {"datatype_transpose_elem_bytes", "datatype_transpose_s_per_byte", &m.datatype_transpose},
          {"transpose_small_elem_bytes", "transpose_small_s_per_byte", &m.transpose_small}};
}

}  // namespace

std::string default_calibration_path() {
  if (const char* p = std::getenv("REDIST_CALIBRATION"); p && *p) return p;
  const char* home = std::getenv("HOME");
  return std::string(home && *home ? home : ".") + "/.cache/redist/calibration.json";
}

std::string to_json(const Machine& m) {
  std::ostringstream o;
  o << "{\n  \"format\": " << quote(kFormat) << ",\n  \"hostname\": " << quote(m.hostname)
    << ",\n  \"cores\": " << m.cores << ",\n  \"ranks\": " << m.ranks << ",\n  \"build\": " << quote(m.build)
    << ",\n  \"mpi_library\": " << quote(m.mpi_library) << ",\n  \"created\": " << quote(m.created)
    << ",\n  \"bnet\": " << num(m.bnet) << ",\n  \"bmemcpy\": " << num(m.bmemcpy)
    << ",\n  \"bmemcpy_node\": " << num(m.bmemcpy_node)
    << ",\n  \"startup_s\": " << num(m.startup) << ",\n  \"small_footprint_bytes\": " << num(m.small_footprint)
    << ",\n  \"large_footprint_bytes\": " << num(m.large_footprint);
  auto curve = [&](const char* xs, const char* ys, const Curve& c) {
    o << ",\n  \"" << xs << "\": " << array(c.x) << ",\n  \"" << ys << "\": " << array(c.y);
  };
  for (const auto& [xs, ys, c] : curves(m)) curve(xs, ys, *c);
  o << "\n}\n";
  return o.str();
}

Machine machine_from_json(const std::string& text) {
  auto obj = Reader(text).object();
  auto str = [&](const char* k) { return obj.count(k) && obj[k].is_string ? obj[k].s : std::string(); };
  auto num1 = [&](const char* k) { return obj.count(k) && obj[k].v.size() == 1 ? obj[k].v[0] : 0.0; };
  if (str("format") != kFormat) detail::fail("calibration JSON: format is not ", kFormat);
  Machine m;
  m.hostname = str("hostname"), m.build = str("build"), m.mpi_library = str("mpi_library");
  m.created = str("created");
  m.cores = static_cast<int>(num1("cores")), m.ranks = static_cast<int>(num1("ranks"));
  m.bnet = num1("bnet"), m.bmemcpy = num1("bmemcpy"), m.bmemcpy_node = num1("bmemcpy_node"), m.startup = num1("startup_s");
  m.small_footprint = num1("small_footprint_bytes"), m.large_footprint = num1("large_footprint_bytes");
  // Rates and times a model divides by or adds: a file without them (or with
  // negative ones) would predict 0 s for everything, so it is not a calibration.
  // bnet may be 0 (a machine without a ping-pong curve), bmemcpy never is.
  if (!(m.bmemcpy > 0) || !std::isfinite(m.bmemcpy))
    detail::fail("calibration JSON: bmemcpy (bytes/s) must be a positive number, got ",
                 obj.count("bmemcpy") ? std::to_string(m.bmemcpy) : std::string("none"));
  for (const auto& [k, v] : {std::pair{"bnet", m.bnet}, {"bmemcpy_node", m.bmemcpy_node}, {"startup_s", m.startup}})
    if (!(v >= 0) || !std::isfinite(v)) detail::fail("calibration JSON: ", k, " must be a number >= 0, got ", v);
  for (const auto& [xs, ys, cc] : curves(m)) {
    Curve& c = *cc;
    c.x = obj[xs].v, c.y = obj[ys].v;
    if (c.x.size() != c.y.size()) detail::fail("calibration JSON: ", xs, " and ", ys, " differ in length");
    for (size_t i = 1; i < c.x.size(); ++i)
      if (!(c.x[i] > c.x[i - 1])) detail::fail("calibration JSON: ", xs, " must ascend");
    for (double y : c.y)
      if (!(y >= 0) || !std::isfinite(y)) detail::fail("calibration JSON: ", ys, " must be numbers >= 0, got ", y);
  }
  return m;
}

bool load_machine(const std::string& path, Machine& m, std::string* why) {
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {  // an ifstream opens a folder, then fails to read
    if (why) *why = path + " is a folder, not a calibration file";
    return false;
  }
  std::ifstream f(path);
  if (!f) {
    if (why) *why = "cannot open " + path;
    return false;
  }
  std::stringstream ss;
  ss << f.rdbuf();
  try {
    m = machine_from_json(ss.str());
  } catch (const Error& e) {
    if (why) *why = path + " is not a calibration file (" + e.what() + ")";
    return false;  // unreadable: re-measure rather than trust it
  }
  m.source = path;
  return true;
}

std::string calibration_hint(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return "run `mpirun -np 2 redist calibrate --out " + path + "` first";
  // It exists and is no calibration: calibrate refuses to replace it (without
  // --force), so naming it as calibrate's --out would be no advice.
  return "give a file that `redist calibrate --out FILE` wrote, or calibrate into a new one";
}

void save_machine(const std::string& path, const Machine& m) {
  // mkdir -p of the folder
  for (size_t s = path.find('/', 1); s != std::string::npos; s = path.find('/', s + 1))
    ::mkdir(path.substr(0, s).c_str(), 0755);
  std::ofstream f(path);
  f << to_json(m);
  if (!f) detail::fail("cannot write the calibration file '", path, "'");
}

}  // namespace redist
