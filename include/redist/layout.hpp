// Layer `layout`: Partition x Ownership x Storage -> Layout. Pure, no MPI.
//
// A Layout says, for an N-D array of fixed-size elements spread over ranks:
//   - where the tile boundaries are (one DimPartition per dimension),
//   - which rank owns each tile (Ownership),
//   - where a rank keeps the bytes of its tiles (Storage).
// Layouts are values: they compare, hash, and print as spec strings (docs/spec.md).
//
// Construction never throws for bad values (a tile size of 0, a grid larger
// than the communicator): such layouts are reported by check() and by
// make_plan()'s collective validation, so every rank gets the same error.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "redist/geometry.hpp"

namespace redist {

// ---------------------------------------------------------------- partition
// Tile boundaries along one dimension.
//  regular(extent, tile, offset): tile 0 covers [0, tile - offset), tile t >= 1
//    covers [t*tile - offset, (t+1)*tile - offset), the last one clipped at the
//    extent (ScaLAPACK's first-block offset is `offset`, 0 <= offset < tile);
//  irregular(bounds): explicit boundaries 0 = b0 < b1 < ... < bn = extent.
class DimPartition {
 public:
  DimPartition() = default;
  static DimPartition regular(index_t extent, index_t tile, index_t offset = 0);
  static DimPartition irregular(std::vector<index_t> bounds);

  bool is_regular() const { return !bounds_; }
  index_t extent() const { return extent_; }
  index_t tile() const { return tile_; }      // regular only
  index_t offset() const { return offset_; }  // regular only
  const std::vector<index_t>& bounds() const { return *bounds_; }  // irregular only

  index_t ntiles() const;
  // Tile containing global index i (0 <= i < extent).
  index_t tile_of(index_t i) const;
  index_t tile_lo(index_t t) const;
  index_t tile_size(index_t t) const;
  Interval tile_interval(index_t t) const { return {tile_lo(t), tile_size(t)}; }

  // Empty string when valid, else what is wrong (dimension d names it).
  std::string check(int d) const;
  bool operator==(const DimPartition& o) const;

 private:
  index_t extent_ = 0, tile_ = 1, offset_ = 0;
  std::shared_ptr<const std::vector<index_t>> bounds_;
};

// ---------------------------------------------------------------- ownership
enum class GridOrder { row, col };  // row: last grid dimension varies fastest (BLACS "R")

struct BlockCyclicParams {
  Coord grid{};                      // processes per dimension
  GridOrder order = GridOrder::row;  // how grid coordinates map to ranks
  Coord source{};                    // grid coordinate owning tile 0 (default 0)
  Coord super{};                     // k-cyclic super-tile factors SMB/SNB (default 1)
  int first_rank = 0;                // rank of grid coordinate 0 (process groups)
  // The rank at each grid coordinate, coordinates in column-major order (dimension 0
  // fastest, as BLACS's Cblacs_gridmap usermap): ranks placed in any order. Null:
  // `order` and `first_rank` place them. Ranks not in the map own nothing.
  std::shared_ptr<const std::vector<int>> map = {};
};

struct RandomParams {
  std::uint64_t seed = 0;
  int ranks = 1;  // owners are drawn from [first_rank, first_rank + ranks)
  int first_rank = 0;
};

// User callable: tile multi-index -> owning rank.
using OwnerFunction = std::function<int(const Coord& tile)>;

class Ownership;
class Layout;
namespace detail {
struct PlacementCache;  // the derived owner table, computed once on first use (placement.cpp)
}

struct BandParams {
  index_t width = 0;                    // |t0 - t1| <= width is "near" the diagonal
  std::shared_ptr<const Ownership> near{};  // distribution of tiles in the band
  std::shared_ptr<const Ownership> far{};   // distribution of the others
};

struct TableParams {
  std::shared_ptr<const std::vector<int>> owners{};  // per tile, column-major tile order
};

struct FunctionParams {
  std::string name{};  // identifies the function in specs and hashes
  int ranks = 1;     // owners must lie in [0, ranks)
  OwnerFunction fn{};
};

// Placement of an imposed patch grid over a source layout (paper 003): the
// layout's own tiles are the patches, the ownership says which rank gets each.
//  greedy:   a patch goes to the rank holding its largest part (ties: the lowest
//            rank); a fully contained patch stays where it is. Moves the least data.
//  balanced: every rank gets floor(n/R) or ceil(n/R) of the n patches (R = the
//            ranks of the source ownership), and among such assignments one that
//            moves the least data (a min-cost flow, placement.cpp).
enum class PlacementRule { greedy, balanced };

struct PlacementParams {
  PlacementRule rule = PlacementRule::greedy;
  std::shared_ptr<const Layout> of{};  // the source layout the patches are cut from (same shape)
  // Patch boundaries and owners: Layout's constructor attaches the patch grid, the
  // owners are computed on the first owner() call and shared by copies.
  std::shared_ptr<detail::PlacementCache> cache{};
};

class Ownership {
 public:
  enum class Kind { block_cyclic, random, band, table, function, placement };

