// Kernel emulation: the tensor-core model composed in a kernel's order; see kernel_emulation.hpp.
#include "reference/kernel_emulation.hpp"

#include "reference/parallel.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>

namespace gemmlab::emulation {

namespace {

float fadd_rn(float x, float y) { return x + y; }  // IEEE binary32 add, round to nearest even

// Rounds an fp32 value carried as a double; the model's fp32 outputs are exact floats.
float as_float(double x) { return static_cast<float>(x); }

}  // namespace

double emulate_dot(const Numerics& o, const double* a, const double* b, int K, const tc::TcParams& p) {
  if (o.accumulation == Accumulation::fma) {
    if (o.split_k != 1) throw std::invalid_argument("emulate: split_k is only modelled for tensor-core orders");
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc = std::fmaf(static_cast<float>(a[k]), static_cast<float>(b[k]), acc);
    return acc;
  }
  const bool chain = o.accumulation == Accumulation::in_mma || o.accumulation == Accumulation::in_wgmma;
  const int ks = o.k_step, splits = o.split_k;
  const bool fp32_acc = o.output == Format::fp32;
  if (!chain && !fp32_acc)
    throw std::invalid_argument("emulate: external and promoted accumulation add into fp32 registers");
  if (splits > 1 && !fp32_acc) throw std::invalid_argument("emulate: split-K partial sums are added in fp32");
  const int steps = K / ks;
  float total = 0.0f;
  for (int w = 0; w < splits; ++w) {
    // Partial sum w over k-steps w, w + splits, ...
    double d = 0.0;     // in_mma running sum / promoted partial (the mma's C), in the output format
    float acc = 0.0f;   // external / promoted fp32 register sum
    int since = 0;
    const int per_promotion = o.accumulation == Accumulation::promoted ? o.promotion_interval_k / ks : 0;
    for (int s = w; s < steps; s += splits) {
      const int k0 = s * ks;
      switch (o.accumulation) {
        case Accumulation::in_mma:
        case Accumulation::in_wgmma:
          d = tc::dot(p, a + k0, b + k0, ks, d);
          break;
        case Accumulation::external:
          acc = fadd_rn(acc, as_float(tc::dot(p, a + k0, b + k0, ks, 0.0)));
          break;
        case Accumulation::promoted:
          d = tc::dot(p, a + k0, b + k0, ks, d);
          if (++since == per_promotion) {
            acc = fadd_rn(acc, as_float(d));
            d = 0.0;
            since = 0;
          }
          break;
        case Accumulation::fma:
        case Accumulation::library:
        case Accumulation::unknown:
          break;
      }
    }
    if (o.accumulation == Accumulation::promoted) acc = fadd_rn(acc, as_float(d));  // the kernel's final add
    if (chain) {
      if (splits == 1) return d;  // fp16 or fp32, exactly as the instruction wrote it
      acc = as_float(d);
    }
    total = w == 0 ? acc : fadd_rn(total, acc);
  }
  return total;
}

std::vector<double> emulate(const Numerics& o, const Matrix& A, const Matrix& B, const tc::TcParams& params,
                            int threads) {
  const int M = A.rows, K = A.cols, N = B.cols;
  if (B.rows != K) throw std::invalid_argument("emulate: A is (M, K) and B must be (K, N)");
  if (!o.predictable())
    throw std::invalid_argument("emulate: gemmlab has no bit-exact model of this order (" + o.describe() + ")");
  if (o.accumulation != Accumulation::fma) {
    if (o.k_step <= 0 || K % (o.k_step * o.split_k) != 0)
      throw std::invalid_argument("emulate: K = " + std::to_string(K) + " must be a multiple of the k-step (" +
                                  std::to_string(o.k_step) + ") times split_k (" + std::to_string(o.split_k) + ")");
    if (o.accumulation == Accumulation::promoted &&
        (o.promotion_interval_k <= 0 || o.promotion_interval_k % o.k_step != 0))
      throw std::invalid_argument("emulate: promotion_interval_k must be a positive multiple of the k-step");
    if (tc::info(*o.instruction).k != o.k_step)
      throw std::invalid_argument("emulate: k_step differs from the instruction's k");
  }
  // B^T (N, K): each output's column of B contiguous.
  std::vector<double> bt(static_cast<std::size_t>(N) * K);
  for (int k = 0; k < K; ++k)
    for (int j = 0; j < N; ++j) bt[static_cast<std::size_t>(j) * K + k] = B(k, j);
  std::vector<double> C(static_cast<std::size_t>(M) * N);
  parallel_for(M, threads, [&](long i) {
    const double* a = &A.v[static_cast<std::size_t>(i) * K];
    for (int j = 0; j < N; ++j)
      C[static_cast<std::size_t>(i) * N + j] = emulate_dot(o, a, &bt[static_cast<std::size_t>(j) * K], K, params);
  });
  return C;
}

SummationTree expected_tree(const Numerics& o, int K) {
  switch (o.accumulation) {
    case Accumulation::fma: return sequential_tree(K);
    case Accumulation::in_mma:
    case Accumulation::in_wgmma:
    case Accumulation::external: {
      const bool carry = o.accumulation != Accumulation::external;
      return o.split_k > 1 ? split_blocked_tree(K, o.k_step, o.split_k, carry) : blocked_tree(K, o.k_step, carry);
    }
    case Accumulation::promoted:
      if (o.split_k > 1) throw std::invalid_argument("expected_tree: promoted split-K is not modelled");
      return promoted_tree(K, o.k_step, o.promotion_interval_k);
    case Accumulation::library:
    case Accumulation::unknown:
      break;
  }
  throw std::invalid_argument("expected_tree: a library's order is not known; `gemmlab order` reveals it");
}

}  // namespace gemmlab::emulation
