// explain's composition on the GPU (emulate_gpu.hpp): emulate_tree_at's tree walk, one thread per output.
#include "experiments/device/emulate_gpu.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "experiments/device/device_free.hpp"
#include "kernels/common/cuda_check.cuh"
#include "reference/parallel.hpp"
#include "reference/tc_arith.hpp"

namespace gemmlab {

namespace {

namespace arith = tc::arith;

// A fused node's model as tc_arith.hpp's templates read it (TcParams' field names), with its formats' facts.
struct Rule {
  bool subnormal_inputs, subnormal_output, c_in_alignment;
  tc::ZeroOperandExponent zero_operand_exponent;
  tc::AlignReference align_reference;
  Rounding align_rounding, output_rounding;
  tc::Overflow overflow;
  tc::ZeroSign zero_sign;
  tc::CEntry c_entry;
  int zero_c_offset, result_fraction_bits, block_size;
  FormatInfo fa, fb, fo;
  int F, ea_min, eb_min;
};

struct DevTree {
  int leaves, nodes, pieces;
  const int *first_child, *children, *model;
  const Rule* rules;
  bool split;
  const int *chain_of, *chain_first, *chain_nodes, *passes;
  int n_passes, nodes_per_pass;
  bool nan_to_zero_before_last;
};

// tc::dot of a fused node: the blocks chained (tc_arith.hpp). dot()'s rule for a NaN or infinite operand
// or C is the host's: such an output is marked.
__device__ double node_dot(const Rule& r, const double* a, const double* b, int m, double c, arith::Fault& f) {
  bool special = !arith::finite(c);
  for (int i = 0; i < m; ++i) special = special || !arith::finite(a[i]) || !arith::finite(b[i]);
  if (special) {
    f.bad = true;
    return 0.0;
  }
  return arith::chain_blocks(r, r.fa, r.fb, r.fo, r.F, r.ea_min, r.eb_min, a, b, m, c, f);
}

// One output per thread: emulate_tree_at's tree_dot (split_tree_dot with split operands), node by node in
// the tree's order. A (rows, K, pieces) and B (K, pieces, ncols) as floats (exact); `scratch` holds the
// internal nodes' values, [node - leaves][output].
__global__ void emulate_outputs(DevTree t, const float* A, const float* B, int ncols, const int* row_slot,
                                const int* col_slot, int n, float* scratch, double* out, unsigned char* fault) {
  const int e = blockIdx.x * blockDim.x + threadIdx.x;
  if (e >= n) return;
  const int K = t.leaves, P = t.pieces;
  const float* a = A + static_cast<std::size_t>(row_slot[e]) * K * P;
  const int col = col_slot[e];
  const auto av = [&](int k, int piece) { return a[static_cast<std::size_t>(k) * P + piece]; };
  const auto bv = [&](int k, int piece) { return B[(static_cast<std::size_t>(k) * P + piece) * ncols + col]; };
  const auto val = [&](int node) -> float& { return scratch[static_cast<std::size_t>(node - K) * n + e]; };
  arith::Fault f;
  double ga[64], gb[64];
  for (int node = K; node < t.nodes; ++node) {
    const int i = node - K, c0 = t.first_child[i], c1 = t.first_child[i + 1];
    if (c1 - c0 == 2) {  // a binary node: an fp32 add, or FMAs from +0 for its products
      const int x = t.children[c0], y = t.children[c0 + 1];
      const bool lx = x < K, ly = y < K;
      if (!lx && !ly) {
        val(node) = __fadd_rn(val(x), val(y));
      } else if (lx && ly) {
        const int lo = min(x, y), hi = max(x, y);
        val(node) = __fmaf_rn(av(hi, 0), bv(hi, 0), __fmaf_rn(av(lo, 0), bv(lo, 0), 0.0f));
      } else {
        const int k = lx ? x : y, o = lx ? y : x;
        val(node) = __fmaf_rn(av(k, 0), bv(k, 0), val(o));
      }
      continue;
    }
    if (!t.split) {  // a fused node: one instruction over its products, its C the partial sum it adds
      int m = 0;
      double c = 0.0;
      for (int j = c0; j < c1; ++j) {
        const int ch = t.children[j];
        if (ch >= K) {
          c = val(ch);
          continue;
        }
        ga[m] = av(ch, 0);
        gb[m] = bv(ch, 0);
        ++m;
      }
      val(node) = __double2float_rn(node_dot(t.rules[t.model[i]], ga, gb, m, c, f));
      continue;
    }
    // split operands: a chain of fused nodes run at its last node, pass by pass
    const int chain = t.chain_of[i];
    if (chain < 0) continue;
    const int s0 = t.chain_first[chain], len = t.chain_first[chain + 1] - s0;
    double d = 0.0;
    {
      const int first = t.chain_nodes[s0] - K;
      for (int j = t.first_child[first]; j < t.first_child[first + 1]; ++j)
        if (t.children[j] >= K) d = val(t.children[j]);
    }
    const int group = t.nodes_per_pass > 0 ? t.nodes_per_pass : len;
    for (int g0 = 0; g0 < len; g0 += group)
      for (int pass = 0; pass < t.n_passes; ++pass) {
        if (t.nan_to_zero_before_last && pass == t.n_passes - 1 && pass > 0 && isnan(d)) d = 0.0;
        const int pa = t.passes[2 * pass], pb = t.passes[2 * pass + 1];
        for (int x = g0; x < min(len, g0 + group); ++x) {
          const int ni = t.chain_nodes[s0 + x] - K;
          int m = 0;
          for (int j = t.first_child[ni]; j < t.first_child[ni + 1]; ++j) {
            const int ch = t.children[j];
            if (ch >= K) continue;
            ga[m] = av(ch, pa);
            gb[m] = bv(ch, pb);
            ++m;
          }
          d = __double2float_rn(node_dot(t.rules[t.model[ni]], ga, gb, m, d, f));
        }
      }
    val(node) = static_cast<float>(d);
  }
  const double r = val(t.nodes - 1);
  out[e] = r;
  fault[e] = f.bad || isnan(r);
}

// A device array for one call, freed however the call ends (device_free: not while a kernel under test holds
// the GPU).
template <class T>
struct DeviceArray {
  T* p = nullptr;
  explicit DeviceArray(std::size_t n) { GEMMLAB_CUDA_CHECK(cudaMalloc(&p, std::max<std::size_t>(n, 1) * sizeof(T))); }
  DeviceArray(const std::vector<T>& v, cudaStream_t s) : DeviceArray(v.size()) {
    if (!v.empty()) GEMMLAB_CUDA_CHECK(cudaMemcpyAsync(p, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice, s));
  }
  ~DeviceArray() { device_free(p); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
};

struct Stream {
  cudaStream_t s = nullptr;
  Stream() { GEMMLAB_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking)); }
  ~Stream() { cudaStreamDestroy(s); }
};

bool float_exact(double x) { return std::isnan(x) || static_cast<double>(static_cast<float>(x)) == x; }

}  // namespace