  Ownership();  // block_cyclic on a single process
  static Ownership block_cyclic(BlockCyclicParams p);
  static Ownership random(RandomParams p);
  static Ownership band(index_t width, Ownership near, Ownership far);
  static Ownership table(std::vector<int> owners);
  static Ownership function(std::string name, int ranks, OwnerFunction fn);
  // `rule` placement of the layout's tiles (patches) over the source layout `of`.
  static Ownership placement(PlacementRule rule, Layout of);

  Kind kind() const { return static_cast<Kind>(v_.index()); }
  // True when owner(t) = linearize(c_0(t_0), ..., c_{n-1}(t_{n-1})): block_cyclic.
  bool per_dimension() const { return kind() == Kind::block_cyclic; }
  const BlockCyclicParams& bc() const { return std::get<BlockCyclicParams>(v_); }
  const RandomParams& rnd() const { return std::get<RandomParams>(v_); }
  const BandParams& bnd() const { return std::get<BandParams>(v_); }
  const TableParams& tbl() const { return std::get<TableParams>(v_); }
  const FunctionParams& fun() const { return std::get<FunctionParams>(v_); }
  const PlacementParams& plc() const { return std::get<PlacementParams>(v_); }

  // Owner of tile `tile` in a tile grid of extent `ntiles`.
  int owner(const Coord& tile, const Coord& ntiles) const;
  // One more than the largest rank this ownership can name (for validation).
  int ranks_needed() const;

  // block_cyclic only: grid coordinate of `rank` (false when the rank is outside the grid).
  bool grid_coord(int rank, Coord& out) const;
  // block_cyclic only: the rank at grid coordinate `c` (the inverse of grid_coord).
  int rank_at(const Coord& c) const;
  // block_cyclic only: grid coordinate along d owning tile index t.
  index_t coord_of_tile(int d, index_t t) const;

  std::string check(int ndim, const Coord& ntiles) const;
  bool operator==(const Ownership& o) const;

 private:
  std::variant<BlockCyclicParams, RandomParams, BandParams, TableParams, FunctionParams, PlacementParams> v_;
  friend class Layout;
};

// Functions that spec strings can name as `function name=NAME ranks=R`.
void register_owner_function(const std::string& name, OwnerFunction fn);
OwnerFunction find_owner_function(const std::string& name);  // empty if unknown

// ---------------------------------------------------------------- storage
enum class StorageKind {
  tile,          // a rank's tiles in one buffer, tile after tile in column-major tile
                 // order, each tile contiguous and column-major inside (PLASMA/DPLASMA)
  local_array,   // ScaLAPACK/HPF: one column-major local array, leading dimension ld
  tile_pointers  // one user pointer per local tile (same order as `tile`)
};

struct Storage {
  StorageKind kind = StorageKind::tile;
  index_t ld = 0;  // local_array: leading dimension; 0 means max(1, local rows)
  bool operator==(const Storage& o) const = default;
};

// Where an element run lives in a rank's storage: block (0 for one-buffer storages,
// the local tile ordinal for tile_pointers), element offset in the block, and the
// element stride of each dimension (stride of dimension 0 is always 1).
struct Address {
  index_t block = 0;
  index_t offset = 0;
  Coord strides;
};

class Layout {
 public:
  Layout() = default;
  Layout(Coord shape, std::vector<DimPartition> partition, Ownership ownership,
         Storage storage = {}, index_t elem_size = 8);
  // Parses a spec string (grammar: docs/spec.md); throws redist::Error on a syntax error.
  static Layout parse(std::string_view spec);

  int ndim() const { return shape_.ndim(); }
  const Coord& shape() const { return shape_; }
  const DimPartition& partition(int d) const { return partition_[d]; }
  const std::vector<DimPartition>& partitions() const { return partition_; }
  const Ownership& ownership() const { return ownership_; }
  const Storage& storage() const { return storage_; }
  index_t elem_size() const { return elem_size_; }

  Coord ntiles() const;
  Box tile_box(const Coord& tile) const;
  int owner(const Coord& tile) const { return ownership_.owner(tile, ntiles()); }

  // Canonical spec string; Layout::parse(l.spec()) == l.
  std::string spec() const;
  // Stable across ranks and runs (used to check that ranks agree).
  std::uint64_t hash() const;
  // Empty when the layout is valid for a communicator of `comm_size` ranks, else
  // a message naming the bad values and what is allowed.
  std::string check(int comm_size) const;

  bool operator==(const Layout& o) const;

