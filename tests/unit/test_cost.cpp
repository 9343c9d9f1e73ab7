// Cost model without MPI: curve interpolation, the JSON calibration format, the
// Eq. 5 bound against hand-computed values, and the shape of the predictions
// (more volume, more messages -> more time).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "cost/model.hpp"  // storage_run, merge_stretches
#include "exec/fifo.hpp"   // columns_help
#include "redist/cost.hpp"
#include "redist/exec.hpp"  // predict(rank plan, strategy name, machine)

using namespace redist;

namespace {

// A made-up machine with every curve present: 1 us per message, 10 GB/s network,
// 20 GB/s memcpy; small rows cost more per byte than large ones.
Machine machine() {
  Machine m;
  m.bnet = 10e9, m.bmemcpy = 20e9, m.startup = 1e-6;
  m.pingpong = {{8, 1e6, 1e8}, {1e-6, 1e-6 + 1e6 / 10e9, 1e-6 + 1e8 / 10e9}};
  m.exchange = {{8, 1e6, 1e8}, {1e-6, 1e-6 + 1e6 / 10e9, 1e-6 + 1e8 / 10e9}};
  m.stream = {{16, 16384}, {1e-6, 4e-6}};
  m.copy = {{80, 1e6}, {1 / 4e9, 1 / 20e9}};
  m.datatype = {{80, 1e6}, {1 / 2e9, 1 / 8e9}};
  m.vm_read = {{80, 1e6}, {1 / 0.5e9, 1 / 10e9}};
  m.transpose = {{4, 8, 16}, {1 / 1e9, 1 / 2e9, 1 / 2.5e9}};
  m.transpose_small = {{4, 8, 16}, {1 / 3e9, 1 / 4e9, 1 / 5e9}};
  m.datatype_transpose = {{4, 8}, {1 / 0.2e9, 1 / 0.3e9}};
  m.hostname = "host \"x\"", m.build = "test", m.mpi_library = "lib", m.created = "now";
  m.cores = 2, m.ranks = 2;
  return m;
}

RankPlan plan(index_t n, index_t tile, int rank = 0) {
  Layout src = block_cyclic_layout({n, n}, {tile, tile}, {1, 2});
  Layout dst = block_cyclic_layout({n, n}, {tile, tile}, {2, 1});
  return plan_rank(src, dst, Region::whole(src.shape()), rank, 2);
}

TEST(Cost, CurveInterpolatesInLogAndClamps) {
  Curve c{{100, 10000}, {1, 3}};
  EXPECT_DOUBLE_EQ(c.at(1000), 2);  // halfway in log
  EXPECT_DOUBLE_EQ(c.at(1), 1);
  EXPECT_DOUBLE_EQ(c.at(1e9), 3);
  EXPECT_DOUBLE_EQ(Curve{}.at(5), 0);
}

TEST(Cost, NetTimeFollowsThePingPong) {
  const Machine m = machine();
  EXPECT_DOUBLE_EQ(m.net_time(8), 1e-6);
  EXPECT_NEAR(m.net_time(1e6), 1e-6 + 1e-4, 1e-15);
  EXPECT_NEAR(m.net_time(2e8), 2 * (1e-6 + 1e-2), 1e-12);  // beyond: last bandwidth
  EXPECT_NEAR(m.net_bandwidth(1e8), 1e8 / (1e-6 + 1e-2), 1);
}

TEST(Cost, BoundIsEq5) {
  Machine m;
  m.bnet = 10e9, m.bmemcpy = 20e9;
  // r = 50/100 = 0.5: 10e9 * 20e9 / (2.5 * 10e9 + 20e9) = 200e18 / 45e9
  EXPECT_NEAR(bound_bandwidth(m, 100, 50), 200e18 / 45e9, 1);
  // no local bytes: 10 * 20 / (2 * 10 + 20) GB/s = 5 GB/s
  EXPECT_NEAR(bound_bandwidth(m, 100, 0), 5e9, 1);
  EXPECT_EQ(bound_bandwidth(m, 0, 100), 0);
  // with a curve, Bnet is read at the plan's message size: 1e6 B in 1e-4 s -> 1e10 B/s
  Machine c;
  c.bmemcpy = 20e9, c.bnet = 1;  // ignored when the curve is there
  c.pingpong = {{1e3, 1e6}, {1e-6, 1e-4}};
  EXPECT_NEAR(bound_bandwidth(c, 100, 0, 1000000), 5e9, 1e3);
  // at 1e3 B: 1e9 B/s -> 1 * 20 / (2 + 20) GB/s
  EXPECT_NEAR(bound_bandwidth(c, 100, 0, 1000), 1e9 * 20e9 / (2e9 + 20e9), 1e3);
}

TEST(Cost, JsonRoundTrip) {
  const Machine m = machine();
  const Machine r = machine_from_json(to_json(m));
  EXPECT_EQ(r.hostname, m.hostname);
  EXPECT_EQ(r.build, m.build);
  EXPECT_EQ(r.cores, 2);
  EXPECT_DOUBLE_EQ(r.bnet, m.bnet);
  EXPECT_DOUBLE_EQ(r.startup, m.startup);
  for (auto [a, b] : {std::pair{&m.pingpong, &r.pingpong}, {&m.exchange, &r.exchange}, {&m.stream, &r.stream},
                      {&m.copy, &r.copy}, {&m.datatype, &r.datatype}, {&m.vm_read, &r.vm_read},
                      {&m.transpose, &r.transpose}, {&m.transpose_small, &r.transpose_small},
                      {&m.datatype_transpose, &r.datatype_transpose}}) {
    ASSERT_FALSE(a->empty());
    ASSERT_EQ(a->x.size(), b->x.size());
    for (size_t i = 0; i < a->x.size(); ++i) {
      EXPECT_NEAR(b->x[i], a->x[i], 1e-8 * a->x[i]);
      EXPECT_NEAR(b->y[i], a->y[i], 1e-8 * a->y[i]);
    }
  }
  // and through a file
  const std::string path = ::testing::TempDir() + "redist_cost_test/sub/cal.json";
  save_machine(path, m);
  Machine f;
  ASSERT_TRUE(load_machine(path, f));
  EXPECT_EQ(f.source, path);
  EXPECT_EQ(to_json(f), to_json(m));
  EXPECT_FALSE(load_machine(path + ".missing", f));
  // A file from before the transposed curves: read, those curves empty.
  std::string older;
  std::istringstream lines(to_json(m));
  for (std::string line; std::getline(lines, line);)
    if (line.find("transpose") == std::string::npos) older += line + "\n";
  if (const size_t comma = older.rfind(','); older.find_first_not_of(" \n", comma + 1) == older.rfind('}'))
    older.erase(comma, 1);  // the last curve went: no comma before the brace
  const Machine o = machine_from_json(older);
  EXPECT_TRUE(o.transpose.empty() && o.transpose_small.empty() && o.datatype_transpose.empty());
  EXPECT_EQ(o.copy.y, r.copy.y);
}

TEST(Cost, BadJsonIsAClearError) {
  EXPECT_THROW(machine_from_json("{"), Error);
  EXPECT_THROW(machine_from_json("{\"format\": \"other\"}"), Error);
  EXPECT_THROW(machine_from_json("{\"format\": \"redist-calibration-3\", \"bmemcpy\": 1e9, \"copy_row_bytes\": [2, 1], "
                                 "\"copy_s_per_byte\": [1, 1]}"),
               Error);
  EXPECT_THROW(machine_from_json("{\"format\": \"redist-calibration-3\", \"bmemcpy\": 1e9, \"copy_row_bytes\": [1, 2], "
                                 "\"copy_s_per_byte\": [1]}"),
               Error);
  // Rates missing or out of range: a model would predict 0 s for everything.
  auto why = [](const std::string& fields) {
    try {
      machine_from_json("{\"format\": \"redist-calibration-3\"" + fields + "}");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  // Every number the writer writes is required; a calibration on one rank has
  // no network figures (0) and empty curves.
  const std::string one_rank = ", \"bnet\": 0, \"startup_s\": 0, \"small_footprint_bytes\": 6291456, "
                               "\"large_footprint_bytes\": 100663296, \"cores\": 2, \"ranks\": 1";
  EXPECT_NE(why("").find("key 'bnet' must be a number >= 0 and < 1e15"), std::string::npos) << why("");
  EXPECT_NE(why(one_rank + ", \"bmemcpy\": 0").find("key 'bmemcpy' must be a number > 0 and < 1e15"),
            std::string::npos);
  EXPECT_NE(why(", \"bmemcpy\": 1e9, \"bnet\": -5").find("key 'bnet' must be a number >= 0"), std::string::npos);
  EXPECT_NE(why(one_rank + ", \"bmemcpy\": 1e9, \"copy_row_bytes\": [1, 2], \"copy_s_per_byte\": [1, -1]")
                .find("copy_s_per_byte"),
            std::string::npos);
  EXPECT_EQ(why(one_rank + ", \"bmemcpy\": 1e9"), "accepted");  // one rank: no network figures
}

// machine()'s calibration file with key `key`'s value replaced by `value`
// (empty: the key left out). to_json writes one key per line, the last one a
// curve that no case leaves out, so dropping a line keeps the commas right.
std::string edited(const std::string& key, const std::string& value) {
  std::istringstream lines(to_json(machine()));
  std::string out;
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("  \"" + key + "\": ", 0) == 0) {
      if (value.empty()) continue;
      line = "  \"" + key + "\": " + value + (line.back() == ',' ? "," : "");
    }
    out += line + "\n";
  }
  return out;
}

// A calibration file whose numbers are no machine's is refused, naming the
// file, the key, what it holds and what is allowed: "bnet": "fast" and a missing
// key were read as 0, a missing pingpong_s was "differ in length", and
// "startup_s": 1e300 (or negative, nan, inf) broke redist plan --predict.
TEST(Cost, BadCalibrationValuesAreNamed) {
  const std::string path = ::testing::TempDir() + "redist_cost_bad_values.json";
  auto why = [&](const std::string& key, const std::string& value) {
    std::ofstream(path) << edited(key, value);
    Machine m;
    std::string w;
    return load_machine(path, m, &w) ? std::string("accepted") : w;
  };
  const std::string bnet = "key 'bnet' must be a number >= 0 and < 1e15 (bytes per second between two ranks; 0: "
                           "not measured, a calibration on one rank), got ";
  const std::string startup = "key 'startup_s' must be a number >= 0 and < 3600 (seconds of a small message, one "
                              "way; 0: not measured, a calibration on one rank), got ";
  const std::string bmemcpy =
      "key 'bmemcpy' must be a number > 0 and < 1e15 (bytes per second of one core's copy), got ";
  struct Case {
    const char *key, *value;
    std::string words;
  };
  for (const Case& c : std::vector<Case>{
           {"bnet", "\"fast\"", bnet + "\"fast\""},
           {"bnet", "", bnet + "nothing (the key is missing)"},
           {"bnet", "[1, 2]", bnet + "[1, 2]"},
           {"bnet", "2e15", bnet + "2e+15"},
           {"bnet", "null", "expected a number at character"},
           {"bnet", "true", "(the value of key 'bnet')"},
           {"bmemcpy", "", bmemcpy + "nothing (the key is missing)"},
           {"bmemcpy", "0", bmemcpy + "0"},
           {"bmemcpy", "inf", bmemcpy + "inf"},
           {"bmemcpy", "1e999", bmemcpy + "inf"},
           {"bmemcpy_node", "-1", "key 'bmemcpy_node' must be a number >= 0 and < 1e15 (bytes per second per rank, "
                                  "two ranks copying at once; 0: not measured), got -1"},
           {"startup_s", "1e300", startup + "1e+300"},
           {"startup_s", "-1e-6", startup + "-1e-06"},
           {"startup_s", "nan", startup + "nan"},
           {"startup_s", "", startup + "nothing (the key is missing)"},
           {"small_footprint_bytes", "\"big\"",
            "key 'small_footprint_bytes' must be a number >= 0 and < 1e15 (bytes touched per rank; 0: not "
            "measured), got \"big\""},
           {"large_footprint_bytes", "", "key 'large_footprint_bytes' must be a number >= 0"},
           {"cores", "2.5", "key 'cores' must be an integer >= 0 and < 2^31 (cores of the node; 0: unknown), got 2.5"},
           {"ranks", "0", "key 'ranks' must be an integer >= 1 and < 2^31 (ranks of the calibration run), got 0"},
           {"ranks", "", "key 'ranks' must be an integer >= 1 and < 2^31 (ranks of the calibration run), got nothing"},
           {"hostname", "5", "key 'hostname' must be a string, got 5"},
           {"pingpong_s", "", "key 'pingpong_s' must be an array of numbers >= 0 and < 3600 (seconds), as many as "
                              "'pingpong_bytes' has (3), got nothing (the key is missing)"},
           {"pingpong_bytes", "\"8\"", "key 'pingpong_bytes' must be an array of ascending numbers > 0 and < 1e15, as "
                                        "many as 'pingpong_s' has (3), got \"8\""},
           {"pingpong_s", "[1e-6, 1e300, 1]",
            "key 'pingpong_s' must hold numbers >= 0 and < 3600 (seconds), got 1e+300"},
           {"pingpong_s", "[1e-6, 1e-5]",
            "keys 'pingpong_bytes' and 'pingpong_s' differ in length (3 and 2 numbers): one of each per point"},
           {"pingpong_bytes", "[0, 1e6, 1e8]", "key 'pingpong_bytes' must hold numbers > 0 and < 1e15, got 0"},
           {"pingpong_bytes", "[8, 8, 1e8]", "key 'pingpong_bytes' must ascend, got 8 then 8"},
           {"stream_s_per_message", "[1e-6, 4000]",
            "key 'stream_s_per_message' must hold numbers >= 0 and < 3600 (seconds), got 4000"},
           {"copy_s_per_byte", "[1e-9, 2]",
            "key 'copy_s_per_byte' must hold numbers >= 0 and < 1 (seconds per byte), got 2"}}) {
    const std::string w = why(c.key, c.value);
    EXPECT_EQ(w.rfind(path + " is not a calibration file (calibration JSON: ", 0), 0u) << c.key << ": " << w;
    EXPECT_NE(w.find(c.words), std::string::npos) << c.key << " = '" << c.value << "': " << w;
  }
  // What the writer leaves at 0 or out: a file from before bmemcpy_node; a
  // calibration on one rank (no network figures, no network curves).
  EXPECT_EQ(why("bmemcpy_node", ""), "accepted");
  Machine one = machine();
  one.bnet = 0, one.startup = 0, one.ranks = 1, one.pingpong = one.exchange = one.stream = one.datatype = {};
  one.vm_read = one.datatype_transpose = {};
  const Machine back = machine_from_json(to_json(one));
  EXPECT_EQ(back.bnet, 0);
  EXPECT_TRUE(back.pingpong.empty());
  EXPECT_EQ(back.ranks, 1);
}

TEST(Cost, PredictionsGrowWithVolume) {
  const Machine m = machine();
  for (const std::string& e : strategy_names()) {
    double last = 0;
    for (index_t n : {200, 400, 800, 1600}) {
      const double t = predict(plan(n, 50), e, m).total();
      EXPECT_GT(t, last) << e << " n=" << n;
      last = t;
    }
  }
}

// Under a memory budget the strategies that cut messages into pieces predict
// those pieces (auto took p2p_pipelined at 100 bytes, predicted as without a
// budget: 8.1 us, measured 1.3-5.8 ms); the others, and no budget, as before.
TEST(Cost, BudgetPiecesCostMore) {
  const Machine m = machine();
  const RankPlan rp = plan(400, 50);
  for (const std::string& e : strategy_names()) {
    const double free = predict(rp, e, m, false, {}).total();
    EXPECT_DOUBLE_EQ(predict(rp, e, m, false, {}, 0).total(), free) << e;
    const double tight = predict(rp, e, m, false, {}, 4096).total();
    if (e == "phased" || e == "phased_sendrecv" || e == "p2p_pipelined") {
      // 320 KB each way in 160 pieces of 2 KB (phased: an exchange and a wait each)
      // or in slots of 512 B (p2p_pipelined), against one message each way
      EXPECT_GT(tight, 2 * free) << e;
      EXPECT_GT(predict(rp, e, m, false, {}, 1 << 20).total(), free - 1e-12) << e;
    } else {
      EXPECT_DOUBLE_EQ(tight, free) << e;
    }
  }
}

TEST(Cost, MoreMessagesCostMore) {
  const Machine m = machine();
  // Same volume, smaller tiles: more segments, shorter rows.
  const RankPlan big = plan(800, 200), small = plan(800, 10);
  ASSERT_GT(small.stats.segments_sent, big.stats.segments_sent);
  EXPECT_EQ(small.stats.bytes_sent, big.stats.bytes_sent);
  for (const std::string& e : strategy_names())
    EXPECT_GT(predict(small, e, m).total(), predict(big, e, m).total()) << e;
  // segment sends one message per run: beyond p2p by about runs x stream cost;
  // its copies are p2p's but for segments that are one run of storage (here
  // whole 10x10 tiles in tile storage, moved in place: none at all), and the
  // same as p2p's where none is (ScaLAPACK storage, 10-row columns of tiles).
  const Prediction ps = predict(small, "segment", m), pp = predict(small, "p2p", m);
  EXPECT_GT(ps.comm - pp.comm, 0.5 * static_cast<double>(small.stats.runs_sent) * 1e-6);
  EXPECT_LT(ps.memcpy, pp.memcpy);
  const RankPlan la = plan_rank(block_cyclic_layout({800, 800}, {10, 10}, {1, 2}, 8, StorageKind::local_array),
                                block_cyclic_layout({800, 800}, {10, 10}, {2, 1}, 8, StorageKind::local_array),
                                Region::whole({800, 800}), 0, 2);
  EXPECT_DOUBLE_EQ(predict(la, "segment", m).memcpy, predict(la, "p2p", m).memcpy);
}

TEST(Cost, TermsOfEq1) {
  const Machine m = machine();
  const RankPlan rp = plan(400, 100);
  const Prediction p2p = predict(rp, "p2p", m), w = predict(rp, "alltoallw", m),
                   d = predict(rp, "direct", m);
  EXPECT_GT(p2p.comm, 0);
  EXPECT_GT(p2p.memcpy, w.memcpy);  // alltoallw packs nothing: only local copies remain
  EXPECT_DOUBLE_EQ(p2p.total(), p2p.index + p2p.comm + p2p.memcpy + p2p.runtime);
  EXPECT_GT(d.memcpy, w.memcpy);    // direct's single copy is counted as memcpy
  // Without process_vm_readv figures, direct falls back to p2p, and so does its model.
  Machine nv = m;
  nv.vm_read = {};
  EXPECT_DOUBLE_EQ(predict(rp, "direct", nv).total(), predict(rp, "p2p", nv).total());
  // One rank: nothing remote, every strategy only copies.
  const RankPlan one = plan_rank(block_cyclic_layout({100, 100}, {10, 10}, {1, 1}),
                                 block_cyclic_layout({100, 100}, {7, 7}, {1, 1}), Region::whole({100, 100}), 0, 1);
  for (const std::string& e : strategy_names()) EXPECT_EQ(predict(one, e, m).comm, 0) << e;
}

}  // namespace

