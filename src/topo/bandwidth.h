// The bandwidth constants of the topology model, in one table.  All figures are GB/s per
// direction, as a collective can use them (below the raw signalling rate), so that the graph
// search compares NVLink, PCIe, CPU interconnects and NICs on one scale.
#pragma once

#include <string>

namespace cohort::topo {

// One NVLink of a GPU of compute capability `sm` (x10), e.g. 20.6 for sm_90.
double nvlink_bw(int sm);
// One NVLink generation's name for messages: "NVLink4" for sm_90.
const char *nvlink_generation(int sm);
// A PCIe link of `gen` x `width`; unknown gen or width (0) assume Gen3 x16.
double pci_bw(int gen, int width);
// The CPU-CPU interconnect of `vendor` ("intel", "amd", ...; anything else: the slowest).
double cpu_link_bw(const std::string &vendor);
// A NIC port of `gbps` Gb/s; 0 (unknown) assumes kDefaultNicGbps.
double nic_bw(double gbps);
// Two ranks on one GPU move data through its memory.
constexpr double kLocalBw = 5000.0;
constexpr double kDefaultNicGbps = 100.0;

// Renders the table for `cohort_info --topo`.
std::string bandwidth_table_text();

}  // namespace cohort::topo
