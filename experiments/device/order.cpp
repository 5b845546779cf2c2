// `gemmlab order` (FPRev masking) on the GPU; see order.hpp.
#include "experiments/device/order.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "experiments/device/runner.hpp"
#include "experiments/engine/plugin.hpp"
#include "experiments/report/files.hpp"
#include "experiments/report/metadata.hpp"
#include "kernels/registry.hpp"
#include "reference/kernel_emulation.hpp"
#include "reference/summation_tree.hpp"
#include "reference/tc_model.hpp"

namespace gemmlab {

RevealedTree reveal_tree(const Kernel& k, int M, int N, int K, int i, int j) {
  // Zero operands on the GPU; only row i of A and column j of B change between launches.
  EntryRunner runner(k, Matrix(M, K), Matrix(K, N));
  return reveal_tree_with(k, K, [&](const std::vector<double>& a, const std::vector<double>& b) {
    runner.set_a_row(i, a);
    runner.set_b_col(j, b);
    return runner.run_entry(i, j);
  });
}

namespace {

// The CSV rows of a tree: one per addition, the root last.
std::vector<std::vector<std::string>> tree_rows(const std::string& kernel, int K, const SummationTree& tree) {
  std::vector<std::vector<std::string>> rows;
  for (int id = K; id < tree.node_count(); ++id) {
    std::string children;
    for (int c : tree.children(id)) children += (children.empty() ? "" : " ") + tree.name(c);
    rows.push_back({kernel, std::to_string(K), tree.name(id), children, std::to_string(tree.size(id)), tree.kind(id)});
  }
  return rows;
}

const std::vector<std::string> kTreeColumns = {"kernel", "K", "node", "children", "size", "kind"};

// `gemmlab order --declared`: the numerics record's tree, on the CPU.
int declared_order(const Kernel& k, int M, int N, int K, int i, int j, const std::string& out_csv,
                   const std::string& command_line) {
  if (!k.numerics.predictable()) {
    std::cerr << "gemmlab order: " << k.name << " declares no summation order (numerics " << k.numerics.describe()
              << "): run `gemmlab order` without --declared on a GPU to reveal it\n";
    return 2;
  }
  std::optional<SummationTree> declared;
  try {
    const std::vector<int> cuts = k.numerics.k_chunked ? k.k_chunks(M, N, K).of(i, j) : std::vector<int>{};
    declared.emplace(emulation::expected_tree(k.numerics, K, cuts));
  } catch (const std::invalid_argument& e) {
    std::cerr << "gemmlab order: " << k.name << ": no declared tree at K = " << K << ": " << e.what() << "\n";
    return 2;
  }
  const SummationTree& tree = *declared;
  try {
    check_writable(out_csv);
  } catch (const std::exception& e) {
    std::cerr << "gemmlab order: " << e.what() << "\n";
    return 2;
  }
  std::cout << k.name << ", " << M << "x" << N << "x" << K << ", C(" << i << "," << j << "), as declared ("
            << k.numerics.describe() << "): " << describe(tree) << "\n";
  nlohmann::json meta = base_metadata("order", command_line, out_csv);
  meta["entry"] = {{"M", M}, {"N", N}, {"K", K}, {"i", i}, {"j", j}};
  meta["tree_source"] = "declared: the kernel's numerics record, nothing run";
  write_table(out_csv, kTreeColumns, tree_rows(k.name, K, tree), meta);
  std::cout << "  wrote " << out_csv << "\n";
  return 0;
}

}  // namespace

int run_order(const std::string& kernel_name, int M, int N, int K, int i, int j, const std::string& out_csv,
              const std::string& command_line, bool declared) {
  const Kernel* k = find_kernel(kernel_name);
  if (!k) {
    std::cerr << "gemmlab order: unknown kernel '" << kernel_name << "' (gemmlab list shows the names)\n";
    return 2;
  }
  if (std::string why = check_size(*k, M, N, K); !why.empty()) {
    std::cerr << "gemmlab order: " << why << "\n";
    return 2;
  }
  if (K < 2 || i < 0 || i >= M || j < 0 || j >= N) {
    std::cerr << "gemmlab order: entry (" << i << ", " << j << ") must lie in the (" << M << ", " << N
              << ") output and K must be at least 2\n";
    return 2;
  }
  if (declared) return declared_order(*k, M, N, K, i, j, out_csv, command_line);
  const DeviceInfo& dev = query_device();
  if (!dev.present) {
    std::cerr << "gemmlab order: no usable GPU: " << dev.why_absent
              << " (`gemmlab order --declared` prints the tree the kernel's numerics declare, without a GPU)\n";
    return 2;
  }
  if (std::string why = hardware_support(*k, dev); !why.empty()) {
    std::cerr << "gemmlab order: " << k->name << " cannot run here: " << why << "\n";
    return 2;
  }
  Masks masks;
  try {
    masks = choose_masks(*k, K);
  } catch (const std::invalid_argument& e) {
    std::cerr << "gemmlab order: " << e.what() << "\n";
    return 2;
  }
  try {
    check_writable(out_csv);
  } catch (const std::exception& e) {
    std::cerr << "gemmlab order: " << e.what() << "\n";
    return 2;
  }
  if (masks.margin_bits < 27)
    std::cerr << "gemmlab order: warning: the units lie only 2^" << masks.margin_bits
              << " below M in " << info(k->numerics.input).name
              << "; an accumulator keeping more bits than that would make counts wrong (a smaller K helps)\n";

  RevealedTree revealed;
  try {
    revealed = reveal_tree(*k, M, N, K, i, j);
  } catch (const std::runtime_error& e) {
    std::cerr << "gemmlab order: " << k->name << ": " << e.what() << "\n";
    return 4;
  }
  const SummationTree& tree = revealed.tree;
  const std::string text = describe(tree);
  std::cout << k->name << ", " << M << "x" << N << "x" << K << ", C(" << i << "," << j << "): " << text << "\n";
  std::cout << "  " << revealed.runs << " kernel runs in " << revealed.seconds << " s; " << revealed.masks << "\n";
  if (const Numerics* order = k->numerics.predictable() ? &k->numerics : nullptr) {
    try {
      const std::vector<int> cuts = order->k_chunked ? k->k_chunks(M, N, K).of(i, j) : std::vector<int>{};
      SummationTree expect = emulation::expected_tree(*order, K, cuts);
      bool same = expect.canonical() == tree.canonical();
      std::cout << "  " << (same ? "same tree as" : "DIFFERS from") << " the order gemmlab's emulation assumes ("
                << order->describe() << ")\n";
      if (!same) std::cout << "  assumed: " << describe(expect) << "\n";
    } catch (const std::invalid_argument& e) {
      std::cout << "  (no expected tree: " << e.what() << ")\n";
    }
  } else {
    std::cout << "  (gemmlab has no model of this kernel's order to compare with)\n";
  }

  const std::vector<std::vector<std::string>> rows = tree_rows(k->name, K, tree);
  nlohmann::json meta = base_metadata("order", command_line, out_csv);
  meta["entry"] = {{"M", M}, {"N", N}, {"K", K}, {"i", i}, {"j", j}};
  add_device_metadata(meta, query_device(), software_versions(), current_sm_clock_mhz());
  if (nlohmann::json plugins = plugins_metadata({kernel_name}); !plugins.empty()) meta["plugins"] = plugins;
  meta["tree_source"] = "revealed on the GPU";
  write_table(out_csv, kTreeColumns, rows, meta);
  std::cout << "  wrote " << out_csv << "\n";
  return 0;
}

}  // namespace gemmlab
