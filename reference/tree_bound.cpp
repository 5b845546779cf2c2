// The error bound of any summation tree; see tree_bound.hpp for the derivation.
#include "reference/tree_bound.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

namespace gemmlab {

namespace {

// The largest absolute error one rounding into f commits at underflow: half the subnormal spacing to
// nearest, the whole spacing otherwise, the smallest normal where results below it are flushed.
double underflow_eta(Format f, Rounding r, bool flushed) {
  const FormatInfo& fi = info(f);
  if (flushed) return std::ldexp(1.0, fi.emin);
  return std::ldexp(1.0, fi.emin - fi.precision + (r == Rounding::nearest_even ? 0 : 1));
}

int blocks_of(const tc::TcParams& p, int products) {
  const int b = std::max(1, p.block_size);
  return std::max(1, (products + b - 1) / b);
}

// The underflow error of one rounding of a fused node, with the terms cut below a zero C's floor.
double fused_node_eta(const tc::TcParams& p) {
  const FormatInfo& out = info(p.output);
  const bool flushed = !p.subnormal_output;
  double eta = underflow_eta(p.output, p.output_rounding, flushed);
  if (p.arithmetic == tc::Arithmetic::block_fused && p.zero_c_offset >= 0)
    eta += (p.block_size + 1) * std::ldexp(1.0, out.emin - p.zero_c_offset - p.fraction_bits());
  return eta;
}

}  // namespace

double fused_node_roundoff(const tc::TcParams& p, int products) {
  const FormatInfo& out = info(p.output);
  switch (p.arithmetic) {
    case tc::Arithmetic::fma_chain: return products * out.unit_roundoff;
    case tc::Arithmetic::fused_sum: return blocks_of(p, products) * out.unit_roundoff;
    case tc::Arithmetic::block_fused: break;
  }
  // Each of the block_size + 1 terms cut below 2^(e - F): alpha relative to the sum of |terms|.
  const double cut = std::ldexp(1.0, -p.fraction_bits()) * (p.align_rounding == Rounding::nearest_even ? 0.5 : 1.0);
  const double alpha = (p.block_size + 1) * cut;
  // The normalised sum rounded to `bits` significant bits.
  const int bits = p.result_fraction_bits >= 0 ? std::min(p.result_fraction_bits + 1, out.precision) : out.precision;
  const double beta = std::ldexp(1.0, -bits) * (p.output_rounding == Rounding::nearest_even ? 1.0 : 2.0);
  const double eps = alpha + beta + alpha * beta;
  return blocks_of(p, products) * eps + (p.c_entry == tc::CEntry::final_add ? out.unit_roundoff : 0.0);
}

int fused_node_roundings(const tc::TcParams& p, int products) {
  switch (p.arithmetic) {
    case tc::Arithmetic::fma_chain: return products;
    case tc::Arithmetic::fused_sum: return blocks_of(p, products);
    case tc::Arithmetic::block_fused: break;
  }
  return blocks_of(p, products) + (p.c_entry == tc::CEntry::final_add ? 1 : 0);
}

TreeRoundoff tree_roundoff(const SummationTree& t, const FusedNodeModel& fused, Format binary, int passes) {
  TreeRoundoff r;
  const int K = t.leaves();
  const double ub = info(binary).unit_roundoff;
  const double eta_b = underflow_eta(binary, Rounding::nearest_even, false);
  r.root = binary;
  if (K == 1) {  // one product, rounded once to the binary nodes' format
    r.path = ub;
    r.roundings = 1;
    r.total_roundings = 1;
    r.eta = eta_b;
    return r;
  }
  // From the root down: what the nodes above a node (and the node itself) can do to each of its inputs.
  std::vector<double> path(t.node_count(), 0.0);
  std::vector<int> count(t.node_count(), 0);
  for (int n = t.node_count() - 1; n >= K; --n) {
    const std::vector<int>& ch = t.children(n);
    if (ch.size() == 2) {
      r.eta = std::max(r.eta, eta_b);
      const bool start = t.is_leaf(ch[0]) && t.is_leaf(ch[1]);  // fma(a_q, b_q, fma(a_p, b_p, 0))
      r.total_roundings += start ? 2 : 1;
      for (int c : ch) {
        const int k = start && c == std::min(ch[0], ch[1]) ? 2 : 1;
        path[c] = path[n] + k * ub;
        count[c] = count[n] + k;
      }
      continue;
    }
    int products = 0;
    for (int c : ch) products += t.is_leaf(c);
    const std::optional<tc::TcParams> p = fused(products);
    if (!p)
      throw std::invalid_argument("tree bound: node " + t.name(n) + " fuses " + std::to_string(products) +
                                  " products, and no instruction model of that node is known");
    if (n == t.root()) r.root = p->output;
    const double u = passes * fused_node_roundoff(*p, products);
    const int h = passes * fused_node_roundings(*p, products);
    r.total_roundings += h;
    r.eta = std::max(r.eta, fused_node_eta(*p));
    for (int c : ch) {
      path[c] = path[n] + u;
      count[c] = count[n] + h;
    }
  }
  for (int k = 0; k < K; ++k)
    if (path[k] > r.path) {
      r.path = path[k];
      r.worst_product = k;
      r.roundings = count[k];
    }
  return r;
}

}  // namespace gemmlab
