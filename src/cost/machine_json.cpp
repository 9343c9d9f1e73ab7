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
#include <string_view>
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
  bool is_string = false, is_array = false;
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
      key_ = k;
      m[k] = value();
      key_.clear();
      if (peek() == ',') { ++i_; continue; }
      expect('}');
      return m;
    }
  }

 private:
  const std::string& t_;
  size_t i_ = 0;
  std::string key_;  // whose value is being read
  [[noreturn]] void bad(const char* what) {
    detail::fail("calibration JSON: ", what, " at character ", i_,
                 key_.empty() ? std::string() : " (the value of key '" + key_ + "')");
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
      v.is_array = true;
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
  if (!obj.count("format") || !obj["format"].is_string || obj["format"].s != kFormat)
    detail::fail("calibration JSON: format is not ", kFormat);
  // A key's value for a message: what the file holds there.
  auto shown = [&](const char* k) -> std::string {
    if (!obj.count(k)) return "nothing (the key is missing)";
    const Value& v = obj[k];
    if (v.is_string) return quote(v.s);
    if (!v.is_array) return num(v.v[0]);
    return v.v.size() <= 4 ? array(v.v) : detail::cat("an array of ", v.v.size(), " numbers");
  };
  Machine m;
  for (auto [k, s] : {std::pair{"hostname", &m.hostname}, {"build", &m.build}, {"mpi_library", &m.mpi_library},
                      {"created", &m.created}}) {  // what was measured where: told, never computed with
    if (!obj.count(k)) continue;
    if (!obj[k].is_string) detail::fail("calibration JSON: key '", k, "' must be a string, got ", shown(k));
    *s = obj[k].s;
  }
  // The numbers of the model, each in a range no machine leaves (a hand edit or
  // a damaged file must not become a prediction: 1e300 s of startup broke the
  // columns of `redist plan --predict`), every one written by `redist calibrate`
  // and required; "fast" or a missing key was read as 0. 0 is allowed where the
  // writer writes it for "not measured": a calibration on one rank has no
  // network figures, a Machine made in code no footprints. bmemcpy_node came
  // after format 3: absent, 0 (bmemcpy is used then).
  struct Scalar {
    const char* key;
    double* to;
    double lo;
    bool lo_open;   // lo < v, else lo <= v
    double hi;      // v < hi
    bool integer;
    bool optional;  // absent: 0
    const char* allowed;
  };
  double cores = 0, ranks = 0;
  const Scalar scalars[] = {
      {"bnet", &m.bnet, 0, false, 1e15, false, false,
       "a number >= 0 and < 1e15 (bytes per second between two ranks; 0: not measured, a calibration on one rank)"},
      {"bmemcpy", &m.bmemcpy, 0, true, 1e15, false, false,
       "a number > 0 and < 1e15 (bytes per second of one core's copy)"},
      {"bmemcpy_node", &m.bmemcpy_node, 0, false, 1e15, false, true,
       "a number >= 0 and < 1e15 (bytes per second per rank, two ranks copying at once; 0: not measured)"},
      {"startup_s", &m.startup, 0, false, 3600, false, false,
       "a number >= 0 and < 3600 (seconds of a small message, one way; 0: not measured, a calibration on one rank)"},
      {"small_footprint_bytes", &m.small_footprint, 0, false, 1e15, false, false,
       "a number >= 0 and < 1e15 (bytes touched per rank; 0: not measured)"},
      {"large_footprint_bytes", &m.large_footprint, 0, false, 1e15, false, false,
       "a number >= 0 and < 1e15 (bytes touched per rank; 0: not measured)"},
      {"cores", &cores, 0, false, 2147483648.0, true, false,
       "an integer >= 0 and < 2^31 (cores of the node; 0: unknown)"},
      {"ranks", &ranks, 1, false, 2147483648.0, true, false,
       "an integer >= 1 and < 2^31 (ranks of the calibration run)"}};
  for (const Scalar& s : scalars) {
    if (s.optional && !obj.count(s.key)) continue;
    const Value* v = obj.count(s.key) ? &obj[s.key] : nullptr;
    const double x = v && !v->is_string && !v->is_array ? v->v[0] : std::nan("");  // NaN fails every test below
    if (!(s.lo_open ? x > s.lo : x >= s.lo) || !(x < s.hi) || (s.integer && x != std::floor(x)))
      detail::fail("calibration JSON: key '", s.key, "' must be ", s.allowed, ", got ", shown(s.key));
    *s.to = x;
  }
  m.cores = static_cast<int>(cores), m.ranks = static_cast<int>(ranks);
  // The curves: both keys or neither (a file from before a curve existed, or a
  // calibration on one rank, has neither), sizes ascending and > 0, times in
  // seconds (< 1 hour) or seconds per byte (< 1: slower than a byte a second).
  for (const auto& [xs, ys, cc] : curves(m)) {
    Curve& c = *cc;
    if (!obj.count(xs) && !obj.count(ys)) continue;
    const bool per_byte = std::string_view(ys).ends_with("_per_byte");
    const char* y_allowed = per_byte ? "numbers >= 0 and < 1 (seconds per byte)" : "numbers >= 0 and < 3600 (seconds)";
    for (const char* k : {xs, ys}) {
      if (obj.count(k) && obj[k].is_array) continue;
      const char* other = k == xs ? ys : xs;
      const std::string n = obj.count(other) && obj[other].is_array ? detail::cat(" (", obj[other].v.size(), ")") : "";
      detail::fail("calibration JSON: key '", k, "' must be an array of ",
                   k == xs ? "ascending numbers > 0 and < 1e15" : y_allowed, ", as many as '", other, "' has", n,
                   ", got ", shown(k));
    }
    c.x = obj[xs].v, c.y = obj[ys].v;
    if (c.x.size() != c.y.size())
      detail::fail("calibration JSON: keys '", xs, "' and '", ys, "' differ in length (", c.x.size(), " and ",
                   c.y.size(), " numbers): one of each per point of the curve");
    for (size_t i = 0; i < c.x.size(); ++i) {
      if (!(c.x[i] > 0) || !(c.x[i] < 1e15))
        detail::fail("calibration JSON: key '", xs, "' must hold numbers > 0 and < 1e15, got ", num(c.x[i]));
      if (i > 0 && !(c.x[i] > c.x[i - 1]))
        detail::fail("calibration JSON: key '", xs, "' must ascend, got ", num(c.x[i - 1]), " then ", num(c.x[i]));
      if (!(c.y[i] >= 0) || !(c.y[i] < (per_byte ? 1 : 3600)))
        detail::fail("calibration JSON: key '", ys, "' must hold ", y_allowed, ", got ", num(c.y[i]));
    }
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