namespace {

// A machine whose curves are flat: copies at `copy` s/byte, process_vm_readv at
// `vm` s/byte whatever the row, an exchange of b bytes t0 + b / bw (exactly linear
// between its two points), no footprint curve (every rate from memory). So a
// model's terms can be summed by hand.
struct Flat {
  double copy = 1 / 10e9, vm = 1 / 4e9, t0 = 5e-6, bw = 1e9, startup = 1e-6;
  Machine machine() const {
    Machine m;
    m.bnet = bw, m.bmemcpy = 1 / copy, m.startup = startup;
    m.exchange = {{8, 1e9}, {t0 + 8 / bw, t0 + 1e9 / bw}};
    m.pingpong = m.exchange;
    m.copy = {{80}, {copy}};
    m.datatype = {{80}, {copy}};
    m.vm_read = {{80}, {vm}};
    return m;
  }
  double exchange(index_t b) const { return t0 + static_cast<double>(b) / bw; }
};

// shm's model by hand, per peer: on the node (node_of[peer] == node_of[rank]) one
// copy (windows) or the cross-memory attach read (heap: rows under 2 KB packed,
// read, unpacked; a startup more per peer with such rows), on another node a
// message (pack, exchange, unpack); 2 startups per peer on the node.
// `heap`: arrays on the heap, through rings (packed, unpacked) or, with
// `cma`, cross-memory attach (read; short rows packed and unpacked).
Prediction shm_by_hand(const RankPlan& rp, const Flat& f, bool heap, const std::vector<int>& node_of, bool cma = false) {
  const index_t es = rp.elem_size;
  const bool rings = heap && !cma;
  heap = heap && cma;
  const auto on = [&](int peer) { return node_of[static_cast<size_t>(peer)] == node_of[static_cast<size_t>(rp.rank)]; };
  const auto short_bytes = [&](const PeerPlan& pp) {
    index_t b = 0;
    for (const Segment& g : pp.segments)
      if (g.run * es < 2048) b += g.elements() * es;
    return b;
  };
  // A message that is one run of storage on a side costs no copy on that side.
  const auto packed = [](const PeerPlan& pp) {
    return detail::storage_run(pp).block < 0 ? static_cast<double>(pp.bytes) : 0.0;
  };
  double copied = static_cast<double>(rp.stats.bytes_local), read = 0, sent = 0, received = 0;
  int on_s = 0, on_r = 0, packed_s = 0, packed_r = 0;
  for (const PeerPlan& pp : rp.sends)
    if (!on(pp.peer)) {
      sent += f.exchange(pp.bytes), copied += packed(pp);
    } else {
      ++on_s;
      copied += static_cast<double>(heap ? short_bytes(pp) : pp.bytes);  // windows: copied; rings: packed
      packed_s += heap && short_bytes(pp) > 0;
    }
  for (const PeerPlan& pp : rp.receives)
    if (!on(pp.peer)) {
      received += f.exchange(pp.bytes), copied += packed(pp);
    } else {
      ++on_r;
      if (rings) copied += static_cast<double>(pp.bytes);  // unpacked
      if (!heap) continue;
      copied += static_cast<double>(short_bytes(pp));  // unpacked
      read += static_cast<double>(pp.bytes);
      packed_r += short_bytes(pp) > 0;
    }
  Prediction p;
  p.comm = 2 * f.startup * std::max(on_s, on_r) + f.startup * std::max(packed_s, packed_r) + std::max(sent, received);
  p.memcpy = copied * f.copy + read * f.vm;
  return p;
}

// Issue 14: shm's models (windows and heap) with peers on other nodes charge those
// pairs as p2p messages; the pairs on the node as copies or reads. 4 ranks in nodes
// {0,1},{2,3}; columns of 8,000 bytes (every row read whole) and tiles of 10 rows
// (every row packed).
TEST(Cost, ShmChargesPeersOnOtherNodesAsMessages) {
  const Flat f;
  const Machine m = f.machine();
  const std::vector<int> nodes = {0, 0, 1, 1}, one = {7, 7, 7, 7};
  const std::pair<Layout, Layout> cases[] = {
      {block_cyclic_layout({1000, 1000}, {1000, 70}, {1, 4}), block_cyclic_layout({1000, 1000}, {1000, 90}, {1, 4})},
      {block_cyclic_layout({400, 300}, {10, 30}, {2, 2}), block_cyclic_layout({400, 300}, {10, 7}, {4, 1})}};
  for (const auto& [src, dst] : cases)
    for (int r = 0; r < 4; ++r) {
      const RankPlan rp = plan_rank(src, dst, Region::whole(src.shape()), r, 4);
      // Of the columns' messages, those within one tile on a side are one run
      // there (sent or received in place); none of the 10-row tiles' are.
      int runs = 0;
      for (const auto* peers : {&rp.sends, &rp.receives})
        for (const PeerPlan& pp : *peers) runs += detail::storage_run(pp).block >= 0;
      if (&src == &cases[0].first) EXPECT_GT(runs, 0) << "rank " << r;
      else EXPECT_EQ(runs, 0) << "rank " << r;
      bool off = false;
      for (const PeerPlan& pp : rp.sends) off = off || nodes[static_cast<size_t>(pp.peer)] != nodes[static_cast<size_t>(r)];
      ASSERT_TRUE(off) << "rank " << r << " has no peer on the other node";
      for (const int mode : {0, 1, 2}) {  // windows, heap through rings, heap through cma
        const bool heap = mode > 0, cma = mode == 2;
        if (cma) setenv("REDIST_SHM_FIFO", "0", 1);
        const std::string what = std::string(heap ? cma ? "heap cma" : "heap" : "windows") + " rank " +
                                 std::to_string(r) + " " + src.spec();
        const Prediction got = predict(rp, "shm", m, heap, nodes), want = shm_by_hand(rp, f, heap, nodes, cma);
        EXPECT_NEAR(got.comm, want.comm, 1e-12 + 1e-9 * want.comm) << what;
        EXPECT_NEAR(got.memcpy, want.memcpy, 1e-12 + 1e-9 * want.memcpy) << what;
        // One node: the model without nodes, and the hand sum with every peer on it.
        const Prediction all = predict(rp, "shm", m, heap), same = predict(rp, "shm", m, heap, one);
        EXPECT_DOUBLE_EQ(same.total(), all.total()) << what;
        EXPECT_NEAR(all.total(), shm_by_hand(rp, f, heap, one, cma).total(), 1e-9 * all.total()) << what;
        // Messages cost pack + exchange + unpack against one copy or one read: more.
        EXPECT_GT(got.total(), all.total()) << what;
        unsetenv("REDIST_SHM_FIFO");
      }
      // Every rank its own node: comm is p2p's (messages only, no startups for headers).
      const std::vector<int> alone = {0, 1, 2, 3};
      EXPECT_NEAR(predict(rp, "shm", m, false, alone).comm, predict(rp, "p2p", m).comm, 1e-15);
    }
  // Other strategies ignore the nodes; a node list too short is refused.
  const RankPlan rp = plan_rank(cases[0].first, cases[0].second, Region::whole({1000, 1000}), 3, 4);
  EXPECT_DOUBLE_EQ(predict(rp, "p2p", m, false, nodes).total(), predict(rp, "p2p", m).total());
  EXPECT_THROW(predict(rp, "shm", m, false, std::vector<int>{0, 0}), Error);
}

// The walk's rows (merge_stretches): boxes of a 1000-row ScaLAPACK local array,
// 200 rows x 600 columns each, one below the other.
TEST(Cost, MergeStretchesJoinsRowsThatFollowInStorage) {
  using detail::StoragePiece;
  const auto box = [](index_t at, index_t rows, index_t cols, index_t ld, index_t block = 0) {
    return StoragePiece{Coord{rows, cols}, rows, Address{block, at, Coord{1, ld}}};
  };
  const auto rows_of = [](const detail::Stretches& s) { return std::vector<index_t>(s.row.begin(), s.row.end()); };
  // The whole column height, given out of order: the columns follow one another
  // too (the stretch is as long as their stride): one row of all 600 columns.
  std::vector<StoragePiece> whole = {box(400, 200, 600, 1000), box(0, 200, 600, 1000), box(800, 200, 600, 1000),
                                     box(200, 200, 600, 1000), box(600, 200, 600, 1000)};
  detail::Stretches s = detail::merge_stretches(whole);
  EXPECT_EQ(rows_of(s), std::vector<index_t>(5, 600000));
  EXPECT_EQ(s.rows, 1);
  // A leading dimension of 1200: columns of 1000 with a gap below each.
  for (StoragePiece& p : whole) p.at.strides = Coord{1, 1200};
  s = detail::merge_stretches(whole);
  EXPECT_EQ(rows_of(s), std::vector<index_t>(5, 1000));
  EXPECT_EQ(s.rows, 600);
  // A gap in the middle: two stretches of 400 rows.
  s = detail::merge_stretches({box(0, 200, 600, 1000), box(200, 200, 600, 1000), box(600, 200, 600, 1000),
                               box(800, 200, 600, 1000)});
  EXPECT_EQ(rows_of(s), (std::vector<index_t>{400, 400, 400, 400}));
  EXPECT_EQ(s.rows, 1200);
  // Fewer columns below, another block, another stride: no merging.
  for (const StoragePiece& other : {box(200, 200, 300, 1000), box(200, 200, 600, 1000, 1), box(200, 200, 600, 900)}) {
    s = detail::merge_stretches({box(0, 200, 600, 1000), other});
    EXPECT_EQ(rows_of(s), (std::vector<index_t>{200, 200}));
  }
  // A run of segments, five boxes 200 apart: the five pieces.
  std::vector<StoragePiece> run;
  detail::add_pieces(Coord{200, 600}, 200, Address{0, 0, Coord{1, 1000}}, {5, 1}, {200, 0}, run);
  ASSERT_EQ(run.size(), 5u);
  EXPECT_EQ(rows_of(detail::merge_stretches(run)), std::vector<index_t>(5, 600000));
  // An empty piece is no row.
  s = detail::merge_stretches({box(0, 0, 600, 1000)});
  EXPECT_EQ(s.rows, 0);
}

// shm on the heap, rings: where every source column goes either to this rank's
// target or to the other rank, rows of 100 and 200 elements, the sender's walk
// reads each source local array whole (its columns one after another: rows of a
// tile column) and the receiver writes whole target columns; charged at those
// rows on a machine whose short rows are slow, not at the segments' own rows.
// Tiles of 10 (80 B rows: no source order, no walk): packed along the segments'
// rows, unpacked along whole target columns (column order).
TEST(Cost, ShmRingsChargeTheWalkAndTheUnpackingAlongStorage) {
  const Machine m = machine();
  const index_t es = 8;
  for (int r = 0; r < 2; ++r) {
    const Layout src = block_cyclic_layout({1200, 1000}, {200, 200}, {1, 2}, es, StorageKind::local_array);
    const Layout dst = block_cyclic_layout({1200, 1000}, {300, 300}, {2, 1}, es, StorageKind::local_array);
    const RankPlan rp = plan_rank(src, dst, Region::whole(src.shape()), r, 2);
    ASSERT_EQ(rp.receives.size(), 1u);
    const auto b = [](index_t n) { return static_cast<double>(n); };
    // Source: 1200 rows x 200 columns of a tile column; target: 600 local rows,
    // every one of a column from one sender (or this rank), x 200 columns.
    const double walk_row = 1200 * 200 * es, target_row = 600 * 200 * es;
    const double want = b(rp.stats.bytes_local) * m.copy.at(std::min(walk_row, target_row)) +
                        b(rp.stats.bytes_sent) * m.copy.at(walk_row) + b(rp.stats.bytes_received) * m.copy.at(target_row);
    const Prediction got = predict(rp, "shm", m, true);
    EXPECT_NEAR(got.memcpy, want, 1e-9 * want) << "rank " << r;
    // Per segment (rows of 800 and 1600 B) it would be more.
    double per_segment = 0;
    for (const auto* side : {&rp.sends, &rp.receives})
      for (const PeerPlan& pp : *side)
        for (const Segment& g : pp.segments) per_segment += m.copy.at(detail::runs_of(g, es).row_bytes) * b(g.elements() * es);
    for (const LocalCopy& c : rp.locals) per_segment += m.copy.at(detail::runs_of(c, es).row_bytes) * b(c.elements() * es);
    EXPECT_GT(per_segment, 2 * got.memcpy) << "rank " << r;
  }
  for (int r = 0; r < 2; ++r) {
    const Layout src = block_cyclic_layout({100, 100}, {10, 10}, {1, 2}, es, StorageKind::local_array);
    const Layout dst = block_cyclic_layout({100, 100}, {10, 10}, {2, 1}, es, StorageKind::local_array);
    const RankPlan rp = plan_rank(src, dst, Region::whole(src.shape()), r, 2);
    ASSERT_EQ(rp.receives.size(), 1u);
    ASSERT_TRUE(detail::columns_help(rp.receives[0].segments)) << "rank " << r;
    // Target columns of 50 local rows, 10 columns of a tile column from one sender.
    double want = static_cast<double>(rp.stats.bytes_received) * m.copy.at(50 * 10 * es);
    const auto time = [&](detail::Runs u) { return u.rows * u.row_bytes * m.copy.at(u.row_bytes); };
    for (const Segment& g : rp.sends[0].segments) want += time(detail::runs_of(g, es));
    for (const LocalCopy& c : rp.locals) want += time(detail::runs_of(c, es));
    EXPECT_NEAR(predict(rp, "shm", m, true).memcpy, want, 1e-9 * want) << "rank " << r;
  }
}

}  // namespace

