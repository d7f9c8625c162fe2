#include "topo/search.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <iterator>
#include <unordered_map>

#include "topo/bandwidth.h"

namespace cohort::topo {
namespace {

// Per-channel bandwidths tried, best first: a channel is one thread block's worth of copy
// engine, which tops out near 60 GB/s.
constexpr double kChannelSpeeds[] = {60, 50, 40, 30, 24, 20, 15, 12, 10, 8, 6, 5, 4, 3, 2, 1, 0.5};
constexpr double kMaxChannelSpeed = 60;
// More, slower channels replace fewer, faster ones only for a clear gain in total bandwidth:
// each channel costs a thread block and a share of the buffers.
constexpr double kClearGain = 1.1;

// The table's speeds plus the rates of the host's own links (a 100 Gb/s NIC's 12.5 GB/s,
// a PCIe link's 25.2) that fall below the table's top, fastest first.
std::vector<double> candidate_speeds(const Topology &topo) {
  std::vector<double> speeds(std::begin(kChannelSpeeds), std::end(kChannelSpeeds));
  for (const Link &link : topo.links) {
    if (link.bw < kMaxChannelSpeed) speeds.push_back(link.bw);
  }
  std::sort(speeds.begin(), speeds.end(), std::greater<double>());
  speeds.erase(
      std::unique(speeds.begin(), speeds.end(), [](double a, double b) { return a - b < 1e-9; }),
      speeds.end());
  return speeds;
}

// Each link's reverse direction (-1 where there is none), found once rather than by a walk
// over a node's links at every look.
std::vector<int> reverse_links(const Topology &topo) {
  std::unordered_map<uint64_t, int> by_ends;
  auto key = [](int from, int to) {
    return static_cast<uint64_t>(static_cast<uint32_t>(from)) << 32 | static_cast<uint32_t>(to);
  };
  for (size_t l = 0; l < topo.links.size(); ++l) {
    by_ends.emplace(key(topo.links[l].from, topo.links[l].to), static_cast<int>(l));
  }
  std::vector<int> reverse(topo.links.size(), -1);
  for (size_t l = 0; l < topo.links.size(); ++l) {
    auto found = by_ends.find(key(topo.links[l].to, topo.links[l].from));
    if (found != by_ends.end()) reverse[l] = found->second;
  }
  return reverse;
}

class RingSearch {
 public:
  RingSearch(const Topology &topo, const Paths &paths, const std::vector<int> &gpus,
             const SearchOptions &options)
      : topo_(topo), paths_(paths), gpus_(gpus), options_(options) {
    for (const Link &link : topo.links) capacity_.push_back(link.bw);
    reverse_ = reverse_links(topo);
    nets_ = rank_nets();
    islands_ = direct_islands();
  }

  // The most rings at `bw` there can be: each leaves every GPU in use once, by one of its
  // links, so no more than the GPU whose links hold the fewest `bw` shares.
  int ring_bound(double bw) const {
    int bound = options_.max_channels;
    for (int g : gpus_) {
      int shares = 0;
      for (int l : topo_.nodes[g].links) {
        shares += static_cast<int>(std::min((capacity_[l] + 1e-9) / bw, 1.0 * kMaxChannels));
      }
      bound = std::min(bound, shares);
    }
    return bound;
  }

  // At equal bandwidth, the rings with the fewest indirect hops (routes of more than one link).
  // The rings at `bw` as first found; where they take more indirect hops than the direct
  // islands force, a second search in what is left of `work` with each ring taking as few as
  // it can, kept with more rings, or as many and fewer indirect hops in all.
  NodeGraph at_speed(double bw, long work) {
    const long before = work_left_;
    NodeGraph first = rings_at(bw, work, false);
    const int had = indirect_hops(first);
    if (had <= static_cast<int>(first.rings.size()) * least_indirect()) return first;
    NodeGraph direct = rings_at(bw, work - (before - work_left_), true);
    if (direct.rings.size() > first.rings.size() ||
        (direct.rings.size() == first.rings.size() && indirect_hops(direct) < had)) {
      return direct;
    }
    return first;
  }

