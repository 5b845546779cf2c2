// explain's composition on the CPU: emulate_tree_at (reference/kernel_emulation.hpp) of a Hopper wgmma
// kernel's tree (blocks of k products fused in the tensor-core model, chained in increasing k) at K = 4096,
// 16 rows x 4096 columns = 65,536 outputs (what explain compares per distribution), on one thread; the sum of
// the outputs is printed so that two builds can be seen to agree bit for bit. scripts/lab/bench_emulation.sh
// builds it against two commits' tc_model.cpp and runs both, alternately.
#include <chrono>
#include <cstdio>
#include "reference/kernel_emulation.hpp"
#include "reference/summation_tree.hpp"
#include "reference/tc_model.hpp"
#include "reference/distributions.hpp"
#include "reference/matrix.hpp"
#include "reference/rng.hpp"
using namespace gemmlab;
int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "fp16";
  // bf16x6: Triton's fp32 GEMM of six bf16 passes (three pieces; tests/cpu/test_kernel_emulation.cpp's
  // triton_bf16(3)) on fp32 operands, 16 x 1024 outputs (each six times an fp16 output's work).
  const bool split6 = mode == "bf16x6";
  const int K = 4096, rows = 16, N = split6 ? 1024 : 4096;
  tc::Instruction ins = mode == "fp8"  ? tc::Instruction::wgmma_m64n8k32_e4m3_f32
                        : split6       ? tc::Instruction::wgmma_m64n8k16_bf16_f32
                                       : tc::Instruction::wgmma_m64n8k16_f16_f32;
  const tc::TcParams p = *tc::measured_hopper_params(ins);
  const int k = tc::info(ins).k;
  emulation::NodeModel model = [p, k](int leaves) -> std::optional<tc::TcParams> { if (leaves != k) return std::nullopt; return p; };
  SummationTree t = blocked_tree(K, k, true);
  Matrix A(rows, K), B(K, N);
  SplitMix r{42};
  Format f = split6 ? Format::fp32 : p.input;
  constexpr auto H = emulation::SplitScheme::hi, M = emulation::SplitScheme::mid, L = emulation::SplitScheme::lo;
  const emulation::SplitScheme scheme{emulation::LowBits::nearest_even, {{M, M}, {L, H}, {H, L}, {M, H}, {H, M}, {H, H}},
                                      0, true, emulation::SplitScheme::PieceFormat::bf16, 3};
  for (auto& x : A.v) x = round_to(f, (double)(r.next() >> 11) * 0x1p-53);
  for (auto& x : B.v) x = round_to(f, (double)(r.next() >> 11) * 0x1p-53 - 0.25);
  std::vector<std::pair<int,int>> e;
  for (int i = 0; i < rows; ++i) for (int j = 0; j < N; ++j) e.emplace_back(i, j);
  auto t0 = std::chrono::steady_clock::now();
  auto C = emulation::emulate_tree_at(t, model, A, B, e, 1, split6 ? &scheme : nullptr);
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  double sum = 0; for (double c : C) sum += c;
  std::printf("%s: %zu outputs, K=%d, 1 thread: %.3f s (checksum %.17g)\n", mode.c_str(), C.size(), K, s, sum);
}