namespace {

// p2p sends a message that is one run of the source straight from it and
// receives one that is one run of the target straight into it (storage_run):
// rank 0's 400x300 array in ScaLAPACK storage to rank 1 (tiles 100 -> 70x90) is
// one message of one run, nothing packed; the same array into 2 ranks' rows of
// tiles is not one run on either side, and both sides pay their copies. The
// model by hand on the flat machine.
TEST(Cost, P2pSendsAndReceivesStorageRunsInPlace) {
  const Flat f;
  const Machine m = f.machine();
  const auto side = [](const char* spec) { return Layout::parse(spec); };
  const Layout src = side("400x300 tile=100x100 block_cyclic grid=1x1 storage=local_array");
  const Layout to1 = side("400x300 tile=70x90 block_cyclic grid=1x1 first=1 storage=local_array");
  const Layout rows = side("400x300 tile=70x90 block_cyclic grid=2x1 storage=local_array");
  const index_t bytes = 400 * 300 * 8;
  for (int rank : {0, 1}) {
    const RankPlan rp = plan_rank(src, to1, Region::whole(src.shape()), rank, 2);
    const Prediction p = predict(rp, "p2p", m);
    EXPECT_DOUBLE_EQ(p.memcpy, 0) << "rank " << rank;  // nothing packed, unpacked or copied locally
    EXPECT_DOUBLE_EQ(p.comm, f.exchange(bytes)) << "rank " << rank;
    // alltoallv packs and unpacks as before
    EXPECT_NEAR(predict(rp, "alltoallv", m).memcpy, static_cast<double>(bytes) * f.copy, 1e-12) << "rank " << rank;
  }
  const RankPlan r0 = plan_rank(src, rows, Region::whole(src.shape()), 0, 2);
  const RankPlan r1 = plan_rank(src, rows, Region::whole(src.shape()), 1, 2);
  EXPECT_NEAR(predict(r0, "p2p", m).memcpy, static_cast<double>(r0.stats.bytes_sent + r0.stats.bytes_local) * f.copy,
              1e-12);
  EXPECT_NEAR(predict(r1, "p2p", m).memcpy, static_cast<double>(r1.stats.bytes_received) * f.copy, 1e-12);
}

}  // namespace

