// Layout spec strings (docs/spec.md): the one-line grammar and its parser
// (the printer, Layout::spec, is in spec_print.cpp).
//
// The parser checks syntax only. Values that are merely wrong (a tile size of 0,
// a grid larger than the communicator, boundaries that miss the extent) still
// build a Layout: Layout::check reports them during make_plan's collective
// validation, so every rank gets the same error (layout.hpp).
#include <algorithm>
#include <cctype>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "redist/layout.hpp"

namespace redist {
namespace {

using detail::cat;

constexpr std::string_view kKinds[] = {"block_cyclic", "random", "band", "table", "function", "greedy", "balanced"};
constexpr std::string_view kLayoutKeys[] = {"tile", "offset", "esize", "storage", "ld"};
constexpr const char* kKindList = "block_cyclic, random, band, table, function, greedy, balanced";
constexpr const char* kLayoutKeyList = "tile=, offset=, esize=, storage=, ld=";

// Ownership options: the value each takes and the ownerships it belongs to.
// Every key has one value type whatever its ownership, so a value can be read
// before its placement is checked.
enum class Val { coord, int64, int32, uint64, order, nested, owner_list, name, layout };
struct OwnKey {
  std::string_view key;
  Val val;
  std::string_view kinds;  // space-separated
};
constexpr OwnKey kOwnKeys[] = {
    {"grid", Val::coord, "block_cyclic"},        {"order", Val::order, "block_cyclic"},
    {"src", Val::coord, "block_cyclic"},         {"super", Val::coord, "block_cyclic"},
    {"first", Val::int32, "block_cyclic random"}, {"seed", Val::uint64, "random"},
    {"ranks", Val::int32, "random function"},     {"width", Val::int64, "band"},
    {"near", Val::nested, "band"},               {"far", Val::nested, "band"},
    {"owners", Val::owner_list, "table"},        {"name", Val::name, "function"},
    {"map", Val::owner_list, "block_cyclic"},    {"of", Val::layout, "greedy balanced"},
};

bool in_words(std::string_view list, std::string_view w) {
  for (size_t i = 0; i <= list.size();) {
    size_t j = list.find(' ', i);
    if (j == std::string_view::npos) j = list.size();
    if (list.substr(i, j - i) == w) return true;
    i = j + 1;
  }
  return false;
}

// "greedy balanced" -> "greedy or balanced"; "a b c" -> "a, b or c".
std::string words_or(std::string_view list) {
  std::string s;
  for (size_t i = 0; i < list.size();) {
    const size_t j = std::min(list.find(' ', i), list.size());
    s += cat(i == 0 ? "" : j == list.size() ? " or " : ", ", list.substr(i, j - i));
    i = j + 1;
  }
  return s;
}

template <class Range>
bool contains(const Range& r, std::string_view w) {
  for (std::string_view x : r)
    if (x == w) return true;
  return false;
}

const OwnKey* find_own_key(std::string_view w) {
  for (const OwnKey& k : kOwnKeys)
    if (k.key == w) return &k;
  return nullptr;
}

// "grid=, order=, ..." for one ownership kind.
std::string options_of(std::string_view kind) {
  std::string s;
  for (const OwnKey& k : kOwnKeys)
    if (in_words(k.kinds, kind)) s += cat(s.empty() ? "" : ", ", k.key, "=");
  return s.empty() ? "none" : s;
}

// An ownership being parsed: its keyword and the options seen so far.
struct Draft {
  std::string kind;  // empty until the keyword
  size_t at = 0;     // position of the keyword
  std::map<std::string, size_t, std::less<>> seen;
  BlockCyclicParams bc;
  RandomParams rnd;
  index_t width = 0;
  std::optional<Ownership> near, far;
  std::vector<int> owners;
  std::string name;
  int ranks = 1;
  OwnerFunction fn;
  std::optional<Layout> of;  // greedy, balanced: the source layout
};

// A parsed ownership option value (which member is set depends on Val).
struct Value {
  size_t at = 0;
  std::vector<index_t> ints;
  std::uint64_t u = 0;
  std::string text;
  std::optional<Ownership> own;
  std::optional<Layout> layout;
};

struct TileItem {
  bool irregular = false;
  index_t size = 0;
  std::vector<index_t> bounds;
};

class Parser {
 public:
  explicit Parser(std::string_view s) : s_(s), end_(s.size()) { check_nesting(); }  // the whole spec, once
  // The spec s[begin, end) inside a larger one (of=(...)): columns count from s's start.
  Parser(std::string_view s, size_t begin, size_t end) : s_(s), end_(end), pos_(begin) {}
  Layout parse();

