// The pure steps of detection (detect.cc), exposed for unit tests: parsers of the text that
// sysfs and hwloc give, and the merging of the CUDA view into the hwloc-built model.
#pragma once

#include <string>

#include "topo/detect_cuda.h"
#include "topo/topo.h"

namespace cohort::topo {

// PCIe generation of a current_link_speed ("16.0 GT/s PCIe" -> 4); 0 when unknown.
int pci_gen_from_speed(const std::string &text);
// Lanes of a current_link_width ("16" -> 16); 0 when unknown.
int pci_width_from_text(const std::string &text);
// Gb/s of an InfiniBand port's rate ("400 Gb/sec (4X NDR)" -> 400); 0 when unknown.
double ib_rate_gbps(const std::string &text);
// Gb/s of /sys/class/net/<dev>/speed, which is Mb/s ("100000" -> 100); 0 when unknown (-1).
double net_speed_gbps(const std::string &text);
// The model's CPU vendor for hwloc's CPUVendor ("GenuineIntel" -> "intel"); lower case
// otherwise, empty when unknown.
std::string cpu_vendor_name(const std::string &cpu_vendor);
// The model's arch for uname's machine ("ppc64le" -> "ppc64").
std::string cpu_arch_name(const std::string &machine);

// Gives the model's GPUs their CUDA identity (sm, uuid, ordinal; matched by bus id) and its
// no_p2p pairs.  A GPU CUDA sees outside the PCI tree is added, attached to the CPU of its
// NUMA node (or the first CPU), with an assumption.
void merge_cuda_gpus(const CudaGpus &cuda, Topology *topo);

// Two or more GPUs, none below a PCI switch: every GPU hangs off a CPU's host bridge.
bool is_flat_pci_tree(const Topology &topo);

}  // namespace cohort::topo