  // The budget: hop evaluations (a candidate hop's route weighed against the bandwidth left)
  // the search may still make.  Each costs about the same, where a recursion step can weigh
  // every GPU in use.
  long work_left_ = 0;

 private:
  // Charges `hops` evaluations; false once the budget is spent.
  bool spend(long hops) {
    work_left_ -= hops;
    return work_left_ >= 0;
  }

  // As many rings at `bw` as fit; empty when none does.  Spends at most `work` of the budget.
  NodeGraph rings_at(double bw, long work, bool fewest_indirect) {
    fewest_indirect_ = fewest_indirect;
    remaining_ = capacity_;
    NodeGraph graph;
    graph.bw = bw;
    long reserve = std::max(work_left_ - work, 0L);
    work_left_ -= reserve;
    while (static_cast<int>(graph.rings.size()) < options_.max_channels && work_left_ > 0 &&
           connected(bw)) {
      std::vector<int> ring;
      int net = -1;
      if (!next_ring(bw, static_cast<int>(graph.rings.size()), &ring, &net)) break;
      graph.rings.push_back(ring);
      graph.nets.push_back(net);
    }
    work_left_ += reserve;
    return graph;
  }

  bool leaves_host() const { return options_.cross_node && !nets_.empty(); }

  // Network ports, closest to the GPUs first.
  std::vector<int> rank_nets() const {
    std::vector<int> nets = topo_.of_type(NodeType::kNet);
    auto best = [&](int net) {
      PathType type = PathType::kDis;
      for (int g : gpus_) type = std::min(type, paths_.get(net, g).type);
      return type;
    };
    std::stable_sort(nets.begin(), nets.end(), [&](int a, int b) { return best(a) < best(b); });
    return nets;
  }

  // A ring at `bw` needs every GPU reachable from every other over links with `bw` left, and
  // across hosts a network port with `bw` left both ways: a cheap test that spares the search
  // hopeless speeds.
  bool connected(double bw) const {
    if (options_.cross_node && !nets_.empty() && !any_port_free(bw)) return false;
    const std::vector<int> &must = gpus_;
    for (bool forward : {true, false}) {
      std::vector<bool> seen(topo_.nodes.size(), false);
      std::vector<int> stack = {must[0]};
      seen[must[0]] = true;
      while (!stack.empty()) {
        int node = stack.back();
        stack.pop_back();
        for (int l : topo_.nodes[node].links) {
          const Link &out = topo_.links[l];
          const int back = reverse_[l];
          double left = forward ? remaining_[l] : (back >= 0 ? remaining_[back] : 0);
          if (seen[out.to] || left < bw - 1e-9) continue;
          seen[out.to] = true;
          stack.push_back(out.to);
        }
      }
      for (int node : must) {
        if (!seen[node]) return false;
      }
    }
    return true;
  }

  bool any_port_free(double bw) const {
    for (int net : nets_) {
      for (int l : topo_.nodes[net].links) {
        const int back = reverse_[l];
        if (remaining_[l] >= bw - 1e-9 && back >= 0 && remaining_[back] >= bw - 1e-9) return true;
      }
    }
    return false;
  }

  bool fits(int from, int to, double bw) const {
    if (from != to && paths_.get(from, to).type == PathType::kDis) return false;
    return free_bw(from, to) >= bw - 1e-9;
  }

  void take(int from, int to, double bw) {
    paths_.for_each_link(from, to, [&](int l) { remaining_[l] -= bw; });
  }

  // What is left of the narrowest link from -> to after the rings placed so far.
  double free_bw(int from, int to) const {
    double free = 1e300;
    paths_.for_each_link(from, to, [&](int l) { free = std::min(free, remaining_[l]); });
    return free;
  }