 private:
  std::string_view s_;
  size_t end_;
  size_t pos_ = 0;
  Coord shape_;

  static bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
  static bool is_digit(char c) { return c >= '0' && c <= '9'; }
  bool at_end() const { return pos_ >= end_; }
  char peek() const { return at_end() ? '\0' : s_[pos_]; }
  bool accept(char c) { return peek() == c ? (++pos_, true) : false; }
  void skip_space() {
    while (!at_end() && is_space(peek())) ++pos_;
  }
  std::string word() {
    const size_t at = pos_;
    while (!at_end() && (std::isalnum(static_cast<unsigned char>(peek())) || peek() == '_')) ++pos_;
    return std::string(s_.substr(at, pos_ - at));
  }
  // What the text at `at` looks like, for "got ..." in messages.
  std::string got(size_t at) const {
    if (at >= end_) return end_ < s_.size() ? "')'" : "the end of the spec";
    if (is_space(s_[at])) return "a space";
    size_t e = at + 1;
    while (e < s_.size() && !is_space(s_[e]) && s_[e] != ')') ++e;
    return cat("'", s_.substr(at, e - at), "'");
  }
  std::string got() const { return got(pos_); }
  // The text of the current token so far, for "after '...'" in messages.
  std::string after(size_t token_at) const { return cat("after '", s_.substr(token_at, pos_ - token_at), "'"); }

  [[noreturn]] void error(size_t at, const std::string& what) const;
  // Refuses parentheses nested deeper than kMaxNesting (the parser recurses once
  // per level: thousands of levels overflowed the stack).
  void check_nesting() const {
    constexpr int kMaxNesting = 64;
    int depth = 0;
    for (size_t i = pos_; i < end_; ++i) {
      if (s_[i] == ')') --depth;
      if (s_[i] == '(' && ++depth > kMaxNesting)
        error(i, cat("parentheses nested more than ", kMaxNesting, " deep (of=, near=, far=): at most ", kMaxNesting));
    }
  }
  index_t integer(size_t token_at);
  std::uint64_t unsigned_integer(size_t token_at);
  int int32(size_t token_at);
  std::vector<index_t> coord_items(size_t token_at, std::string_view key);
  void expect_items(size_t n, size_t value_at, std::string_view key) const;
  void end_of_token(size_t token_at, bool items);
  void expect_eq(std::string_view w);