 private:
  Coord shape_;
  std::vector<DimPartition> partition_;
  Ownership ownership_;
  Storage storage_;
  index_t elem_size_ = 8;
};

// What a placement ownership does (Layout::ownership() of kind placement): the
// figures paper 003 compares. Throws redist::Error for other layouts or invalid ones.
struct PlacementSummary {
  index_t patches = 0;          // tiles of the layout
  index_t shared_patches = 0;   // patches whose elements lie on more than one source rank
  index_t total_elements = 0;   // elements of the array
  index_t moved_elements = 0;   // elements whose rank changes (source -> placement)
  std::vector<index_t> load;           // patches per rank, for ranks [0, R)
  std::vector<index_t> load_elements;  // elements per rank after the move
};
PlacementSummary placement_summary(const Layout& layout);

// A rank's local storage map (built once per layout and rank).
class LocalIndex {
 public:
  // Throws redist::Error when the layout is invalid (Layout::check), when an
  // owner function throws or names a rank outside [0, ranks), when ld is below
  // this rank's local rows, or when this rank's storage overflows 64-bit bytes.
  LocalIndex(const Layout& layout, int rank);

  // Tiles this rank owns, in storage order.
  index_t ntiles() const;
  Coord tile(index_t ordinal) const;
  // Ordinal of an owned tile (precondition: the rank owns it).
  index_t ordinal(const Coord& tile) const;
  // Address of global element `g` inside owned tile `tile`.
  Address address(const Coord& tile, const Coord& g) const;
  // Elements in block b (for tile_pointers: the tile's volume; else the whole buffer).
  index_t block_elements(index_t b) const;
  index_t nblocks() const;
  // Elements of the whole local storage (local_array: ld * other local extents).
  index_t elements() const { return elements_; }
  // local_array only: local extent per dimension.
  const Coord& local_extent() const { return local_extent_; }
  // Per-dimension ownerships only: along dimension d this rank owns
  // owned_count(d) tiles; local tile l (ascending global order) is global tile
  // owned_tile(d, l) and starts at local index tile_prefix(d, l); owned_before(d, t)
  // counts owned tiles with global index < t. Closed form for regular partitions:
  // O(1) memory and time whatever the number of tiles.
  bool per_dimension() const { return per_dim_; }
  index_t owned_count(int d) const { return dims_[d].count; }
  index_t owned_tile(int d, index_t l) const;
  index_t owned_before(int d, index_t t) const;
  index_t tile_prefix(int d, index_t l) const;
  // Local tile index along d of owned global tile t.
  index_t local_tile_index(int d, index_t t) const;
  // Per-dimension ownerships only: address of the element at offset w[d] inside
  // local tile lt[d] along each dimension.
  Address local_address(const Coord& lt, const Coord& w) const;
  // Leading dimension actually used (local_array).
  index_t ld() const { return ld_; }
  // General ownerships: a hash of the owner of every tile, in column-major tile
  // order (0 for per-dimension ones). Ranks compare it to catch an owner function
  // that answers differently on different ranks.
  std::uint64_t owners_hash() const { return owners_hash_; }

 private:
  Layout layout_;  // a copy: layouts are small values, so no lifetime to manage
  int rank_;
  bool per_dim_ = false;
  // per-dimension ownership, one per dimension: the grid extent G, super-tile
  // factor k, first owned super-tile s0, owned tiles, and the prefix sums of their
  // sizes (stored for irregular partitions only; regular ones are closed form).
  struct DimMap {
    index_t G = 1, k = 1, s0 = 0, count = 0, nt = 0;
    bool owns_first = false;     // owns global tile 0 (regular: of size tile - offset)
    index_t tile = 0, offset = 0;  // regular partitions
    std::vector<index_t> prefix;   // irregular partitions: count + 1 entries
  };
  std::vector<DimMap> dims_;
  Coord local_extent_;   // total owned extent per dimension
  // general ownership: owned tiles as linear indices (sorted) and element offsets
  std::vector<index_t> linear_, tile_offset_;
  index_t elements_ = 0;
  index_t ld_ = 0;
  std::uint64_t owners_hash_ = 0;

  index_t per_dim_tile_offset(const Coord& lt) const;
};

// LocalIndex(layout, rank), its error prefixed "<side> layout: " (side: "source"
// or "target") so that a message says which of two layouts it is about.
LocalIndex local_index(const Layout& layout, int rank, const char* side);

// Convenience: regular tiles on a block-cyclic grid, e.g.
// block_cyclic_layout({8000, 8000}, {400, 400}, {2, 2}).
Layout block_cyclic_layout(Coord shape, Coord tile, Coord grid, index_t elem_size = 8,
                           StorageKind storage = StorageKind::tile);

}  // namespace redist