  // GPUs ordered as a ring's next hop from `from`: best path type, then the most bandwidth
  // still free (so later rings take the routes earlier ones left), then index.  Weighs every
  // candidate: the caller pays for them.
  std::vector<int> hop_order(int from, const std::vector<int> &candidates) const {
    std::vector<std::pair<int, double>> keyed;
    for (int g : candidates) keyed.push_back({g, free_bw(from, g)});
    std::stable_sort(keyed.begin(), keyed.end(), [&](const auto &a, const auto &b) {
      PathType x = paths_.get(from, a.first).type;
      PathType y = paths_.get(from, b.first).type;
      if (x != y) return x < y;
      return a.second > b.second + 1e-9;
    });
    std::vector<int> order;
    for (const auto &k : keyed) order.push_back(k.first);
    return order;
  }

  bool next_ring(double bw, int channel, std::vector<int> *ring, int *net) {
    *net = -1;
    if (!leaves_host()) return allowing_indirect([&] { return ring_from(gpus_[0], -1, bw, ring); });
    // Widen the allowed GPU-to-NIC path type only when no port has a ring at the closer one.
    for (int tier = 0; tier <= static_cast<int>(PathType::kSys); ++tier) {
      const auto type = static_cast<PathType>(tier);
      auto at_tier = [&] { return ring_through_a_port(bw, channel, type, ring, net); };
      if (allowing_indirect(at_tier)) return true;
      if (work_left_ <= 0) return false;
    }
    return false;
  }

  // The channel's own port first, then the others in turn.
  bool ring_through_a_port(double bw, int channel, PathType tier, std::vector<int> *ring,
                           int *net) {
    for (size_t k = 0; k < nets_.size(); ++k) {
      int candidate = nets_[(channel + k) % nets_.size()];
      if (ring_through_net(candidate, bw, tier, ring)) {
        *net = candidate;
        return true;
      }
      if (work_left_ <= 0) return false;
    }
    return false;
  }

  // A hop is indirect when its route is more than one link (through a GPU, a PCI switch, a
  // CPU or the NVSwitch fabric).
  bool indirect(int from, int to) const { return paths_.get(from, to).hops > 1; }

  // Groups of the GPUs in use that direct hops join: a ring needs an indirect hop to go from
  // one group to the next.
  int direct_islands() const {
    std::vector<int> island(gpus_.size(), -1);
    int count = 0;
    for (size_t start = 0; start < gpus_.size(); ++start) {
      if (island[start] >= 0) continue;
      island[start] = count;
      std::vector<size_t> stack = {start};
      while (!stack.empty()) {
        const int a = gpus_[stack.back()];
        stack.pop_back();
        for (size_t i = 0; i < gpus_.size(); ++i) {
          if (island[i] >= 0 || (indirect(a, gpus_[i]) && indirect(gpus_[i], a))) continue;
          island[i] = count;
          stack.push_back(i);
        }
      }
      ++count;
    }
    return count;
  }

  // Indirect hops every ring must take: one into each direct island but the first when the
  // ring leaves the host, one into each when it closes on itself.
  int least_indirect() const {
    if (islands_ == 1) return 0;
    return leaves_host() ? islands_ - 1 : islands_;
  }

  int indirect_hops(const NodeGraph &graph) const {
    int count = 0;
    for (size_t c = 0; c < graph.rings.size(); ++c) {
      const std::vector<int> &ring = graph.rings[c];
      const size_t hops = graph.nets[c] >= 0 ? ring.size() - 1 : ring.size();
      for (size_t i = 0; i < hops && ring.size() > 1; ++i) {
        count += indirect(ring[i], ring[(i + 1) % ring.size()]);
      }
    }
    return count;
  }

