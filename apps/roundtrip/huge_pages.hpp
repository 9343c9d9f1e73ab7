// Transparent huge pages for the round trip's fresh working copies
// (apps::Options::huge_pages): where the kernel hands them out on madvise, a
// fresh copy faults in a page per 2 MiB instead of per 4 KiB. What the machine
// offers is read from /sys and /proc; the parsers take the files' text, so that
// the tests can give them any machine's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "redist/apps.hpp"

namespace redist::apps::detail {

// Bytes free in the kernel's buddy lists in blocks of at least `block` bytes, from
// the text of /proc/buddyinfo (a line per zone: "Node 0, zone Normal n0 n1 ...",
// nk free blocks of 2^k pages of `page` bytes). Lines it cannot read count nothing.
std::uint64_t free_in_blocks(const std::string& buddyinfo, std::uint64_t page, std::uint64_t block);

// Does a virtio device take freed memory back: a balloon (device id 5, sysfs
// "device" text "0x0005") whose "features" text ('0' or '1' per feature bit, bit 0
// first) has VIRTIO_BALLOON_F_REPORTING (bit 5)? The guest then reports free blocks
// of pageblock order (2 MiB here) to the hypervisor, which drops their memory: the
// next huge page taken from one faults each of its pages in again on the host.
bool balloon_reports(const std::string& device, const std::string& features);

// The mode selected in the text of /sys/kernel/mm/transparent_hugepage/enabled
// ("always [madvise] never" -> "madvise"); empty when none is marked.
std::string selected_mode(const std::string& text);

// What this machine offers, read once per process (never throws: what cannot be
// read counts as not offered).
struct HugePageMachine {
  std::uint64_t bytes = 0;  // a huge page's size where madvise(MADV_HUGEPAGE) gets them, else 0
  bool always = false;      // the kernel gives them unasked (enabled = always): refusing needs MADV_NOHUGEPAGE
  bool reported = false;    // a balloon reports free pages (balloon_reports)
  int node_ranks = 1;       // ranks on this node (the MPI launcher's local size; else the CPUs)
};
const HugePageMachine& huge_page_machine();

// Should a fresh buffer of `bytes` be madvise'd into huge pages? never: no. always:
// where the kernel gives them on madvise and the buffer spans two at least.
// automatic: that, and no balloon reports free pages, and the free memory in blocks
// of a huge page's size covers `bytes` for every rank of the node (the fault then
// takes a free block instead of compacting memory). Never throws.
bool want_huge_pages(HugePages mode, std::size_t bytes);

// Fresh 64-byte aligned storage of at least `bytes` (at least 64); null when
// allocation fails. A buffer of two huge pages or more (2 MiB where the kernel has
// none) is a mapping of its own (mmap): in huge pages, aligned to one, where
// want_huge_pages says so, else in base pages (MADV_NOHUGEPAGE where the kernel
// would give huge ones unasked); a smaller one comes from malloc. Free it with
// free_fresh and the same `bytes`. Never throws.
std::byte* allocate_fresh(std::size_t bytes, HugePages mode);
void free_fresh(std::byte* p, std::size_t bytes);

}  // namespace redist::apps::detail
