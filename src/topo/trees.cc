#include "topo/trees.h"

#include <algorithm>

namespace cohort::topo {
namespace {

int lowest_bit(int p) { return p & -p; }

// Node index (0-based) at `position` of tree `tree`, and back.
int node_at(int position, int n, int tree) {
  if (tree == 0) return position - 1;
  if (n % 2 == 0) return n - position;  // mirror: position p holds node n + 1 - p (1-based)
  return (position + n - 2) % n;        // shift: node i sits at position i + 2 (mod n)
}

}  // namespace

std::vector<TreeNode> binary_tree(int n, int tree) {
  std::vector<TreeNode> nodes(std::max(n, 0));
  for (int p = 2; p <= n; p += 2) {  // odd positions have no children
    int b = lowest_bit(p);
    int parent = node_at(p, n, tree);
    int left = p - b / 2;
    int c = b / 2;
    while (c > 0 && p + c > n) c /= 2;
    int children[2] = {left, c > 0 ? p + c : 0};
    for (int k = 0; k < 2; ++k) {
      if (children[k] == 0) continue;
      int child = node_at(children[k], n, tree);
      nodes[parent].child[k] = child;
      nodes[child].parent = parent;
    }
  }
  return nodes;
}

int tree_depth(const std::vector<TreeNode> &tree) {
  int deepest = 0;
  for (size_t i = 0; i < tree.size(); ++i) {
    int depth = 0;
    for (int at = static_cast<int>(i); tree[at].parent >= 0; at = tree[at].parent) ++depth;
    deepest = std::max(deepest, depth);
  }
  return deepest;
}

}  // namespace cohort::topo