  // Runs `attempt` with no limit on indirect hops, or, when the fewest are wanted, allowing
  // the least there can be, then one more at a time while the limit turned a hop away.
  template <typename Attempt>
  bool allowing_indirect(Attempt attempt) {
    const int hops = static_cast<int>(gpus_.size()) - (leaves_host() ? 1 : 0);
    for (int allowed = fewest_indirect_ ? least_indirect() : hops; allowed <= hops; ++allowed) {
      indirect_left_ = allowed;
      capped_ = false;
      if (attempt()) return true;
      if (work_left_ <= 0 || !capped_) return false;
    }
    return false;
  }

  // Enter at a GPU within `tier` of `net`, leave from another, closest first.
  bool ring_through_net(int net, double bw, PathType tier, std::vector<int> *ring) {
    if (!spend(static_cast<long>(gpus_.size()))) return false;
    std::vector<int> ends;
    for (int g : hop_order(net, gpus_)) {
      if (paths_.get(net, g).type <= tier && paths_.get(g, net).type <= tier) ends.push_back(g);
    }
    for (int entry : ends) {
      if (!spend(1)) break;
      if (!fits(net, entry, bw)) continue;
      take(net, entry, bw);
      for (int exit : ends) {
        // Pairs within a narrower tier failed already.
        bool new_at_tier =
            std::max(paths_.get(net, entry).type, paths_.get(exit, net).type) == tier;
        if (!new_at_tier || (exit == entry && gpus_.size() > 1)) continue;
        if (!spend(1)) break;
        if (!fits(exit, net, bw)) continue;
        take(exit, net, bw);
        if (ring_from(entry, exit, bw, ring)) return true;
        take(exit, net, -bw);
        if (work_left_ <= 0) break;
      }
      take(net, entry, -bw);
      if (work_left_ <= 0) break;
    }
    return false;
  }

  // A path through every GPU from `entry`, ending at `exit` (or, with exit -1, closing the
  // cycle back to entry), every hop fitting `bw`.
  bool ring_from(int entry, int exit, double bw, std::vector<int> *ring) {
    ring->assign(1, entry);
    std::vector<bool> used(topo_.nodes.size(), false);
    used[entry] = true;
    if (exit >= 0) used[exit] = true;
    if (extend(ring, &used, exit, bw)) return true;
    ring->clear();
    return false;
  }

  bool extend(std::vector<int> *ring, std::vector<bool> *used, int exit, double bw) {
    const int last = ring->back();
    const size_t placed = ring->size() + (exit >= 0 && exit != (*ring)[0] ? 1 : 0);
    if (placed == gpus_.size()) return close(ring, exit, bw);
    std::vector<int> free;
    for (int g : gpus_) {
      if (!(*used)[g]) free.push_back(g);
    }
    if (!spend(static_cast<long>(free.size()))) return false;
    for (int next : hop_order(last, free)) {
      if (!spend(1)) return false;
      const int cost = indirect(last, next) ? 1 : 0;
      if (cost > indirect_left_) capped_ = true;
      if (cost > indirect_left_ || !fits(last, next, bw)) continue;
      take(last, next, bw);
      indirect_left_ -= cost;
      (*used)[next] = true;
      ring->push_back(next);
      if (extend(ring, used, exit, bw)) return true;
      ring->pop_back();
      (*used)[next] = false;
      indirect_left_ += cost;
      take(last, next, -bw);
    }
    return false;
  }

  bool close(std::vector<int> *ring, int exit, double bw) {
    const int last = ring->back();
    const int to = exit < 0 ? (*ring)[0] : exit;  // exit -1: close the cycle
    if (to == last) return true;
    if (indirect(last, to) && indirect_left_ == 0) {
      capped_ = true;
      return false;
    }
    if (!spend(1) || !fits(last, to, bw)) return false;
    take(last, to, bw);
    if (exit >= 0) ring->push_back(exit);
    return true;
  }