  void start_ownership(Draft& d, const std::string& kind, size_t at);
  void ownership_option(Draft& d, const OwnKey& k, size_t key_at);
  [[noreturn]] void unknown(size_t at, const std::string& w, const Draft& d, bool nested) const;
  Ownership nested(size_t key_at);
  Layout nested_layout(size_t key_at);
  Ownership finish(const Draft& d) const;
  void once(std::map<std::string, size_t, std::less<>>& seen, const std::string& key, size_t at) const;
};

void Parser::error(size_t at, const std::string& what) const {
  // Echo the spec on one line and put a caret under column `at` (tabs kept so
  // the caret lines up in a terminal).
  std::string line(s_), caret;
  for (char& c : line)
    if (c == '\n' || c == '\r') c = ' ';
  for (size_t i = 0; i < at && i < s_.size(); ++i) caret += s_[i] == '\t' ? '\t' : ' ';
  throw Error(cat("bad layout spec at column ", at + 1, ": ", what, "\n  ", line, "\n  ", caret, "^"));
}

// A signed decimal 64-bit integer; overflow is an error (never wraps).
index_t Parser::integer(size_t token_at) {
  const size_t at = pos_;
  const bool neg = accept('-');
  if (!is_digit(peek())) {
    pos_ = at;
    error(at, cat("expected an integer ", after(token_at), ", got ", got()));
  }
  const std::uint64_t limit = neg ? std::uint64_t{1} << 63 : (std::uint64_t{1} << 63) - 1;
  std::uint64_t mag = 0;
  bool overflow = false;
  for (; is_digit(peek()); ++pos_) {
    const unsigned digit = static_cast<unsigned>(peek() - '0');
    if (mag > (limit - digit) / 10) overflow = true;
    else mag = mag * 10 + digit;
  }
  if (overflow)
    error(at, cat("integer ", s_.substr(at, pos_ - at), " does not fit in 64 bits (range ",
                  std::numeric_limits<index_t>::min(), " to ", std::numeric_limits<index_t>::max(), ")"));
  return neg ? static_cast<index_t>(0 - mag) : static_cast<index_t>(mag);  // 0 - mag: INT64_MIN too
}

std::uint64_t Parser::unsigned_integer(size_t token_at) {
  const size_t at = pos_;
  if (!is_digit(peek())) error(at, cat("expected an unsigned integer ", after(token_at), ", got ", got()));
  std::uint64_t v = 0;
  bool overflow = false;
  for (; is_digit(peek()); ++pos_) {
    const unsigned digit = static_cast<unsigned>(peek() - '0');
    if (v > (std::numeric_limits<std::uint64_t>::max() - digit) / 10) overflow = true;
    else v = v * 10 + digit;
  }
  if (overflow)
    error(at, cat("integer ", s_.substr(at, pos_ - at), " does not fit in 64 bits (range 0 to ",
                  std::numeric_limits<std::uint64_t>::max(), ")"));
  return v;
}

// Ranks are ints in the API: a value outside int cannot be represented at all.
int Parser::int32(size_t token_at) {
  const size_t at = pos_;
  const index_t v = integer(token_at);
  if (v < std::numeric_limits<int>::min() || v > std::numeric_limits<int>::max())
    error(at, cat("integer ", v, " does not fit in a 32-bit int (range ", std::numeric_limits<int>::min(),
                  " to ", std::numeric_limits<int>::max(), ")"));
  return static_cast<int>(v);
}

std::vector<index_t> Parser::coord_items(size_t token_at, std::string_view key) {
  const size_t value_at = pos_;
  std::vector<index_t> v;
  do v.push_back(integer(token_at));
  while (accept('x'));
  expect_items(v.size(), value_at, key);
  return v;
}

void Parser::expect_items(size_t n, size_t value_at, std::string_view key) const {
  const size_t want = static_cast<size_t>(shape_.ndim());
  if (n != want)
    error(value_at, cat("expected ", want, want == 1 ? " item" : " items", " (one per dimension of the shape ",
                        shape_.str(), ") after '", key, "=', got ", n));
}

// A value ends at a space, the end, or a ')' (closing a nested ownership; a
// stray one is reported by the caller).
void Parser::end_of_token(size_t token_at, bool items) {
  if (at_end() || is_space(peek()) || peek() == ')') return;
  error(pos_, cat("expected ", items ? "'x', " : "", "a space or the end ", after(token_at), ", got ", got()));
}

void Parser::expect_eq(std::string_view w) {
  if (!accept('=')) error(pos_, cat("expected '=' after '", w, "', got ", got()));
}

void Parser::once(std::map<std::string, size_t, std::less<>>& seen, const std::string& key, size_t at) const {
  auto [it, inserted] = seen.emplace(key, at);
  if (!inserted)
    error(at, cat("duplicate '", key, "=' (already given at column ", it->second + 1,
                  "); each option may appear once"));
}

void Parser::unknown(size_t at, const std::string& w, const Draft& d, bool nested) const {
  std::string expected = nested ? "" : cat("a layout option (", kLayoutKeyList, ") or ");
  expected += d.kind.empty() ? cat("an ownership (", kKindList, ")")
                             : cat("an option of ", d.kind, " (", options_of(d.kind), ")");
  if (w.empty()) error(at, cat("expected ", expected, ", got ", got(at)));
  error(at, cat("unknown keyword '", w, "'; expected ", expected));
}

void Parser::start_ownership(Draft& d, const std::string& kind, size_t at) {
  if (!d.kind.empty())
    error(at, cat("a layout has one ownership, but '", kind, "' follows '", d.kind, "' (column ", d.at + 1, ")"));
  d.kind = kind;
  d.at = at;
  end_of_token(at, false);
}

// Reads `key=`'s value, then checks that the key belongs to the current ownership
// (value first, so a bad value is reported as such wherever it stands).
void Parser::ownership_option(Draft& d, const OwnKey& k, size_t key_at) {
  const std::string key(k.key);
  if (!d.kind.empty()) once(d.seen, key, key_at);
  Value v;
  v.at = pos_;
  switch (k.val) {
    case Val::coord: v.ints = coord_items(key_at, k.key); break;
    case Val::int64: v.ints = {integer(key_at)}; break;
    case Val::int32: v.ints = {int32(key_at)}; break;
    case Val::uint64: v.u = unsigned_integer(key_at); break;
    case Val::order:
      v.text = word();
      if (v.text != "row" && v.text != "col")
        error(v.at, cat("expected row or col after 'order=', got ", got(v.at)));
      break;
    case Val::nested: v.own = nested(key_at); break;
    case Val::layout: v.layout = nested_layout(key_at); break;
    case Val::owner_list:
      do v.ints.push_back(int32(key_at));
      while (accept(','));
      break;
    case Val::name:
      while (!at_end() && !is_space(peek()) && peek() != '(' && peek() != ')') ++pos_;
      v.text = std::string(s_.substr(v.at, pos_ - v.at));
      if (v.text.empty()) error(v.at, cat("expected a function name after 'name=', got ", got()));
      break;
  }
  end_of_token(key_at, k.val == Val::coord);

  if (d.kind.empty())  // the example with the first ownership it belongs to
    error(key_at, cat("'", key, "=' is an option of ", words_or(k.kinds),
                      " and must come after its ownership keyword (e.g. '", k.kinds.substr(0, k.kinds.find(' ')), " ",
                      key, "=...')"));
  if (!in_words(k.kinds, d.kind))
    error(key_at, cat("'", key, "=' is not an option of ", d.kind, " (its options: ", options_of(d.kind), ")"));
  auto coord = [](const std::vector<index_t>& x) {
    Coord c(static_cast<int>(x.size()));
    for (int i = 0; i < c.ndim(); ++i) c[i] = x[i];
    return c;
  };
  const bool bc = d.kind == "block_cyclic";
  if (key == "grid") d.bc.grid = coord(v.ints);
  else if (key == "src") d.bc.source = coord(v.ints);
  else if (key == "super") d.bc.super = coord(v.ints);
  else if (key == "order") d.bc.order = v.text == "row" ? GridOrder::row : GridOrder::col;
  else if (key == "first") (bc ? d.bc.first_rank : d.rnd.first_rank) = static_cast<int>(v.ints[0]);
  else if (key == "seed") d.rnd.seed = v.u;
  else if (key == "ranks") (d.kind == "random" ? d.rnd.ranks : d.ranks) = static_cast<int>(v.ints[0]);
  else if (key == "width") d.width = v.ints[0];
  else if (key == "near") d.near = std::move(v.own);
  else if (key == "far") d.far = std::move(v.own);
  else if (key == "owners") d.owners.assign(v.ints.begin(), v.ints.end());
  else if (key == "map") d.bc.map = std::make_shared<const std::vector<int>>(v.ints.begin(), v.ints.end());
  else if (key == "of") d.of = std::move(v.layout);
  else if (key == "name") {
    d.name = v.text;
    d.fn = find_owner_function(v.text);
    if (!d.fn)
      error(v.at, cat("unknown owner function '", v.text,
                      "': it must be registered with register_owner_function before the spec is parsed"));
  }
}

// `( OWNERSHIP )` after near= or far=.
Ownership Parser::nested(size_t key_at) {
  if (!accept('('))
    error(pos_, cat("expected '(' ", after(key_at), " (e.g. near=(block_cyclic grid=2x2)), got ", got()));
  const size_t open = pos_ - 1;
  skip_space();
  Draft d;
  const size_t at = pos_;
  const std::string kind = word();
  if (!contains(kKinds, kind))
    error(at, cat("expected an ownership (", kKindList, ") after '(', got ", got(at)));
  if (kind == "greedy" || kind == "balanced")
    error(at, cat("'", kind, "' places the layout's own tiles; it cannot be nested inside near=( ) or far=( )"));
  start_ownership(d, kind, at);
  for (;;) {
    skip_space();
    if (at_end()) error(pos_, cat("expected ')' to close the '(' at column ", open + 1, ", got the end of the spec"));
    if (accept(')')) break;
    const size_t kat = pos_;
    const std::string w = word();
    if (contains(kKinds, w)) start_ownership(d, w, kat);  // always an error here
    if (contains(kLayoutKeys, w))
      error(kat, cat("'", w, "=' is a layout option; it cannot appear inside a nested ownership ( )"));
    const OwnKey* k = find_own_key(w);
    if (!k) unknown(kat, w, d, true);
    expect_eq(w);
    ownership_option(d, *k, kat);
  }
  return finish(d);
}

// `( LAYOUT SPEC )` after of=: a whole spec, parsed in place up to the matching ')'.
Layout Parser::nested_layout(size_t key_at) {
  if (!accept('('))
    error(pos_, cat("expected '(' ", after(key_at), " (e.g. of=(64x64 tile=32x32 block_cyclic grid=2x2)), got ",
                    got()));
  const size_t open = pos_ - 1;
  size_t close = pos_;
  for (int depth = 1; close < end_; ++close) {
    if (s_[close] == '(') ++depth;
    if (s_[close] == ')' && --depth == 0) break;
  }
  if (close >= end_)
    error(end_, cat("expected ')' to close the '(' at column ", open + 1, ", got the end of the spec"));
  Layout l = Parser(s_, pos_, close).parse();
  pos_ = close + 1;
  return l;
}

Ownership Parser::finish(const Draft& d) const {
  if (d.kind.empty()) return Ownership();
  if (d.kind == "block_cyclic") return Ownership::block_cyclic(d.bc);
  if (d.kind == "random") return Ownership::random(d.rnd);
  if (d.kind == "table") return Ownership::table(d.owners);
  if (d.kind == "greedy" || d.kind == "balanced") {
    if (!d.of) error(d.at, cat("'", d.kind, "' needs of=(SOURCE LAYOUT SPEC), the layout the patches are cut from"));
    return Ownership::placement(d.kind == "greedy" ? PlacementRule::greedy : PlacementRule::balanced, *d.of);
  }
  if (d.kind == "function") {
    if (d.name.empty()) error(d.at, "'function' needs name=NAME (a function registered with register_owner_function)");
    return Ownership::function(d.name, d.ranks, d.fn);
  }
  if (!d.near || !d.far)
    error(d.at, cat("'band' needs near=(OWNERSHIP) and far=(OWNERSHIP); ", d.near ? "far=" : "near=", " is missing"));
  return Ownership::band(d.width, *d.near, *d.far);
}

Layout Parser::parse() {
  skip_space();
  const size_t shape_at = pos_;
  const bool negative = peek() == '-' && pos_ + 1 < end_ && is_digit(s_[pos_ + 1]);
  if (!is_digit(peek()) && !negative)
    error(pos_, cat(at_end() ? "the spec is empty; " : "", "expected the shape (extents joined by 'x', e.g. 8000x8000), got ",
                    got()));
  std::vector<index_t> ext;
  do ext.push_back(integer(shape_at));
  while (accept('x'));
  if (ext.size() > static_cast<size_t>(kMaxDims))
    error(shape_at, cat("the shape has ", ext.size(), " dimensions; at most ", kMaxDims, " are supported"));
  end_of_token(shape_at, true);
  shape_ = Coord(static_cast<int>(ext.size()));
  for (int i = 0; i < shape_.ndim(); ++i) shape_[i] = ext[i];

  std::map<std::string, size_t, std::less<>> seen;
  Draft own;
  std::vector<TileItem> tile;
  std::vector<index_t> offset;
  std::vector<size_t> offset_at;  // position of each offset item
  index_t esize = 8;
  Storage storage;
  for (;;) {
    skip_space();
    if (at_end()) break;
    if (peek() == ')') error(pos_, "unbalanced ')': there is no '(' to close");
    const size_t at = pos_;
    const std::string w = word();
    if (contains(kKinds, w)) {
      start_ownership(own, w, at);
      continue;
    }
    const OwnKey* k = find_own_key(w);
    if (!k && !contains(kLayoutKeys, w)) unknown(at, w, own, false);
    expect_eq(w);
    if (k) {
      ownership_option(own, *k, at);
      continue;
    }
    once(seen, w, at);
    const size_t value_at = pos_;
    if (w == "tile") {
      do {
        TileItem t;
        if (accept('[')) {  // explicit boundaries [b0,b1,...]; [] is an empty list
          t.irregular = true;
          if (!accept(']')) {
            do t.bounds.push_back(integer(at));
            while (accept(','));
            if (!accept(']')) error(pos_, cat("expected ',' or ']' ", after(at), ", got ", got()));
          }
        } else {
          t.size = integer(at);
        }
        tile.push_back(std::move(t));
      } while (accept('x'));
      expect_items(tile.size(), value_at, w);
      end_of_token(at, true);
    } else if (w == "offset") {
      do {
        offset_at.push_back(pos_);
        offset.push_back(integer(at));
      } while (accept('x'));
      expect_items(offset.size(), value_at, w);
      end_of_token(at, true);
    } else if (w == "storage") {
      const std::string v = word();
      if (v == "tile") storage.kind = StorageKind::tile;
      else if (v == "local_array") storage.kind = StorageKind::local_array;
      else if (v == "tile_pointers") storage.kind = StorageKind::tile_pointers;
      else error(value_at, cat("expected tile, local_array or tile_pointers after 'storage=', got ", got(value_at)));
      end_of_token(at, false);
    } else {
      (w == "esize" ? esize : storage.ld) = integer(at);
      end_of_token(at, false);
    }
  }

  std::vector<DimPartition> parts;
  for (int d = 0; d < shape_.ndim(); ++d) {
    const index_t off = offset.empty() ? 0 : offset[d];
    if (!tile.empty() && tile[d].irregular) {
      // DimPartition::irregular has no offset: a non-zero one cannot be kept.
      if (off != 0)
        error(offset_at[d], cat("offset applies to regular tiles only; dimension ", d,
                                " has explicit boundaries, so its offset must be 0"));
      parts.push_back(DimPartition::irregular(tile[d].bounds));
    } else {
      const index_t t = !tile.empty() ? tile[d].size : shape_[d] == 0 ? 1 : shape_[d];
      parts.push_back(DimPartition::regular(shape_[d], t, off));
    }
  }
  return Layout(shape_, std::move(parts), finish(own), storage, esize);
}

}  // namespace

Layout Layout::parse(std::string_view spec) { return Parser(spec).parse(); }

}  // namespace redist