std::optional<std::vector<double>> emulate_tree_at_gpu(const SummationTree& tree, const emulation::NodeModel& model,
                                                       const Matrix& A, const Matrix& B,
                                                       const std::vector<std::pair<int, int>>& entries, int threads,
                                                       const emulation::SplitScheme* split,
                                                       GpuEmulationCounts* counts) {
  GpuEmulationCounts local;
  GpuEmulationCounts& cnt = counts ? *counts : local;
  cnt = {};
  const auto refuse = [&](std::string why) -> std::optional<std::vector<double>> {
    cnt.not_taken = std::move(why);
    return std::nullopt;
  };
  const auto t0 = std::chrono::steady_clock::now();
  const auto since = [](std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  };
  const int K = A.cols;
  // What emulate_tree_at raises on it raises itself.
  if (B.rows != K || tree.leaves() != K) return refuse("the operands and the tree disagree on K");
  if (K < 2) return refuse("K = 1 has no tree");
  for (const auto& [i, j] : entries)
    if (i < 0 || i >= A.rows || j < 0 || j >= B.cols) return refuse("an entry outside C");
  const emulation::FlatTree flat = emulation::flatten_tree(tree, model, split);
  std::vector<Rule> rules;
  for (const tc::TcParams& p : flat.params) {
    if (p.arithmetic != tc::Arithmetic::block_fused) return refuse("a fused node's model is not block_fused");
    const FormatInfo &fa = info(p.operand_conversion ? *p.operand_conversion : p.input),
                     &fb = info(p.operand_conversion ? *p.operand_conversion : p.format_b()), &fo = info(p.output);
    const int F = p.fraction_bits();
    if (p.block_size <= 0 || F < 0 || !arith::narrow_fits(fa, fb, fo, F, p.block_size))
      return refuse("a fused node's model is not of narrow blocks: " + p.describe());
    rules.push_back({p.subnormal_inputs, p.subnormal_output, p.c_in_alignment, p.zero_operand_exponent,
                     p.align_reference, p.align_rounding, p.output_rounding, p.overflow, p.zero_sign, p.c_entry,
                     p.zero_c_offset, p.result_fraction_bits, p.block_size, fa, fb, fo, F, info(p.input).emin,
                     info(p.format_b()).emin});
  }
  for (int n = flat.leaves; n < flat.nodes; ++n) {
    const int i = n - flat.leaves;
    if (flat.model[i] < 0) continue;
    int m = 0;
    for (int j = flat.first_child[i]; j < flat.first_child[i + 1]; ++j) m += flat.children[j] < flat.leaves;
    const tc::TcParams& p = flat.params[flat.model[i]];
    if (m > 64 || m % p.block_size != 0 || (p.step_interleave > 0 && m > p.block_size))
      return refuse("a fused node's products do not fall into contiguous blocks");
  }
  // The rows and columns the entries read, and the operands (pieces) as floats.
  std::vector<int> row_of(A.rows, -1), col_of(B.cols, -1);
  std::vector<int> rows, cols, row_slot(entries.size()), col_slot(entries.size());
  for (std::size_t e = 0; e < entries.size(); ++e) {
    const auto [i, j] = entries[e];
    if (row_of[i] < 0) {
      row_of[i] = static_cast<int>(rows.size());
      rows.push_back(i);
    }
    if (col_of[j] < 0) {
      col_of[j] = static_cast<int>(cols.size());
      cols.push_back(j);
    }
    row_slot[e] = row_of[i];
    col_slot[e] = col_of[j];
  }
  if (entries.empty()) return std::vector<double>{};
  const int P = flat.pieces, nc = static_cast<int>(cols.size());
  std::vector<float> a(rows.size() * K * P), b(static_cast<std::size_t>(K) * P * nc);
  std::atomic<bool> inexact{false};
  const auto line = [&](const double* x, std::vector<double>& pieces, auto&& put) {
    if (split) emulation::split_line(*split, flat, x, K, pieces);
    for (int k = 0; k < K; ++k)
      for (int q = 0; q < P; ++q) {
        const double v = split ? pieces[static_cast<std::size_t>(k) * P + q] : x[k];
        if (!float_exact(v)) inexact = true;
        put(k, q, static_cast<float>(v));
      }
  };
  parallel_for(static_cast<long>(rows.size()), threads, [&](long r) {
    std::vector<double> pieces;
    line(&A.v[static_cast<std::size_t>(rows[r]) * K], pieces,
         [&](int k, int q, float v) { a[(static_cast<std::size_t>(r) * K + k) * P + q] = v; });
  });
  // B row by row (its own layout: every column an entry reads, for each k), split element by element
  const tc::TcParams* reader =
      split ? &flat.params[static_cast<std::size_t>(flat.model[flat.chain_nodes[0] - flat.leaves])] : nullptr;
  parallel_for(static_cast<long>(K), threads, [&](long k) {
    const double* row = &B.v[static_cast<std::size_t>(k) * B.cols];
    float* out = &b[static_cast<std::size_t>(k) * P * nc];
    for (int c = 0; c < nc; ++c) {
      const double x = row[cols[c]];
      if (!split) {
        if (!float_exact(x)) inexact = true;
        out[c] = static_cast<float>(x);
        continue;
      }
      const std::array<double, emulation::max_split_pieces> pk = emulation::split_pieces(*split, *reader, x);
      for (int q = 0; q < P; ++q) {
        if (!float_exact(pk[q])) inexact = true;
        out[static_cast<std::size_t>(q) * nc + c] = static_cast<float>(pk[q]);
      }
    }
  });
  if (inexact) return refuse("an operand (or piece) is not exact in fp32");

  std::vector<int> passes;
  if (split)
    for (const auto& [pa, pb] : split->passes) passes.insert(passes.end(), {static_cast<int>(pa), static_cast<int>(pb)});
  const long long n = static_cast<long long>(entries.size());
  const long long internal = std::max(1, flat.nodes - flat.leaves);
  // At most 2^28 floats (1 GiB) of node values at a time.
  const long long batch = std::max(128LL, std::min(n, (1LL << 28) / internal) / 128 * 128);
  {  // what the call holds on the GPU, against half of what is free (the kernel under study keeps its own)
    const std::size_t need = (a.size() + b.size() + static_cast<std::size_t>(std::min(n, batch) * internal)) * 4 +
                             static_cast<std::size_t>(n) * 17 + (flat.children.size() + 4 * flat.nodes) * 4;
    std::size_t free_b = 0, total_b = 0;
    GEMMLAB_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
    if (need > free_b / 2)
      return refuse("it needs " + std::to_string(need >> 20) + " MiB of GPU memory, " + std::to_string(free_b >> 20) +
                    " MiB are free");
  }
  Stream stream;
  const cudaStream_t s = stream.s;
  DeviceArray<int> d_first(flat.first_child, s), d_children(flat.children, s), d_model(flat.model, s),
      d_chain_of(flat.chain_of, s), d_chain_first(flat.chain_first, s), d_chain_nodes(flat.chain_nodes, s),
      d_passes(passes, s), d_row(row_slot, s), d_col(col_slot, s);
  DeviceArray<Rule> d_rules(rules, s);
  DeviceArray<float> d_a(a, s), d_b(b, s);
  DeviceArray<float> d_scratch(static_cast<std::size_t>(std::min(n, batch) * internal));
  DeviceArray<double> d_out(static_cast<std::size_t>(n));
  DeviceArray<unsigned char> d_fault(static_cast<std::size_t>(n));
  const DevTree t{flat.leaves, flat.nodes, P, d_first.p, d_children.p, d_model.p, d_rules.p, split != nullptr,
                  d_chain_of.p, d_chain_first.p, d_chain_nodes.p, d_passes.p, static_cast<int>(passes.size() / 2),
                  split ? split->nodes_per_pass : 0, split ? split->nan_to_zero_before_last : false};
  GEMMLAB_CUDA_CHECK(cudaStreamSynchronize(s));
  cnt.prepare_seconds = since(t0);
  const auto t_gpu = std::chrono::steady_clock::now();
  for (long long e0 = 0; e0 < n; e0 += batch) {
    const int m = static_cast<int>(std::min(batch, n - e0));
    emulate_outputs<<<(m + 127) / 128, 128, 0, s>>>(t, d_a.p, d_b.p, nc, d_row.p + e0, d_col.p + e0, m, d_scratch.p,
                                                    d_out.p + e0, d_fault.p + e0);
    GEMMLAB_LAUNCH_CHECK("emulate_outputs");
  }
  std::vector<double> out(static_cast<std::size_t>(n));
  std::vector<unsigned char> fault(static_cast<std::size_t>(n));
  GEMMLAB_CUDA_CHECK(cudaMemcpyAsync(out.data(), d_out.p, out.size() * sizeof(double), cudaMemcpyDeviceToHost, s));
  GEMMLAB_CUDA_CHECK(cudaMemcpyAsync(fault.data(), d_fault.p, fault.size(), cudaMemcpyDeviceToHost, s));
  GEMMLAB_CUDA_CHECK(cudaStreamSynchronize(s));
  cnt.gpu_seconds = since(t_gpu);
  const auto t_host = std::chrono::steady_clock::now();
  // The marked outputs: the host's model.
  std::vector<std::pair<int, int>> again;
  std::vector<std::size_t> where;
  for (std::size_t e = 0; e < fault.size(); ++e)
    if (fault[e]) {
      again.push_back(entries[e]);
      where.push_back(e);
    }
  if (!again.empty()) {
    const std::vector<double> host = emulation::emulate_tree_at(tree, model, A, B, again, threads, split);
    for (std::size_t t2 = 0; t2 < where.size(); ++t2) out[where[t2]] = host[t2];
  }
  cnt.host_seconds = since(t_host);
  cnt.on_gpu = n - static_cast<long long>(again.size());
  cnt.on_host = static_cast<long long>(again.size());
  return out;
}

