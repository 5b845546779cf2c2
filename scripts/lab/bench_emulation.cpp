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
  const int K = 4096, rows = 16, N = 4096;
  tc::Instruction ins = argc > 1 && std::string(argv[1]) == "fp8" ? tc::Instruction::wgmma_m64n8k32_e4m3_f32 : tc::Instruction::wgmma_m64n8k16_f16_f32;
  const tc::TcParams p = *tc::measured_hopper_params(ins);
  const int k = tc::info(ins).k;
  emulation::NodeModel model = [p, k](int leaves) -> std::optional<tc::TcParams> { if (leaves != k) return std::nullopt; return p; };
  SummationTree t = blocked_tree(K, k, true);
  Matrix A(rows, K), B(K, N);
  SplitMix r{42};
  Format f = p.input;
  for (auto& x : A.v) x = round_to(f, (double)(r.next() >> 11) * 0x1p-53);
  for (auto& x : B.v) x = round_to(f, (double)(r.next() >> 11) * 0x1p-53 - 0.25);
  std::vector<std::pair<int,int>> e;
  for (int i = 0; i < rows; ++i) for (int j = 0; j < N; ++j) e.emplace_back(i, j);
  auto t0 = std::chrono::steady_clock::now();
  auto C = emulation::emulate_tree_at(t, model, A, B, e, 1);
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  double sum = 0; for (double c : C) sum += c;
  std::printf("%s: %zu outputs, K=%d, 1 thread: %.3f s (checksum %.17g)\n", argc>1?argv[1]:"fp16", C.size(), K, s, sum);
}
