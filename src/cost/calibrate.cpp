// Calibration: the machine figures of the model, measured between ranks 0 and 1
// (paper 000 sec. 7.2 needs Bnet and Bmemcpy; paper 002 Eq. 1 the per-message
// t_m and per-byte t_w). Every figure is a median of repetitions after a warm-up,
// so first touch of fresh pages (1 GB/s class here) never enters it.
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <ctime>
#include <map>
#include <mutex>
#include <thread>

#include "kernels/copy.hpp"
#include "mpi/agree.hpp"
#include "redist/cost.hpp"

namespace redist {

using detail::check_mpi;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// Ping-pong of one message (MPI type `t`, count 1) between ranks 0 and 1:
// median one-way time. Other ranks do nothing.
double pingpong(MPI_Comm comm, int rank, void* buf, MPI_Datatype t, int reps) {
  std::vector<double> v;
  for (int i = -1; i < reps; ++i) {  // i = -1: warm-up
    const double t0 = MPI_Wtime();
    if (rank == 0) {
      check_mpi(MPI_Send(buf, 1, t, 1, 0, comm), "MPI_Send", comm);
      check_mpi(MPI_Recv(buf, 1, t, 1, 0, comm, MPI_STATUS_IGNORE), "MPI_Recv", comm, "receive from", 1);
    } else {
      check_mpi(MPI_Recv(buf, 1, t, 0, 0, comm, MPI_STATUS_IGNORE), "MPI_Recv", comm, "receive from", 0);
      check_mpi(MPI_Send(buf, 1, t, 0, 0, comm), "MPI_Send", comm);
    }
    if (i >= 0) v.push_back((MPI_Wtime() - t0) / 2);
  }
  return median(v);
}

// Rows in the measurements are `row` bytes every 2 * row bytes. (Rows aligned to
// cache lines with a one-line gap predicted the cases of docs/strategies.md worse.)
size_t stride(size_t row) { return 2 * row; }

// Strided rows of `row` bytes of `src` gathered into `dst`: what pack does, with
// the strategies' copy kernel (streaming stores for a phase this large, as they do).
void copy_rows(std::vector<char>& src, std::vector<char>& dst, size_t row, size_t bytes) {
  const bool stream = detail::stream_for(static_cast<index_t>(bytes));
  auto* to = reinterpret_cast<std::byte*>(dst.data());
  const auto* from = reinterpret_cast<const std::byte*>(src.data());
  detail::copy_rows(to, static_cast<index_t>(row), from, static_cast<index_t>(stride(row)),
                    static_cast<index_t>(bytes / row), static_cast<index_t>(row), stream);
  if (stream) detail::stream_fence();
  src[row / 2] = dst[row / 3];  // keep the copies observable
}

// The side of a square box of about `bytes` in elements of `es` bytes for the
// transposed copies: a multiple of 16 elements, 48 fewer than the largest, so
// that its leading dimension is no power of two (2048 doubles, 16 KB, put the
// 32 lines of a block into the same cache sets: 2.1-2.2 GB/s per rank where
// 2000 ran at 2.8-3.1; arrays of applications seldom have such strides).
index_t box_side(size_t bytes, index_t es) {
  const auto n = static_cast<index_t>(std::sqrt(static_cast<double>(bytes) / static_cast<double>(es)));
  return std::max<index_t>(16, n / 16 * 16 - 48);
}

std::string now() {
  char b[32];
  const std::time_t t = std::time(nullptr);
  std::strftime(b, sizeof b, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return b;
}

}  // namespace

Machine calibrate(MPI_Comm comm, const CalibrateOptions& o, const std::function<void(const std::string&)>& progress) {
  int rank, size;
  check_mpi(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank", comm);
  check_mpi(MPI_Comm_size(comm, &size), "MPI_Comm_size", comm);
  auto say = [&](const std::string& s) {
    if (rank == 0 && progress) progress(s);
  };
  Machine m;
  const bool pair = size >= 2 && rank <= 1;
  const int reps_small = o.quick ? 9 : 31, reps_large = o.quick ? 3 : 7;

  // 1. NetPIPE-like: powers of 2 and 3 * 2^k, 8 B .. max_size.
  if (size >= 2) {
    say("ping-pong between ranks 0 and 1, 8 B .. " + std::to_string(o.max_size) + " B");
    std::vector<char> buf(pair ? static_cast<size_t>(o.max_size) : 0, 1);
    for (index_t n = 8; n <= o.max_size; n *= o.quick ? 4 : 2)
      for (index_t k : {n, n * 3 / 2}) {
        if (k > o.max_size || (o.quick && k != n)) continue;
        double t = 0;
        MPI_Datatype ty;
        check_mpi(MPI_Type_contiguous(static_cast<int>(k), MPI_BYTE, &ty), "MPI_Type_contiguous", comm);
        check_mpi(MPI_Type_commit(&ty), "MPI_Type_commit", comm);
        if (pair) t = pingpong(comm, rank, buf.data(), ty, k <= (1 << 16) ? reps_small : reps_large);
        check_mpi(MPI_Type_free(&ty), "MPI_Type_free", comm);
        m.pingpong.x.push_back(static_cast<double>(k));
        m.pingpong.y.push_back(t);
      }
    // t_m: the smallest one-way time up to 256 B (the 8-byte point alone is noisy).
    m.startup = m.pingpong.y.empty() ? 0 : m.pingpong.y.front();
    for (size_t i = 0; i < m.pingpong.x.size() && m.pingpong.x[i] <= 256; ++i)
      m.startup = std::min(m.startup, m.pingpong.y[i]);
  }

  // The rest runs on ranks 0 and 1 AT ONCE, as a redistribution does: copies and
  // transfers share the memory bandwidth of the node, which a one-rank or one-way
  // measurement would not see (our first version underpredicted by 2x). Each figure
  // is the median over repetitions of the slower rank's time.
  const bool active = rank <= 1;  // copies need no peer
  auto both = [&](int reps, const std::function<void()>& body) {
    std::vector<double> v;
    for (int i = -1; i < reps; ++i) {  // i = -1: warm-up (first touch)
      check_mpi(MPI_Barrier(comm), "MPI_Barrier", comm);
      const double t0 = MPI_Wtime();
      body();
      double dt = MPI_Wtime() - t0;
      check_mpi(MPI_Allreduce(MPI_IN_PLACE, &dt, 1, MPI_DOUBLE, MPI_MAX, comm), "MPI_Allreduce", comm);
      if (i >= 0) v.push_back(dt);
    }
    return median(v);
  };
  const int peer = 1 - rank;
  // Row curves are measured twice: moving kSmall bytes (a footprint that stays in
  // the last-level cache) and tens of MB (from memory); the model interpolates by
  // the plan's footprint.
  constexpr size_t kSmall = size_t{2} << 20;
  // Quick mode keeps the large footprint: smaller ones made p2p look best wrongly.
  const size_t kLarge = size_t{32} << 20;
  m.small_footprint = 3.0 * kSmall;  // per rank: source span (rows at stride 2) plus target
  m.large_footprint = 3.0 * static_cast<double>(kLarge);

  // 2. Single-core memcpy of large buffers (rank 0 alone: Bmemcpy of Eq. 5), then
  // strided rows gathered into a packed buffer on both ranks (pack and unpack).
  {
    say("memcpy bandwidth (one core), row copies (8 B .. 1 MB rows) and transposed copies (both ranks)");
    const size_t big = static_cast<size_t>(o.quick ? 16 : 64) << 20;
    std::vector<char> a(active ? std::max(big, 3 * kLarge) : 0, 1), b(active ? std::max(big, kLarge) : 0, 2);
    // The faster of memcpy and the strategies' streaming copy (which skips reading
    // the target's lines first and beat memcpy by 25% here): the bound should
    // hold the best copy rate the machine has, not one we can beat.
    const double t = both(reps_large, [&] {
      if (rank == 0) std::memcpy(b.data(), a.data(), big), a[7] = b[9];
    });
    auto stream_copy = [&](bool here) {
      return [&, here] {
        if (!here) return;
        detail::copy_row(reinterpret_cast<std::byte*>(b.data()), reinterpret_cast<const std::byte*>(a.data()), big,
                         true);
        detail::stream_fence();
        a[7] = b[9];
      };
    };
    const double ts = both(reps_large, stream_copy(rank == 0));
    m.bmemcpy = static_cast<double>(big) / std::min(t, ts);
    // The same streaming copy on ranks 0 and 1 at once: the rate of a single-copy
    // redistribution, where every rank writes its target while the others do.
    m.bmemcpy_node = static_cast<double>(big) / both(reps_large, stream_copy(active));
    for (int f = 0; f < 2; ++f)
      // 8 and 32 B rows: a fine-grained cyclic layout's elements (compressed plans).
      for (size_t row : {size_t{8}, size_t{32}, size_t{80}, size_t{256}, size_t{2048}, size_t{16384}, size_t{1} << 20}) {
        const size_t bytes = f ? kLarge : kSmall;
        const double tr = both(reps_large, [&] {
          if (active) copy_rows(a, b, row, bytes);
        });
        (f ? m.copy : m.copy_small).x.push_back(static_cast<double>(row));
        (f ? m.copy : m.copy_small).y.push_back(tr / static_cast<double>(bytes));
      }
    // Transposed copies (a permuted region's boxes, walked in blocks by
    // walk_run): an n x n box read along one side's rows and written along the
    // other's, per element size (4, 8 and 16 B: floats, doubles and complex
    // doubles, each its own kernel; quick: 8 B only), both footprints.
    const std::vector<index_t> elems = o.quick ? std::vector<index_t>{8} : std::vector<index_t>{4, 8, 16};
    for (int f = 0; f < 2; ++f)
      for (index_t es : elems) {
        const index_t n = box_side(f ? kLarge : kSmall, es);
        const size_t moved = static_cast<size_t>(n * n * es);
        const bool stream = detail::stream_for(static_cast<index_t>(moved));
        const double tr = both(reps_large, [&] {
          if (!active) return;
          detail::copy_run(Coord{n, n}, 1, es, {1, 1}, reinterpret_cast<const std::byte*>(a.data()), Coord{n, 1},
                           {0, 0}, reinterpret_cast<std::byte*>(b.data()), Coord{1, n}, {0, 0}, stream);
          if (stream) detail::stream_fence();
          a[5] = b[11];
        });
        (f ? m.transpose : m.transpose_small).x.push_back(static_cast<double>(es));
        (f ? m.transpose : m.transpose_small).y.push_back(tr / static_cast<double>(moved));
      }
    // Where the caches end, between the two footprints (2, 3, 4, 6, ... 32 MB moved).
    // The small ones get more repetitions: the first few after the 32 MB rows
    // above still miss (one warm-up left the 6 MB point at 2x the 9 MB one).
    for (size_t bytes = kSmall; bytes <= kLarge; bytes = o.quick ? 4 * bytes : bytes % 3 ? bytes / 2 * 3 : bytes / 3 * 4) {
      const double tr = both(bytes <= kLarge / 4 ? reps_small : reps_large, [&] {
        if (active) copy_rows(a, b, 1536, bytes);
      });
      m.footprint.x.push_back(3.0 * static_cast<double>(bytes));
      m.footprint.y.push_back(tr / static_cast<double>(bytes));
    }
  }

  if (size >= 2) {
    // 3. Exchanges: both ranks send and receive at once. Contiguous messages (p2p),
    // streams of many small messages (segment: the cost per message grows with the
    // number in flight), rows through MPI's datatype engine (alltoallw).
    say("exchanges: messages, streams of small messages, derived-datatype rows and transposes");
    const size_t xmax = static_cast<size_t>(std::min<index_t>(o.max_size, index_t{64} << 20));
    const size_t bufsize = std::max(2 * xmax, 3 * kLarge);
    std::vector<char> sb(pair ? bufsize : 0, 3), rb(pair ? bufsize : 0, 4);
    auto exchange = [&](MPI_Datatype ty, int count) {
      if (!pair) return;
      MPI_Request r[2];
      check_mpi(MPI_Irecv(rb.data(), count, ty, peer, 2, comm, &r[0]), "MPI_Irecv", comm);
      check_mpi(MPI_Isend(sb.data(), count, ty, peer, 2, comm, &r[1]), "MPI_Isend", comm);
      check_mpi(MPI_Waitall(2, r, MPI_STATUSES_IGNORE), "MPI_Waitall", comm);
    };
    for (size_t n = 4096; n <= xmax; n = n < xmax && n * (o.quick ? 16 : 4) > xmax ? xmax : n * (o.quick ? 16 : 4)) {
      const double t = both(n <= (1 << 16) ? reps_small : reps_large, [&] { exchange(MPI_BYTE, static_cast<int>(n)); });
      m.exchange.x.push_back(static_cast<double>(n)), m.exchange.y.push_back(t);
    }
    std::vector<MPI_Request> req;
    for (int n : {16, 256, 2048, o.quick ? 4096 : 16384}) {
      if (pair) req.resize(2 * static_cast<size_t>(n));
      const double t = both(reps_large, [&] {
        if (!pair) return;
        for (int k = 0; k < n; ++k)
          check_mpi(MPI_Irecv(&rb[64 * size_t(k)], 64, MPI_BYTE, peer, 3, comm, &req[size_t(k)]), "MPI_Irecv", comm);
        for (int k = 0; k < n; ++k)
          check_mpi(MPI_Isend(&sb[64 * size_t(k)], 64, MPI_BYTE, peer, 3, comm, &req[size_t(n + k)]), "MPI_Isend",
                    comm);
        check_mpi(MPI_Waitall(2 * n, req.data(), MPI_STATUSES_IGNORE), "MPI_Waitall", comm);
      });
      m.stream.x.push_back(n), m.stream.y.push_back(t / n);
    }
    for (int f = 0; f < 2; ++f)
    for (size_t row : {size_t{8}, size_t{80}, size_t{2048}, size_t{16384}, size_t{1} << 20}) {
      const size_t bytes = f ? kLarge : kSmall;
      MPI_Datatype ty;
      check_mpi(MPI_Type_create_hvector(static_cast<int>(bytes / row), static_cast<int>(row),
                                        static_cast<MPI_Aint>(stride(row)), MPI_BYTE, &ty),
                "MPI_Type_create_hvector", comm);
      check_mpi(MPI_Type_commit(&ty), "MPI_Type_commit", comm);
      const double t = both(reps_large, [&] { exchange(ty, 1); });
      check_mpi(MPI_Type_free(&ty), "MPI_Type_free", comm);
      (f ? m.datatype : m.datatype_small).x.push_back(static_cast<double>(row));
      (f ? m.datatype : m.datatype_small).y.push_back(t / static_cast<double>(bytes));
    }

    // Transposed boxes through the datatype engine (alltoallw of a permuted
    // region: box_type's elements at the source's stride) on both sides, per
    // element size, from memory (each side gets half: datatype_engine_time).
    // Quick: 8 B elements in a box of 16 MB (0.3-0.4 GB/s: 100 ms a repetition
    // at 32 MB; a box of 8 MB stays in the last-level cache and ran at 0.55).
    for (index_t es : o.quick ? std::vector<index_t>{8} : std::vector<index_t>{4, 8}) {
      const index_t n = box_side(o.quick ? kLarge / 2 : kLarge, es);
      MPI_Datatype col, ty;
      check_mpi(MPI_Type_create_hvector(static_cast<int>(n), static_cast<int>(es), static_cast<MPI_Aint>(n * es),
                                        MPI_BYTE, &col),
                "MPI_Type_create_hvector", comm);
      check_mpi(MPI_Type_create_hvector(static_cast<int>(n), 1, static_cast<MPI_Aint>(es), col, &ty),
                "MPI_Type_create_hvector", comm);
      check_mpi(MPI_Type_commit(&ty), "MPI_Type_commit", comm);
      const double t = both(reps_large, [&] { exchange(ty, 1); });
      check_mpi(MPI_Type_free(&ty), "MPI_Type_free", comm);
      check_mpi(MPI_Type_free(&col), "MPI_Type_free", comm);
      m.datatype_transpose.x.push_back(static_cast<double>(es));
      m.datatype_transpose.y.push_back(t / static_cast<double>(n * n * es));
    }

    // 4. process_vm_readv of rows, both ranks reading the other's memory at once,
    // batches of 1024 rows (what `direct` does).
    say("process_vm_readv of 80 B .. 1 MB rows (both ranks)");
    std::uint64_t mine[2] = {reinterpret_cast<std::uint64_t>(sb.data()), static_cast<std::uint64_t>(getpid())};
    std::uint64_t theirs[2] = {0, 0};
    if (pair)
      check_mpi(MPI_Sendrecv(mine, 2, MPI_UINT64_T, peer, 4, theirs, 2, MPI_UINT64_T, peer, 4, comm, MPI_STATUS_IGNORE),
                "MPI_Sendrecv", comm, "receive from", peer);
    int vm_ok = 1;
    std::vector<iovec> l, r;
    for (int f = 0; f < 2; ++f)
    for (size_t row : {size_t{80}, size_t{2048}, size_t{16384}, size_t{1} << 20}) {
      const size_t bytes = f ? kLarge : kSmall;
      const double t = both(reps_large, [&] {
        for (size_t off = 0; pair && vm_ok && off < bytes; off += row * 1024) {
          l.clear(), r.clear();
          for (size_t k = off; k < std::min(bytes, off + row * 1024); k += row) {
            const size_t at = k / row * stride(row);
            l.push_back({&rb[at], row});
            r.push_back({reinterpret_cast<void*>(theirs[0] + at), row});
          }
          const ssize_t got = process_vm_readv(static_cast<pid_t>(theirs[1]), l.data(), l.size(), r.data(), r.size(), 0);
          vm_ok = got == static_cast<ssize_t>(l.size() * row);  // a partial read: treat as unavailable
        }
      });
      check_mpi(MPI_Allreduce(MPI_IN_PLACE, &vm_ok, 1, MPI_INT, MPI_MIN, comm), "MPI_Allreduce", comm);
      Curve& c = f ? m.vm_read : m.vm_read_small;
      if (vm_ok) c.x.push_back(static_cast<double>(row)), c.y.push_back(t / static_cast<double>(bytes));
    }
    if (!vm_ok) m.vm_read = m.vm_read_small = {};  // direct falls back to p2p: so does its model
    check_mpi(MPI_Barrier(comm), "MPI_Barrier", comm);           // buffers stay alive until the peer has read them
  }

  // Rank 0's figures go to everyone, as JSON (the one serialisation we have).
  std::string js;
  if (rank == 0) {
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    check_mpi(MPI_Get_library_version(lib, &len), "MPI_Get_library_version", comm);
    m.hostname = host;
    m.cores = static_cast<int>(std::thread::hardware_concurrency());
    m.ranks = size;
    m.mpi_library = std::string(lib, static_cast<size_t>(len));
    while (!m.mpi_library.empty() && (m.mpi_library.back() == '\n' || m.mpi_library.back() == '\0'))
      m.mpi_library.pop_back();
#ifdef NDEBUG
    m.build = "redist, g++ " __VERSION__ ", optimised (NDEBUG)";
#else
    m.build = "redist, g++ " __VERSION__ ", debug (assertions on)";
#endif
    m.created = now();
    if (!m.pingpong.empty()) m.bnet = m.net_bandwidth(1 << 20);
    js = to_json(m);
  }
  long long n = static_cast<long long>(js.size());
  check_mpi(MPI_Bcast(&n, 1, MPI_LONG_LONG, 0, comm), "MPI_Bcast", comm);
  js.resize(static_cast<size_t>(n));
  check_mpi(MPI_Bcast(js.data(), static_cast<int>(n), MPI_CHAR, 0, comm), "MPI_Bcast", comm);
  Machine out = machine_from_json(js);
  out.source = o.quick ? "quick" : "measured";
  return out;
}

Machine machine_for(MPI_Comm comm, const std::string& path) {
  // Rank 0's, per process and file: only rank 0's copy is ever used. Plans may
  // be made from several threads (on different communicators): one lock, never
  // held across MPI calls.
  static std::map<std::string, Machine> cached;
  static std::mutex cached_mutex;
  int rank;
  check_mpi(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank", comm);
  const std::string file = path.empty() ? default_calibration_path() : path;
  std::string js, src, why;
  if (rank == 0) {
    std::lock_guard<std::mutex> lock(cached_mutex);
    auto it = cached.find(file);
    if (it == cached.end()) {
      Machine m;
      if (load_machine(file, m, &why)) it = cached.emplace(file, m).first;
    }
    // The advice decided where the file was looked at (other ranks may not see it).
    if (it == cached.end() && !path.empty()) why += "; " + calibration_hint(file);
    if (it != cached.end()) js = to_json(it->second), src = it->second.source;
  }
  long long n[3] = {static_cast<long long>(js.size()), static_cast<long long>(src.size()),
                    static_cast<long long>(why.size())};
  check_mpi(MPI_Bcast(n, 3, MPI_LONG_LONG, 0, comm), "MPI_Bcast", comm);
  if (n[0] == 0) {
    why.resize(static_cast<size_t>(n[2]));
    check_mpi(MPI_Bcast(why.data(), static_cast<int>(n[2]), MPI_CHAR, 0, comm), "MPI_Bcast", comm);
  }
  if (n[0] == 0 && !path.empty())  // a file named by the caller is never replaced by a measurement
    throw Error("redist: rank 0 cannot read the calibration file '" + path + "': " + why +
                ", or name no file to measure quickly");
  if (n[0] == 0) {  // no usable default file: a quick in-run calibration, kept for later plans
    const double t0 = MPI_Wtime();
    Machine m = calibrate(comm, {index_t{64} << 20, true});
    // A default file that exists but is not a calibration is named (a missing one is the usual case).
    if (why.rfind("cannot open", 0) != 0) m.source = "quick (" + why + ")";
    if (rank == 0) {
      std::lock_guard<std::mutex> lock(cached_mutex);
      cached[file] = m;
    }
    m.seconds = MPI_Wtime() - t0;
    return m;
  }
  js.resize(static_cast<size_t>(n[0])), src.resize(static_cast<size_t>(n[1]));
  check_mpi(MPI_Bcast(js.data(), static_cast<int>(n[0]), MPI_CHAR, 0, comm), "MPI_Bcast", comm);
  check_mpi(MPI_Bcast(src.data(), static_cast<int>(n[1]), MPI_CHAR, 0, comm), "MPI_Bcast", comm);
  Machine m = machine_from_json(js);
  m.source = src;
  return m;
}

}  // namespace redist