  const Topology &topo_;
  const Paths &paths_;
  const std::vector<int> &gpus_;
  const SearchOptions &options_;
  std::vector<double> capacity_;
  std::vector<double> remaining_;
  std::vector<int> reverse_;  // per link, the opposite direction
  std::vector<int> nets_;
  int islands_ = 1;
  bool fewest_indirect_ = false;
  int indirect_left_ = 0;  // indirect hops the ring being built may still take
  bool capped_ = false;    // the allowance turned a hop away
};

// Deterministic ring when the search finds nothing: GPUs by id, one channel, through the first
// network port when the ring leaves the host.
NodeGraph fallback_graph(const Topology &topo, const std::vector<int> &gpus, bool cross_node) {
  NodeGraph graph;
  std::vector<int> ring = gpus;
  std::sort(ring.begin(), ring.end(),
            [&](int a, int b) { return topo.nodes[a].id < topo.nodes[b].id; });
  graph.rings.push_back(ring);
  std::vector<int> nets = topo.of_type(NodeType::kNet);
  graph.nets.push_back(cross_node && !nets.empty() ? nets[0] : -1);
  graph.fallback = true;
  return graph;
}

}  // namespace

void measure_graph(const Topology &topo, const Paths &paths, NodeGraph *graph) {
  (void)topo;
  double bw = kLocalBw;
  PathType intra = PathType::kLoc;
  PathType net_type = PathType::kLoc;
  for (size_t c = 0; c < graph->rings.size(); ++c) {
    const std::vector<int> &ring = graph->rings[c];
    int net = c < graph->nets.size() ? graph->nets[c] : -1;
    size_t hops = net >= 0 ? ring.size() - 1 : ring.size();
    for (size_t i = 0; i < hops && ring.size() > 1; ++i) {
      const Path &path = paths.get(ring[i], ring[(i + 1) % ring.size()]);
      bw = std::min(bw, path.bw);
      intra = std::max(intra, path.type);
    }
    if (net >= 0) {
      for (const Path *path : {&paths.get(net, ring.front()), &paths.get(ring.back(), net)}) {
        bw = std::min(bw, path->bw);
        net_type = std::max(net_type, path->type);
      }
    }
  }
  if (graph->bw <= 0 || graph->bw > bw) graph->bw = bw;
  graph->intra_type = intra;
  graph->net_type = net_type;
}

NodeGraph search_rings(const Topology &topo, const Paths &paths, const std::vector<int> &gpus,
                       const SearchOptions &options) {
  if (gpus.empty()) return NodeGraph{};
  const bool has_net = !topo.of_type(NodeType::kNet).empty();
  if (gpus.size() == 1 && (!options.cross_node || !has_net)) {
    // Ranks sharing one GPU copy within its memory: two channels, one per tree.
    NodeGraph graph;
    graph.rings.assign(std::min(2, options.max_channels), gpus);
    graph.nets.assign(graph.rings.size(), -1);
    graph.bw = kLocalBw / graph.rings.size();
    return graph;
  }
  RingSearch search(topo, paths, gpus, options);
  search.work_left_ = options.budget;
  NodeGraph best;
  std::vector<double> speeds = candidate_speeds(topo);
  // Each speed gets a share of the budget, so one hard speed cannot starve the slower ones.
  const long share = std::max(options.budget / static_cast<long>(speeds.size()), 1L);
  for (double speed : speeds) {
    if (search.work_left_ <= 0) break;
    const double to_beat = best.rings.empty() ? 0 : kClearGain * best.rings.size() * best.bw;
    // Spare the search a speed whose every ring together could not replace the best.
    if (search.ring_bound(speed) * speed <= to_beat) continue;
    NodeGraph graph = search.at_speed(speed, share);
    if (graph.rings.size() * speed > to_beat) best = graph;
    // Slower speeds cannot beat the best once even a full set of channels would not.
    if (best.rings.size() * best.bw >= options.max_channels * speed - 1e-9) break;
  }
  if (best.rings.empty()) {
    best = fallback_graph(topo, gpus, options.cross_node);
    best.bw = 0;
  }
  best.steps = options.budget - std::max(search.work_left_, 0L);
  measure_graph(topo, paths, &best);
  return best;
}

}  // namespace cohort::topo