namespace {

// A transpose (a permuted region) is packed and copied across, in walk_run's
// blocks (loops_of: cross), at the measured transposed rate for its element
// size; its unpacking (target rows) at the row curve; alltoallw's engine reads
// the transposed rows at the datatype transposes' rate. By hand on the flat
// machine with the two transposed curves, and the older model (one element's
// row on the row curves) where a calibration file has none.
TEST(Cost, TransposesAreChargedAtTheTransposedRates) {
  const Flat f;
  Machine m = f.machine();
  const double across = 1 / 2e9, engine = 1 / 0.5e9;
  m.transpose = {{4, 8, 16}, {1 / 1e9, across, 1 / 3e9}};
  m.datatype_transpose = {{4, 8}, {1 / 0.2e9, engine}};
  const Machine old = f.machine();
  const Layout src = Layout::parse("400x300 tile=50x50 block_cyclic grid=1x2 storage=local_array");
  const Layout dst = Layout::parse("300x400 tile=50x50 block_cyclic grid=1x2 storage=local_array");
  const Region tr = Region::parse("300x400 transpose");
  for (int rank : {0, 1}) {
    const RankPlan rp = plan_rank(src, dst, tr, rank, 2);
    ASSERT_GT(rp.stats.bytes_sent, 0);
    ASSERT_GT(rp.stats.bytes_local, 0);
    // The source side of every piece is read across, the target's is not.
    for (const PeerPlan& pp : rp.sends)
      for (const Segment& g : pp.segments) ASSERT_TRUE(detail::runs_of(g, 8).cross);
    for (const PeerPlan& pp : rp.receives)
      for (const Segment& g : pp.segments) ASSERT_FALSE(detail::runs_of(g, 8).cross);
    for (const LocalCopy& c : rp.locals) ASSERT_TRUE(detail::runs_of(c, 8).cross);
    const auto b = [](index_t n) { return static_cast<double>(n); };
    const double sent = b(rp.stats.bytes_sent), received = b(rp.stats.bytes_received), local = b(rp.stats.bytes_local);
    // p2p: sends packed and local pieces copied across, receives unpacked along rows.
    EXPECT_NEAR(predict(rp, "p2p", m).memcpy, (sent + local) * across + received * f.copy, 1e-12) << "rank " << rank;
    EXPECT_NEAR(predict(rp, "p2p", old).memcpy, (sent + local + received) * f.copy, 1e-12) << "rank " << rank;
    // shm on the heap: a transpose's rings are packed and its pieces copied
    // segment by segment (never in the walk's source order), across the same.
    EXPECT_NEAR(predict(rp, "shm", m, true).memcpy - predict(rp, "shm", old, true).memcpy,
                (sent + local) * (across - f.copy), 1e-12)
        << "rank " << rank;
    // alltoallw: half of what the engine's transposed rows take beyond the wire on
    // the way out (the received rows cost the flat machine nothing beyond it), and
    // the local pieces copied across.
    double out = 0;
    for (const PeerPlan& pp : rp.sends) {
      const double wire = f.exchange(pp.bytes) / b(pp.bytes);
      out += b(pp.bytes) * std::max(0.0, engine - wire) / 2;
    }
    const Prediction w = predict(rp, "alltoallw", m);
    EXPECT_NEAR(w.memcpy, local * across, 1e-12) << "rank " << rank;
    EXPECT_NEAR(w.comm - predict(rp, "alltoallw", old).comm, out, 1e-9) << "rank " << rank;
  }
}

}  // namespace