emulation::TreeEmulator gpu_tree_emulator() {
  if (const char* e = std::getenv("GEMMLAB_EMULATE"); e && *e) {
    if (std::strcmp(e, "cpu") == 0) return {};
    if (std::strcmp(e, "gpu") != 0)
      throw std::invalid_argument(std::string("GEMMLAB_EMULATE is '") + e +
                                  "': set it to cpu (explain's predictions on this host) or gpu (on the GPU, the "
                                  "default), or unset it");
  }
  // GEMMLAB_PROFILE_ORACLE=1 (explain_gpu.hpp): each call's time, as explain's oracle profiles its calls
  const bool profile = std::getenv("GEMMLAB_PROFILE_ORACLE") != nullptr;
  return [profile](const SummationTree& tree, const emulation::NodeModel& model, const Matrix& A, const Matrix& B,
                   const std::vector<std::pair<int, int>>& entries, int threads, const emulation::SplitScheme* split) {
    GpuEmulationCounts c;
    std::optional<std::vector<double>> out = emulate_tree_at_gpu(tree, model, A, B, entries, threads, split, &c);
    if (profile)
      std::fprintf(stderr, "[profile] composition on the GPU: %lld outputs there, %lld on the host%s%s; prepare %.3f s, "
                   "GPU %.3f s, host %.3f s\n", c.on_gpu, c.on_host, c.not_taken.empty() ? "" : "; not taken: ",
                   c.not_taken.c_str(), c.prepare_seconds, c.gpu_seconds, c.host_seconds);
    return out;
  };
}

}  // namespace gemmlab
