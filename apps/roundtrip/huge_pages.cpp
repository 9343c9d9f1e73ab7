// Transparent huge pages for the round trip's fresh working copies (huge_pages.hpp).
#include "roundtrip/huge_pages.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

namespace redist::apps::detail {

std::uint64_t free_in_blocks(const std::string& buddyinfo, std::uint64_t page, std::uint64_t block) {
  std::uint64_t sum = 0;
  std::istringstream lines(buddyinfo);
  for (std::string line; std::getline(lines, line);) {
    const auto zone = line.find("zone");
    if (zone == std::string::npos) continue;
    std::istringstream in(line.substr(zone + 4));
    std::string name;
    in >> name;
    std::uint64_t bytes = page, count = 0;  // blocks of order 0, 1, ...: page << k bytes
    while (in >> count) {
      if (bytes >= block) sum += count * bytes;
      bytes *= 2;
    }
  }
  return sum;
}

bool balloon_reports(const std::string& device, const std::string& features) {
  constexpr std::size_t kReporting = 5;  // VIRTIO_BALLOON_F_REPORTING
  return std::strtol(device.c_str(), nullptr, 16) == 5 && features.size() > kReporting &&
         features[kReporting] == '1';
}

std::string selected_mode(const std::string& text) {
  const auto open = text.find('['), close = text.find(']');
  if (open == std::string::npos || close == std::string::npos || close < open) return {};
  return text.substr(open + 1, close - open - 1);
}

namespace {
std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::uint64_t page_size() {
  const long b = sysconf(_SC_PAGESIZE);
  return b > 0 ? static_cast<std::uint64_t>(b) : 4096;
}

int node_ranks() {
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "SLURM_NTASKS_PER_NODE"})
    if (const char* v = std::getenv(name)) {
      const long n = std::strtol(v, nullptr, 10);
      if (n > 0) return static_cast<int>(n);
    }
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);  // unknown: as many ranks as CPUs
  return cpus > 0 ? static_cast<int>(cpus) : 1;
}

HugePageMachine probe() {
  HugePageMachine m;
  try {
    m.node_ranks = node_ranks();
#ifdef MADV_HUGEPAGE
    const std::string thp = "/sys/kernel/mm/transparent_hugepage/";
    const std::string mode = selected_mode(read_text(thp + "enabled"));
    if (mode == "always" || mode == "madvise") {
      m.bytes = std::strtoull(read_text(thp + "hpage_pmd_size").c_str(), nullptr, 10);
      if (m.bytes == 0) m.bytes = 2u << 20;
      m.always = mode == "always";
    }
#endif
    std::error_code ec;
    std::filesystem::directory_iterator dev("/sys/bus/virtio/devices", ec), end;
    for (; !ec && dev != end; dev.increment(ec))
      m.reported = m.reported || balloon_reports(read_text(dev->path() / "device"), read_text(dev->path() / "features"));
  } catch (const std::exception&) {
    m.bytes = 0;  // what could not be read: no huge pages
  }
  return m;
}

// The size from which a buffer is a mapping of its own: two huge pages.
std::size_t own_mapping_from() {
  const std::uint64_t huge = huge_page_machine().bytes;
  return 2 * static_cast<std::size_t>(huge ? huge : 2u << 20);
}

std::size_t mapped_bytes(std::size_t bytes) {
  const std::size_t unit = own_mapping_from() / 2;
  return (bytes + unit - 1) / unit * unit;
}
}  // namespace

const HugePageMachine& huge_page_machine() {
  static const HugePageMachine machine = probe();
  return machine;
}

bool want_huge_pages(HugePages mode, std::size_t bytes) {
  if (mode == HugePages::never) return false;
  const HugePageMachine& m = huge_page_machine();
  if (m.bytes == 0 || bytes < 2 * m.bytes) return false;
  if (mode == HugePages::always) return true;
  if (m.reported) return false;
  try {
    const std::uint64_t free = free_in_blocks(read_text("/proc/buddyinfo"), page_size(), m.bytes);
    return free / static_cast<std::uint64_t>(std::max(m.node_ranks, 1)) >= bytes;
  } catch (const std::exception&) {
    return false;
  }
}

std::byte* allocate_fresh(std::size_t bytes, HugePages mode) {
  if (bytes < own_mapping_from())
    return static_cast<std::byte*>(std::aligned_alloc(64, std::max<std::size_t>(64, (bytes + 63) / 64 * 64)));
  // A mapping of its own, whatever malloc's threshold: the advice then covers this
  // buffer alone, and its pages are fresh.
  const bool huge = want_huge_pages(mode, bytes);
  const std::size_t length = mapped_bytes(bytes), align = huge ? own_mapping_from() / 2 : 0;
  void* m = mmap(nullptr, length + align, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return nullptr;
  auto* p = static_cast<std::byte*>(m);
  if (align > 0) {  // a huge page's boundary: the head and the tail beyond the buffer go back
    const auto at = reinterpret_cast<std::uintptr_t>(p);
    const std::size_t head = (align - at % align) % align;
    if (head > 0) munmap(p, head);
    if (align - head > 0) munmap(p + head + length, align - head);
    p += head;
  }
#ifdef MADV_HUGEPAGE
  if (huge)
    madvise(p, length, MADV_HUGEPAGE);  // advice: refused, the pages stay small
  else if (huge_page_machine().always)
    madvise(p, length, MADV_NOHUGEPAGE);  // the kernel would give them unasked
#endif
  return p;
}

void free_fresh(std::byte* p, std::size_t bytes) {
  if (!p) return;
  if (bytes < own_mapping_from()) std::free(p);
  else munmap(p, mapped_bytes(bytes));
}

}  // namespace redist::apps::detail
