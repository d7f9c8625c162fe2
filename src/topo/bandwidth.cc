#include "topo/bandwidth.h"

#include "core/status.h"

namespace cohort::topo {
namespace {

// Per direction and link: the raw rate, then what NCCL-style collectives reach (NCCL's own
// model uses the same effective figures).
struct NvlinkRow {
  int min_sm;
  const char *generation;
  double raw_gbs;
  double bw;
};
constexpr NvlinkRow kNvlink[] = {
    {100, "NVLink5", 50.0, 40.1},  // B200, GB200: 18 links
    {90, "NVLink4", 25.0, 20.6},   // H100, H200: 18 links
    {80, "NVLink3", 25.0, 20.0},   // A100: 12 links
    {70, "NVLink2", 25.0, 20.0},   // V100: 6 links
    {60, "NVLink1", 20.0, 18.0},   // P100: 4 links
};

// PCIe per lane and direction after line coding; collectives reach ~80% of it.
constexpr double kPciLaneGbs[] = {0, 0.25, 0.5, 0.985, 1.969, 3.938, 7.563};
constexpr int kPciMaxGen = 6;
constexpr double kPciEfficiency = 0.8;

struct CpuRow {
  const char *vendor;
  double bw;
};
constexpr CpuRow kCpuLinks[] = {
    {"intel", 10.0},   // UPI (Skylake and later)
    {"amd", 16.0},     // xGMI / Infinity Fabric
    {"nvidia", 40.0},  // Grace NVLink-C2C between sockets
};
constexpr double kUnknownCpuLinkBw = 6.0;  // QPI-class: the slowest interconnect we know

}  // namespace

double nvlink_bw(int sm) {
  for (const NvlinkRow &row : kNvlink) {
    if (sm >= row.min_sm) return row.bw;
  }
  return kNvlink[sizeof(kNvlink) / sizeof(kNvlink[0]) - 1].bw;
}

const char *nvlink_generation(int sm) {
  for (const NvlinkRow &row : kNvlink) {
    if (sm >= row.min_sm) return row.generation;
  }
  return "NVLink";
}

double pci_bw(int gen, int width) {
  if (gen <= 0 || gen > kPciMaxGen) gen = 3;
  if (width <= 0) width = 16;
  return kPciLaneGbs[gen] * width * kPciEfficiency;
}

double cpu_link_bw(const std::string &vendor) {
  for (const CpuRow &row : kCpuLinks) {
    if (vendor == row.vendor) return row.bw;
  }
  return kUnknownCpuLinkBw;
}

double nic_bw(double gbps) { return (gbps > 0 ? gbps : kDefaultNicGbps) / 8.0; }

std::string bandwidth_table_text() {
  std::string out = "bandwidth model (GB/s per direction, as collectives use it):\n";
  for (const NvlinkRow &row : kNvlink) {
    out += strprintf("  %-8s sm_%-3d+ %5.1f per link (raw %.1f)\n", row.generation, row.min_sm,
                     row.bw, row.raw_gbs);
  }
  for (int gen = 3; gen <= kPciMaxGen; ++gen) {
    out += strprintf("  PCIe Gen%d x16   %5.1f (%.0f%% of %.1f raw)\n", gen, pci_bw(gen, 16),
                     kPciEfficiency * 100, kPciLaneGbs[gen] * 16);
  }
  for (const CpuRow &row : kCpuLinks) {
    out += strprintf("  CPU link %-6s  %5.1f\n", row.vendor, row.bw);
  }
  out += strprintf("  CPU link other   %5.1f\n", kUnknownCpuLinkBw);
  out += strprintf("  NIC              speed / 8 (unknown speed: %.0f Gb/s)\n", kDefaultNicGbps);
  out += strprintf("  same GPU         %5.0f\n", kLocalBw);
  return out;
}

}  // namespace cohort::topo
