// `gemmlab tune`: times a grid of shapes of the CUDA-core SGEMM templates with the harness's one
// timing helper (run_kernel) and records the winner for sgemm_09_autotuned.
#include "experiments/device/tune_sgemm.hpp"
#include "experiments/report/metadata.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "experiments/device/runner.hpp"
#include "kernels/registry.hpp"
#include "kernels/simt/sgemm_09_autotuned.cuh"
#include "kernels/simt/sgemm_10_warptiling.cuh"
#include "kernels/simt/sgemm_11_double_buffer.cuh"
#include "reference/distributions.hpp"

namespace gemmlab {
namespace {

struct Candidate {
  const char* templ;  // which template: sgemm_09, sgemm_10, sgemm_11
  std::string shape;  // its parameters, printed
  int bm, bn, bk;     // the multiples it needs
  int tm, tn;         // sgemm_09 only (the header's values)
  void (*launch)(const GemmArgs&);
};

template <int BM, int BN, int BK, int TM, int TN>
Candidate blocktile() {
  char s[96];
  std::snprintf(s, sizeof s, "BM=%d BN=%d BK=%d TM=%d TN=%d (%d thr)", BM, BN, BK, TM, TN,
                kernels::sgemm09::Shape<BM, BN, BK, TM, TN>::threads);
  return {"sgemm_09", s, BM, BN, BK, TM, TN, kernels::sgemm09::launch<BM, BN, BK, TM, TN>};
}

template <bool Double, int BM, int BN, int BK, int WM, int WN, int WNITER, int TM, int TN, int NT, int MINB,
          bool PREFETCH = false>
Candidate warptile() {
  char s[128];
  std::snprintf(s, sizeof s, "BM=%d BN=%d BK=%d WM=%d WN=%d WNITER=%d TM=%d TN=%d (%d thr, min %d/SM%s)", BM, BN, BK,
                WM, WN, WNITER, TM, TN, NT, MINB, PREFETCH ? ", prefetch" : "");
  if constexpr (Double)
    return {"sgemm_11", s, BM, BN, BK, 0, 0, kernels::sgemm11::launch<BM, BN, BK, WM, WN, WNITER, TM, TN, NT, MINB>};
  else
    return {"sgemm_10", s, BM, BN, BK, 0, 0, kernels::sgemm10::launch<BM, BN, BK, WM, WN, WNITER, TM, TN, NT, MINB, PREFETCH>};
}

// The search grid. sgemm_09: block tiles from 64x64 to 256x128, BK 8..32, thread tiles 4..8 wide.
// sgemm_10/11: Boehm's A6000 shape and a few with 256 threads or larger block tiles; sgemm_10 with and
// without register prefetch of the next K-step.
std::vector<Candidate> candidates() {
  return {
      blocktile<64, 64, 8, 8, 8>(),     blocktile<64, 64, 16, 8, 8>(),    blocktile<64, 64, 32, 8, 8>(),
      blocktile<64, 64, 8, 4, 4>(),     blocktile<128, 64, 8, 8, 8>(),    blocktile<128, 64, 16, 8, 8>(),
      blocktile<64, 128, 8, 8, 8>(),    blocktile<64, 128, 16, 8, 8>(),   blocktile<128, 128, 8, 8, 8>(),
      blocktile<128, 128, 16, 8, 8>(),  blocktile<128, 128, 32, 8, 8>(),  blocktile<128, 128, 8, 8, 4>(),
      blocktile<128, 128, 8, 4, 8>(),   blocktile<128, 128, 16, 8, 4>(),  blocktile<128, 256, 8, 8, 8>(),
      blocktile<256, 128, 8, 8, 8>(),   blocktile<128, 256, 16, 8, 8>(),  blocktile<256, 128, 16, 8, 8>(),
      // sgemm_10: (BM, BN, BK, WM, WN, WNITER, TM, TN, threads, min blocks per SM)
      warptile<false, 128, 128, 16, 64, 64, 4, 8, 4, 128, 1>(),  // Boehm's A6000 shape
      warptile<false, 128, 128, 32, 64, 64, 4, 8, 4, 128, 2>(),
      warptile<false, 128, 128, 16, 64, 32, 2, 4, 4, 256, 2>(),
      warptile<false, 128, 128, 32, 64, 32, 2, 4, 4, 256, 2>(),
      warptile<false, 128, 128, 64, 64, 32, 2, 4, 4, 256, 2>(),
      warptile<false, 128, 128, 16, 64, 32, 2, 8, 4, 256, 2>(),
      warptile<false, 128, 128, 32, 64, 32, 2, 8, 4, 256, 2>(),
      warptile<false, 64, 128, 16, 32, 64, 2, 4, 4, 128, 4>(),
      warptile<false, 64, 128, 32, 32, 64, 2, 4, 4, 128, 4>(),
      warptile<false, 128, 64, 16, 64, 32, 2, 4, 4, 128, 4>(),
      warptile<false, 128, 256, 16, 64, 64, 2, 8, 4, 256, 1>(),
      warptile<false, 128, 128, 8, 64, 32, 2, 4, 4, 256, 2>(),
      warptile<false, 128, 128, 8, 64, 32, 2, 4, 4, 256, 2, true>(),
      warptile<false, 128, 128, 8, 64, 32, 2, 8, 4, 256, 2, true>(),
      warptile<false, 128, 128, 16, 64, 32, 2, 4, 4, 256, 2, true>(),
      warptile<false, 64, 128, 8, 32, 64, 2, 4, 4, 128, 4, true>(),
      warptile<false, 128, 128, 16, 64, 64, 4, 8, 4, 128, 1, true>(),
      // sgemm_11
      warptile<true, 128, 128, 16, 64, 64, 4, 8, 4, 128, 1>(),
      warptile<true, 128, 128, 8, 64, 32, 2, 4, 4, 256, 2>(),
      warptile<true, 128, 128, 16, 64, 32, 2, 4, 4, 256, 2>(),
      warptile<true, 128, 128, 8, 64, 32, 2, 8, 4, 256, 2>(),
      warptile<true, 64, 128, 16, 32, 64, 2, 4, 4, 128, 4>(),
      warptile<true, 64, 128, 8, 32, 64, 2, 4, 4, 128, 4>(),
      warptile<true, 128, 64, 16, 64, 32, 2, 4, 4, 128, 4>(),
  };
}


}  // namespace

int tune_sgemm(int M, int N, int K, int reps, const std::string& write_header_path) {
  const DeviceInfo& dev = query_device();
  if (!dev.present) {
    std::fprintf(stderr, "gemmlab tune: no CUDA GPU (%s); the tuner times kernels on a GPU\n", dev.why_absent.c_str());
    return 2;
  }
  const Kernel* naive = find_kernel("sgemm_01_naive");
  const Kernel* base = find_kernel("sgemm_09_autotuned");
  if (!naive || !base) throw std::logic_error("gemmlab tune needs sgemm_01_naive and sgemm_09_autotuned registered");

  const Distribution dist = parse_distribution("uniform_-1_1");
  const std::uint64_t seed = 1;
  std::printf("gemmlab tune: %s (cc %d.%d, %d SMs), M=%d N=%d K=%d, %s seed %llu, median of %d reps\n",
              dev.name.c_str(), dev.cc_major, dev.cc_minor, dev.sm_count, M, N, K, dist.name().c_str(),
              (unsigned long long)seed, reps);
  const Matrix A = generate(dist, Operand::A, M, K, Format::fp32, seed);
  const Matrix B = generate(dist, Operand::B, K, N, Format::fp32, seed);
  TimingOptions once;
  once.warmup = 0;
  once.reps = 1;
  once.flush_l2 = false;
  const KernelRun ref = run_kernel(*naive, A, B, once);  // the bit pattern every candidate must match

  TimingOptions topt;
  topt.warmup = 3;
  topt.reps = std::max(1, reps);
  struct Row {
    const Candidate* c;
    std::string status;  // ok, mismatch, unfit, error
    double ms = 0, tflops = 0;
    long long mismatches = 0;
  };
  const std::vector<Candidate> cands = candidates();
  std::vector<Row> rows;
  for (const Candidate& c : cands) {
    Row r{&c, "ok"};
    Kernel k = *base;
    k.m_multiple = c.bm;
    k.n_multiple = c.bn;
    k.k_multiple = c.bk;
    k.launch = c.launch;
    if (!check_size(k, M, N, K).empty()) {
      r.status = "unfit";
      rows.push_back(r);
      continue;
    }
    try {
      KernelRun run = run_kernel(k, A, B, topt);
      r.ms = run.time_ms_median;
      r.tflops = run.tflops;
      for (std::size_t i = 0; i < run.c.size(); ++i)
        if (std::memcmp(&run.c[i], &ref.c[i], sizeof(double)) != 0) ++r.mismatches;
      if (r.mismatches || run.unwritten) r.status = "mismatch";
    } catch (const std::exception& e) {
      r.status = std::string("error: ") + e.what();
    }
    std::printf("  %-8s %-58s %9.3f ms %7.2f TFLOP/s  %s\n", c.templ, c.shape.c_str(), r.ms, r.tflops,
                r.status.c_str());
    std::fflush(stdout);
    rows.push_back(r);
  }

  std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
    if ((a.status == "ok") != (b.status == "ok")) return a.status == "ok";
    return a.ms < b.ms;
  });
  std::printf("\nfastest first (bit-identical to sgemm_01_naive unless marked):\n");
  std::printf("%-9s %-58s %10s %8s  %s\n", "template", "shape", "time_ms", "tflops", "status");
  for (const Row& r : rows)
    std::printf("%-9s %-58s %10.3f %8.2f  %s\n", r.c->templ, r.c->shape.c_str(), r.ms, r.tflops,
                r.status == "mismatch" ? ("MISMATCH (" + std::to_string(r.mismatches) + " entries)").c_str()
                                       : r.status.c_str());

  const Row* best = nullptr;
  for (const Row& r : rows)
    if (r.status == "ok" && std::strcmp(r.c->templ, "sgemm_09") == 0) {
      best = &r;
      break;
    }
  if (!best) {
    std::fprintf(stderr, "gemmlab tune: no sgemm_09 candidate fits M=%d N=%d K=%d and matches the naive kernel\n",
                 M, N, K);
    return 2;
  }
  std::printf("\nsgemm_09 winner: %s, %.3f ms, %.2f TFLOP/s\n", best->c->shape.c_str(), best->ms, best->tflops);
  if (write_header_path.empty()) return 0;

  std::ostringstream h;
  h << "// Tile sizes of sgemm_09_autotuned, written by `gemmlab tune` (experiments/tune_sgemm.cu).\n"
    << "// Tuned on " << dev.name << " (cc " << dev.cc_major << "." << dev.cc_minor << ", " << dev.sm_count
    << " SMs) on " << utc_now("%Y-%m-%d %H:%M UTC") << "\n"
    << "// by tune_sgemm(M=" << M << ", N=" << N << ", K=" << K << ", reps=" << reps
    << ") [gemmlab tune], inputs uniform_-1_1 seed 1:\n"
    << "// fastest of " << cands.size() << " shapes that match sgemm_01_naive bit for bit, median "
    << best->ms << " ms = " << best->tflops << " TFLOP/s.\n"
    << "#pragma once\n\n"
    << "namespace gemmlab::kernels::sgemm09::tuned {\n"
    << "constexpr int BM = " << best->c->bm << ", BN = " << best->c->bn << ", BK = " << best->c->bk
    << ", TM = " << best->c->tm << ", TN = " << best->c->tn << ";\n"
    << "}  // namespace gemmlab::kernels::sgemm09::tuned\n";
  const std::string tmp = write_header_path + ".tmp";
  {
    std::ofstream f(tmp);
    f << h.str();
    if (!f) {
      std::fprintf(stderr, "gemmlab tune: cannot write %s\n", tmp.c_str());
      return 3;
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, write_header_path, ec);
  if (ec) {
    std::fprintf(stderr, "gemmlab tune: cannot write %s: %s\n", write_header_path.c_str(), ec.message().c_str());
    return 3;
  }
  std::printf("wrote %s (rebuild to use it)\n", write_header_path.c_str());
  return 0;
}

}  // namespace gemmlab
