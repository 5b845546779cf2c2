// cublaslt_int8_rowwise (kernels/cublas/cublaslt_int8_rowwise.cu) on the GPU: every output bit for bit the
// host's epilogue RN(RN(RN(S) a_scale) b_scale) of the exact int64 sum S of the same int8 operands, on a small
// problem and on one whose K lets |S| pass 2^24, where the int32 -> fp32 conversion rounds (the test checks
// that such sums occur and that some of them do round), with an M that is no multiple of anything; then
// through gemmlab run's engine: its rows pass their bound (scales on the output, 2 roundings before the
// output's) and the epilogue is explained as epilogue_mul_mul with no output differing.
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "experiments/engine/files.hpp"
#include "experiments/engine/run.hpp"
#include "kernels/registry.hpp"
#include "reference/quantized_entry.hpp"
#include "reference/quantized_layout.hpp"
#include "tests/gpu/device_array.hpp"
#include "tests/gpu/gpu_run_request.hpp"
#include "tests/gpu/gpu_test_util.hpp"

namespace gemmlab {
namespace {

using DeviceBytes = testing::DeviceArray<std::uint8_t>;
const auto check = testing::cuda_ok;

struct LtHandle {
  cublasLtHandle_t h = nullptr;
  LtHandle() {
    if (cublasLtCreate(&h) != CUBLAS_STATUS_SUCCESS) throw std::runtime_error("test: cublasLtCreate failed");
  }
  ~LtHandle() { cublasLtDestroy(h); }
};

float float_at(const std::vector<std::uint8_t>& bytes, std::size_t i) {
  float f;
  std::memcpy(&f, &bytes[4 * i], 4);
  return f;
}

const Kernel& int8_kernel() {
  const Kernel* k = find_kernel("cublaslt_int8_rowwise");
  if (!k) throw std::logic_error("cublaslt_int8_rowwise is not registered (kernels/cublas/kernel_list.inc)");
  return *k;
}

struct Case {
  const char* distribution;
  int M, N, K;
  bool sums_beyond_2_24;  // K 127^2 > 2^24 and the source makes most |S| that large
};

// uniform_0_1: q in [0, 127] with mean ~63.5, so S ~ K 63.5^2 ~ 3.3e7 > 2^24 at K = 8192.
const Case kCases[] = {{"normal_0_1@int8_rowwise", 256, 256, 512, false},
                       {"uniform_0_1@int8_rowwise", 100, 96, 8192, true}};

TEST(CublasltInt8RowwiseGpu, EveryOutputIsTheHostsEpilogueOfTheExactSum) {
  GEMMLAB_REQUIRE_FAMILY("cublas");
  const Kernel& k = int8_kernel();
  GEMMLAB_REQUIRE_KERNEL(k);
  LtHandle lt;
  for (const Case& c : kCases) {
    SCOPED_TRACE(std::string(c.distribution) + " " + std::to_string(c.M) + "x" + std::to_string(c.N) + "x" +
                 std::to_string(c.K));
    ASSERT_EQ(check_size(k, c.M, c.N, c.K), "");
    const QuantizedProblem p = make_quantized_problem(parse_distribution(c.distribution), c.M, c.N, c.K, 43);
    // The bytes the kernel is given (reference/quantized_layout.hpp): A (M, K), B (K, N) int8; scales fp32.
    const std::vector<std::uint8_t> ea = kernel_elements(p.A), eb = kernel_elements(p.B);
    const std::vector<std::uint8_t> sa = kernel_block_scales(p.A), sb = kernel_block_scales(p.B);
    ASSERT_EQ(ea.size(), static_cast<std::size_t>(c.M) * c.K);
    ASSERT_EQ(sa.size(), 4u * c.M);
    ASSERT_EQ(sb.size(), 4u * c.N);
    DeviceBytes dA(ea), dB(eb), dSa(sa), dSb(sb), dC(4u * c.M * c.N), dW(k.workspace_bytes);
    check(cudaMemset(dC.p, 0xFF, 4u * c.M * c.N), "NaN poison of C");
    QuantizedArgs q;
    q.scale_a = dSa.p;
    q.scale_b = dSb.p;
    GemmArgs g;
    g.M = c.M, g.N = c.N, g.K = c.K;
    g.A = dA.p, g.B = dB.p, g.C = dC.p;
    g.cublaslt = lt.h;
    g.workspace = dW.p;
    g.workspace_bytes = k.workspace_bytes;
    g.context = k.context;
    g.quantized = &q;
    k.launch(g);
    check(cudaDeviceSynchronize(), "cublaslt_int8_rowwise");
    std::vector<float> got(static_cast<std::size_t>(c.M) * c.N);
    check(cudaMemcpy(got.data(), dC.p, got.size() * 4, cudaMemcpyDeviceToHost), "cudaMemcpy from the GPU");

    long long differ = 0, beyond = 0, rounded = 0;
    std::string first;
    for (int i = 0; i < c.M; ++i)
      for (int j = 0; j < c.N; ++j) {
        std::int64_t S = 0;  // exact: |S| <= K 127^2
        for (int kk = 0; kk < c.K; ++kk)
          S += std::int64_t{static_cast<std::int8_t>(ea[static_cast<std::size_t>(i) * c.K + kk])} *
               static_cast<std::int8_t>(eb[static_cast<std::size_t>(kk) * c.N + j]);
        const float a = float_at(sa, i), b = float_at(sb, j);
        const float conv = static_cast<float>(S);  // RN(S): one rounding to nearest even
        const float scaled = conv * a;              // RN(RN(S) a_scale)
        const float want = scaled * b;              // RN(RN(RN(S) a_scale) b_scale)
        double cand[quant_detail::kEpilogueCandidates];
        quant_detail::epilogue_candidates(static_cast<double>(S), a, b, cand);
        ASSERT_EQ(static_cast<double>(want), cand[0]) << "the host's arithmetic is the reference's epilogue_mul_mul";
        beyond += S > (std::int64_t{1} << 24) || S < -(std::int64_t{1} << 24);
        rounded += static_cast<double>(conv) != static_cast<double>(S);
        const float out = got[static_cast<std::size_t>(i) * c.N + j];
        if (std::memcmp(&out, &want, 4) != 0 && differ++ == 0) {
          char line[200];
          std::snprintf(line, sizeof line, "C(%d, %d) = %a, the host's %a (S = %lld, a_scale %a, b_scale %a)", i, j,
                        out, want, static_cast<long long>(S), a, b);
          first = line;
        }
      }
    EXPECT_EQ(differ, 0) << "outputs that differ from the host's epilogue; the first: " << first;
    if (c.sums_beyond_2_24) {
      EXPECT_GT(beyond, 0) << "no |S| above 2^24: the case does not reach the conversion's rounding";
      EXPECT_GT(rounded, 0) << "no S that fp32 rounds: the case does not check the conversion's rounding";
    }
    std::printf("[ info ] %s %dx%dx%d: %lld of %d sums above 2^24, %lld rounded by the conversion\n", c.distribution,
                c.M, c.N, c.K, beyond, c.M * c.N, rounded);
  }
}

// The same problems through `gemmlab run` (the engine on the GPU): judged against the exact product of the
// dequantized operands by the bound of its declarations, and its epilogue identified bit for bit.
TEST(CublasltInt8RowwiseGpu, ItsRowsPassTheirBoundWithTheEpilogueExplained) {
  GEMMLAB_REQUIRE_FAMILY("cublas");
  const Kernel& k = int8_kernel();
  GEMMLAB_REQUIRE_KERNEL(k);
  std::vector<std::string> dists;
  std::vector<Size> sizes;
  for (const Case& c : kCases) dists.push_back(c.distribution), sizes.push_back({c.M, c.N, c.K});
  RunRequest req = gpu_test::quiet_run_request("cublaslt_int8_rowwise", ::testing::TempDir() + "cublaslt_int8_rowwise_run",
                                               {k.name}, dists, sizes, 43);
  const int rc = run_experiment(req, gpu_device(0));
  std::fclose(req.log);
  EXPECT_EQ(rc, 0);
  std::ifstream f(req.out_csv);
  std::stringstream s;
  s << f.rdbuf();
  const auto records = engine::parse_csv(s.str()).records;
  ASSERT_EQ(records.size(), 1u + 2 * 2) << "2 distributions x 2 sizes and a header";
  auto col = [&](std::size_t row, const std::string& name) {
    const auto& h = records[0];
    const auto at = std::find(h.begin(), h.end(), name);
    if (at == h.end()) throw std::logic_error("no column " + name);
    return records[row][at - h.begin()];
  };
  for (std::size_t r = 1; r < records.size(); ++r) {
    const std::string st = col(r, "status"), note = col(r, "note");
    const long long entries = std::stoll(col(r, "M")) * std::stoll(col(r, "N"));
    SCOPED_TRACE(col(r, "distribution") + " " + col(r, "M") + "x" + col(r, "N") + "x" + col(r, "K") + ": " + st + " " +
                 note);
    EXPECT_EQ(st, "passed");
    EXPECT_EQ(col(r, "recipe"), "int8_rowwise");
    EXPECT_NE(note.find("scales on the output, 2 fp32 roundings before the output's"), std::string::npos);
    EXPECT_NE(note.find("explained: the scales enter after the exact sum as epilogue_mul_mul"), std::string::npos);
    EXPECT_NE(note.find(": 0 of " + std::to_string(entries) + " outputs differ"), std::string::npos);
    EXPECT_NE(col(r, "quant_rel_std"), "");
    EXPECT_NE(col(r, "total_rel_std"), "");
  }
}

}  // namespace
}  // namespace gemmlab
