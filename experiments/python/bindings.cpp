// gemmlab._core: the plain-C++ parts of reference/ for Python (nanobind).
//
// A thin layer: formats travel as their CSV names ("fp16"), matrices as C-contiguous float64 numpy
// arrays, copied into a reference Matrix before the GIL is released. The typed, documented API is
// the Python package around it (experiments/python/gemmlab/): it checks shapes, dtypes and values
// before calling in, so the errors raised here are the last line of defence (C++
// std::invalid_argument arrives as ValueError, std::out_of_range as IndexError).
//
// Where the refactor (issue 11) changes reference/, only this file follows: KernelOrder becomes a
// Numerics record (see emulate below), and the CSV columns move to one typed definition.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "reference/distributions.hpp"
#include "reference/error_stats.hpp"
#include "reference/exact_gemm.hpp"
#include "reference/formats.hpp"
#include "reference/kernel_emulation.hpp"
#include "reference/mpfr_gemm.hpp"
#include "reference/tc_model.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace gemmlab::python {
namespace {

using In1 = nb::ndarray<const double, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
using In2 = nb::ndarray<const double, nb::ndim<2>, nb::c_contig, nb::device::cpu>;
using InBits = nb::ndarray<const std::uint64_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
template <class T>
using Out = nb::ndarray<nb::numpy, T>;

Format format_of(const std::string& name) {
  if (auto f = parse_format(name)) return *f;
  std::string valid;
  for (Format f : all_formats()) valid += std::string(valid.empty() ? "" : ", ") + info(f).name;
  throw std::invalid_argument("unknown format '" + name + "'; valid formats: " + valid);
}

// A numpy array that owns `v` (moved to the heap, freed with the array).
template <class T>
Out<T> to_numpy(std::vector<T>&& v, std::initializer_list<std::size_t> shape) {
  auto* owned = new std::vector<T>(std::move(v));
  nb::capsule owner(owned, [](void* p) noexcept { delete static_cast<std::vector<T>*>(p); });
  return Out<T>(owned->data(), shape, owner);
}

Matrix to_matrix(const In2& a) {
  Matrix m(static_cast<int>(a.shape(0)), static_cast<int>(a.shape(1)));
  if (m.size()) std::memcpy(m.v.data(), a.data(), m.size() * sizeof(double));
  return m;
}


tc::Instruction instruction_of(const std::string& name) {
  if (auto i = tc::parse_instruction(name)) return *i;
  std::string valid;
  for (tc::Instruction i : tc::all_instructions()) valid += std::string(valid.empty() ? "" : ", ") + tc::info(i).name;
  throw std::invalid_argument("unknown instruction '" + name + "'; valid instructions: " + valid);
}

template <class E, std::size_t N>
E enum_of(const std::string& what, const std::string& name, const E (&values)[N]) {
  std::string valid;
  for (E v : values) {
    if (name == tc::to_string(v)) return v;
    valid += std::string(valid.empty() ? "" : ", ") + tc::to_string(v);
  }
  throw std::invalid_argument("unknown " + what + " '" + name + "'; valid: " + valid);
}
constexpr tc::AlignRounding kAlignRoundings[] = {tc::AlignRounding::toward_zero, tc::AlignRounding::floor,
                                                 tc::AlignRounding::nearest_even};
constexpr tc::OutputRounding kOutputRoundings[] = {tc::OutputRounding::toward_zero, tc::OutputRounding::nearest_even};
constexpr tc::AlignReference kAlignReferences[] = {tc::AlignReference::exponent_sum,
                                                   tc::AlignReference::value_exponent};

AccRounding acc_rounding_of(const std::string& name) {
  if (name == "nearest") return AccRounding::nearest;
  if (name == "truncate") return AccRounding::truncate;
  if (name == "unknown") return AccRounding::unknown;
  throw std::invalid_argument("unknown accumulation rounding '" + name + "'; valid: nearest, truncate, unknown");
}

nb::dict reference_dict(GemmReference&& r) {
  nb::dict d;
  const std::size_t M = r.M, N = r.N;
  d["c"] = to_numpy(std::move(r.c), {M, N});
  d["c_out"] = to_numpy(std::move(r.c_out), {M, N});
  d["abs_ab"] = to_numpy(std::move(r.abs_ab), {M, N});
  d["output_format"] = info(r.out).name;
  d["engine"] = r.engine;
  d["seconds"] = r.seconds;
  return d;
}

// splitmix64, as experiments/run_gpu.cpp picks the entries it spot-checks against MPFR.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Checks `spot_checks` entries of a reference against MPFR, the entries `gemmlab run` picks for this
// seed; throws when one differs. Returns the CSV `reference` label, e.g. "fixed_int128+mpfr_spot16".
std::string spot_check(const Matrix& A, const Matrix& B, const GemmReference& ref, int spot_checks, std::uint64_t seed) {
  const long long total = static_cast<long long>(ref.M) * ref.N;
  const int n = static_cast<int>(std::min<long long>(std::max(spot_checks, 0), total));
  for (int k = 0; k < n; ++k) {
    const long long idx = static_cast<long long>(mix(seed * 1315423911ull + static_cast<std::uint64_t>(k)) %
                                                 static_cast<std::uint64_t>(total));
    const int i = static_cast<int>(idx / ref.N), j = static_cast<int>(idx % ref.N);
    const double m = mpfr_dot(A, B, i, j);
    if (!(m == ref.c[idx]) && !(std::isnan(m) && std::isnan(ref.c[idx])))
      throw std::runtime_error("reference self-check failed: " + ref.engine + " and MPFR disagree on C(" +
                               std::to_string(i) + "," + std::to_string(j) + "); please report this");
  }
  return n > 0 ? ref.engine + "+mpfr_spot" + std::to_string(n) : ref.engine;
}

// compute_error_stats of `computed` against a reference given as its three arrays, judged by the
// bound model of the declared numerics; the dict holds the ErrorStats fields plus `over_range`
// (exact entries beyond the output format's range: no kernel can compute those).
nb::dict error_stats(const In2& computed, const In2& c, const In2& c_out, const In2& abs_ab, int K,
                     const std::string& output, const std::string& input, const std::string& compute,
                     const std::string& accumulator, const std::string& rounding, double acc_unit_roundoff,
                     int threads) {
  const std::size_t M = computed.shape(0), N = computed.shape(1);
  for (const In2* x : {&c, &c_out, &abs_ab})
    if (x->shape(0) != M || x->shape(1) != N) throw std::invalid_argument("error_stats: C and the reference differ in shape");
  BoundModel model;
  model.K = K;
  model.input = format_of(input);
  model.compute = format_of(compute);
  model.accumulator = format_of(accumulator);
  model.output = format_of(output);
  model.rounding = acc_rounding_of(rounding);
  model.acc_unit_roundoff = acc_unit_roundoff;
  GemmReference ref;
  ref.M = static_cast<int>(M), ref.N = static_cast<int>(N), ref.K = K, ref.out = model.output;
  ref.c.assign(c.data(), c.data() + c.size());
  ref.c_out.assign(c_out.data(), c_out.data() + c_out.size());
  ref.abs_ab.assign(abs_ab.data(), abs_ab.data() + abs_ab.size());
  const std::vector<double> C(computed.data(), computed.data() + computed.size());
  ErrorStats s;
  long long over_range = 0;
  {
    nb::gil_scoped_release release;
    const double maxf = info(model.output).max_finite;
    for (double x : ref.c) over_range += !(std::fabs(x) <= maxf);
    s = compute_error_stats(C, ref, model, threads);
  }
  nb::dict d;
  d["over_range"] = over_range;
  d["entries"] = s.entries;
  d["zero_reference"] = s.zero_reference;
  d["zero_ref_nonzero"] = s.zero_ref_nonzero;
  d["nonfinite"] = s.nonfinite;
  d["rel_count"] = s.rel_count;
  d["rel_mean"] = s.rel_mean;
  d["rel_mean_ci95"] = s.rel_mean_ci95;
  d["rel_std"] = s.rel_std;
  d["rel_median"] = s.rel_median;
  d["rel_p01"] = s.rel_p01;
  d["rel_p99"] = s.rel_p99;
  d["rel_max_abs"] = s.rel_max_abs;
  d["u_out"] = s.u_out;
  d["rel_mean_u"] = s.rel_mean_u;
  d["rel_std_u"] = s.rel_std_u;
  d["rel_median_u"] = s.rel_median_u;
  d["rel_p01_u"] = s.rel_p01_u;
  d["rel_p99_u"] = s.rel_p99_u;
  d["rel_max_abs_u"] = s.rel_max_abs_u;
  d["normwise"] = s.normwise;
  d["componentwise"] = s.componentwise;
  d["cw_mean"] = s.cw_mean;
  d["cw_mean_ci95"] = s.cw_mean_ci95;
  d["cw_std"] = s.cw_std;
  d["frac_correctly_rounded"] = s.frac_correctly_rounded;
  d["gamma_bound"] = s.gamma_bound;
  d["cw_over_gamma"] = s.cw_over_gamma;
  d["sqrtk_u"] = s.sqrtk_u;
  d["cw_over_sqrtk_u"] = s.cw_over_sqrtk_u;
  d["within_bound"] = s.within_bound;
  return d;
}

void bind_formats(nb::module_& m) {
  m.def("format_names", [] {
    std::vector<std::string> v;
    for (Format f : all_formats()) v.push_back(info(f).name);
    return v;
  }, "The formats gemmlab knows, by their CSV names.");
  m.def("format_info", [](const std::string& name) {
    const FormatInfo& i = info(format_of(name));
    nb::dict d;
    d["name"] = i.name;
    d["precision"] = i.precision;
    d["emin"] = i.emin;
    d["emax"] = i.emax;
    d["storage_bits"] = i.storage_bits;
    d["has_infinity"] = i.has_infinity;
    d["max_finite"] = i.max_finite;
    d["unit_roundoff"] = i.unit_roundoff;
    return d;
  }, "format"_a, "Facts of one format (reference/formats.hpp FormatInfo) as a dict.");
  m.def("round_to", [](const std::string& fmt, const In1& x) {
    const Format f = format_of(fmt);
    std::vector<double> out(x.shape(0));
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = round_to(f, x(i));
    return to_numpy(std::move(out), {out.size()});
  }, "format"_a, "x"_a, "Round-to-nearest-even into the format (subnormals kept; overflow as formats.hpp says).");
  m.def("to_bits", [](const std::string& fmt, const In1& x) {
    const Format f = format_of(fmt);
    std::vector<std::uint64_t> out(x.shape(0));
    for (std::size_t i = 0; i < out.size(); ++i) {
      if (!is_representable(f, x(i)))
        throw std::invalid_argument("to_bits: " + std::to_string(x(i)) + " is not representable in " + fmt +
                                    "; round it first (round_to)");
      out[i] = to_bits(f, x(i));
    }
    return to_numpy(std::move(out), {out.size()});
  }, "format"_a, "x"_a, "Bit patterns (low storage_bits bits) of values representable in the format.");
  m.def("from_bits", [](const std::string& fmt, const InBits& bits) {
    const Format f = format_of(fmt);
    std::vector<double> out(bits.shape(0));
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = from_bits(f, bits(i));
    return to_numpy(std::move(out), {out.size()});
  }, "format"_a, "bits"_a, "Values of bit patterns.");
  m.def("is_representable", [](const std::string& fmt, const In1& x) {
    const Format f = format_of(fmt);
    std::vector<std::uint8_t> out(x.shape(0));
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = is_representable(f, x(i));
    return to_numpy(std::move(out), {out.size()});
  }, "format"_a, "x"_a, "1 where the value is exactly a value of the format (NaN counts), else 0.");
}

void bind_distributions(nb::module_& m) {
  m.def("canonical_distribution", [](const std::string& name) { return parse_distribution(name).name(); },
        "name"_a, "The canonical name of a distribution (aliases resolved); ValueError if unknown.");
  m.def("default_distributions", [] {
    std::vector<std::string> v;
    for (const auto& d : default_distributions()) v.push_back(d.name());
    return v;
  }, "The distributions `gemmlab run -d all` uses.");
  m.def("generate", [](const std::string& dist, const std::string& operand, int rows, int cols,
                       const std::string& fmt, std::uint64_t seed, int threads) {
    if (operand != "A" && operand != "B") throw std::invalid_argument("operand must be 'A' or 'B', got '" + operand + "'");
    const Distribution d = parse_distribution(dist);
    const Format f = format_of(fmt);
    Matrix out;
    {
      nb::gil_scoped_release release;
      out = generate(d, operand == "A" ? Operand::A : Operand::B, rows, cols, f, seed, threads);
    }
    return to_numpy(std::move(out.v), {static_cast<std::size_t>(rows), static_cast<std::size_t>(cols)});
  }, "distribution"_a, "operand"_a, "rows"_a, "cols"_a, "format"_a, "seed"_a, "threads"_a = 0,
     "One operand, row-major (rows, cols), exactly as reference/distributions.hpp generate().");
  m.def("unusable_reason", [](const std::string& dist, const std::string& fmt) {
    return unusable_reason(parse_distribution(dist), format_of(fmt));
  }, "distribution"_a, "format"_a, "Why the distribution cannot be generated in the format ('' if it can).");
  m.def("exact_in", [](const std::string& dist, const std::string& in, const std::string& out, int K) {
    return exact_in(parse_distribution(dist), format_of(in), format_of(out), K);
  }, "distribution"_a, "input_format"_a, "output_format"_a, "K"_a,
     "For exactint: '' when every product and partial sum is exact in the output format, else why not.");
}

void bind_reference(nb::module_& m) {
  m.def("exact_gemm", [](const In2& a, const In2& b, const std::string& out, int threads, const std::string& engine,
                         int spot_checks, std::uint64_t seed) {
    const Matrix A = to_matrix(a), B = to_matrix(b);
    const Format f = format_of(out);
    ExactEngine e;
    if (engine == "automatic") e = ExactEngine::automatic;
    else if (engine == "fixed_int128") e = ExactEngine::fixed_int128;
    else if (engine == "kulisch") e = ExactEngine::kulisch;
    else throw std::invalid_argument("unknown engine '" + engine + "'; valid: automatic, fixed_int128, kulisch");
    GemmReference r;
    std::string label;
    {
      nb::gil_scoped_release release;
      r = exact_gemm(A, B, f, threads, e);
      label = spot_check(A, B, r, spot_checks, seed);
    }
    nb::dict d = reference_dict(std::move(r));
    d["label"] = label;
    return d;
  }, "A"_a, "B"_a, "output_format"_a, "threads"_a = 0, "engine"_a = "automatic", "spot_checks"_a = 0, "seed"_a = 0,
     "Exact C = A B rounded once: dict with c (binary64), c_out (output format), abs_ab, engine, seconds,\n"
     "and label (engine, plus '+mpfr_spotN' when N entries were checked against MPFR as gemmlab run does).");
  m.def("mpfr_gemm", [](const In2& a, const In2& b, const std::string& out, int threads) {
    const Matrix A = to_matrix(a), B = to_matrix(b);
    const Format f = format_of(out);
    GemmReference r;
    {
      nb::gil_scoped_release release;
      r = mpfr_gemm(A, B, f, threads);
    }
    nb::dict d = reference_dict(std::move(r));
    d["label"] = "mpfr";
    return d;
  }, "A"_a, "B"_a, "output_format"_a, "threads"_a = 0, "The same through MPFR (slow: small sizes).");
  m.def("exact_dot", [](const In2& a, const In2& b, int i, int j) { return exact_dot(to_matrix(a), to_matrix(b), i, j); },
        "A"_a, "B"_a, "i"_a, "j"_a, "Exact C(i, j) rounded to binary64 (Kulisch engine).");
  m.def("mpfr_dot", [](const In2& a, const In2& b, int i, int j) { return mpfr_dot(to_matrix(a), to_matrix(b), i, j); },
        "A"_a, "B"_a, "i"_a, "j"_a, "Exact C(i, j) rounded to binary64 through MPFR.");
  m.def("fits_fixed_int128", [](const In2& a, const In2& b) { return fits_fixed_int128(to_matrix(a), to_matrix(b)); },
        "A"_a, "B"_a, "Whether the fast int128 fixed-point engine can take these inputs.");
}

void bind_stats(nb::module_& m) {
  m.def("error_stats", &error_stats, "C"_a, "c"_a, "c_out"_a, "abs_ab"_a, "K"_a, "output_format"_a, "input_format"_a,
        "compute_format"_a, "accumulator_format"_a, "acc_rounding"_a, "acc_unit_roundoff"_a, "threads"_a,
        "compute_error_stats of C against a reference (a dict of the ErrorStats fields and over_range).");
  m.def("bound", [](int K, const std::string& input, const std::string& compute, const std::string& accumulator,
                    const std::string& output, const std::string& rounding, double acc_unit_roundoff) {
    BoundModel b;
    b.K = K;
    b.input = format_of(input);
    b.compute = format_of(compute);
    b.accumulator = format_of(accumulator);
    b.output = format_of(output);
    b.rounding = acc_rounding_of(rounding);
    b.acc_unit_roundoff = acc_unit_roundoff;
    return std::make_pair(gamma_bound_factor(b), sqrtk_u(b));
  }, "K"_a, "input_format"_a, "compute_format"_a, "accumulator_format"_a, "output_format"_a, "acc_rounding"_a,
     "acc_unit_roundoff"_a, "(gamma_bound_factor, sqrtk_u) of a BoundModel (reference/error_stats.hpp).");
}

void bind_tc(nb::module_& m) {
  nb::class_<tc::TcParams>(m, "TcParams", "Parameters of the tensor-core model (reference/tc_model.hpp).")
      .def("__init__",
           [](tc::TcParams* p, const std::string& input, const std::string& output, int block_size, int neab,
              const std::string& align_rounding, const std::string& output_rounding, const std::string& align_reference,
              bool c_in_alignment, bool subnormal_inputs, bool subnormal_output) {
             tc::TcParams q;
             q.input = format_of(input);
             q.output = format_of(output);
             q.block_size = block_size;
             q.neab = neab;
             q.align_rounding = enum_of("align_rounding", align_rounding, kAlignRoundings);
             q.output_rounding = enum_of("output_rounding", output_rounding, kOutputRoundings);
             q.align_reference = enum_of("align_reference", align_reference, kAlignReferences);
             q.c_in_alignment = c_in_alignment;
             q.subnormal_inputs = subnormal_inputs;
             q.subnormal_output = subnormal_output;
             new (p) tc::TcParams(q);
           },
           "input"_a = "fp16", "output"_a = "fp32", "block_size"_a = 16, "neab"_a = 2, "align_rounding"_a = "toward_zero",
           "output_rounding"_a = "toward_zero", "align_reference"_a = "exponent_sum", "c_in_alignment"_a = true,
           "subnormal_inputs"_a = true, "subnormal_output"_a = true)
      .def_prop_rw("input", [](const tc::TcParams& p) { return std::string(info(p.input).name); },
                   [](tc::TcParams& p, const std::string& v) { p.input = format_of(v); }, "Input format.")
      .def_prop_rw("output", [](const tc::TcParams& p) { return std::string(info(p.output).name); },
                   [](tc::TcParams& p, const std::string& v) { p.output = format_of(v); }, "Output (and C) format.")
      .def_rw("block_size", &tc::TcParams::block_size, "Products per fused addition before a rounding.")
      .def_rw("neab", &tc::TcParams::neab, "Extra alignment bits: F = p_out - 1 + neab fraction bits kept.")
      .def_prop_rw("align_rounding", [](const tc::TcParams& p) { return std::string(tc::to_string(p.align_rounding)); },
                   [](tc::TcParams& p, const std::string& v) { p.align_rounding = enum_of("align_rounding", v, kAlignRoundings); },
                   "toward_zero | floor | nearest_even: rounding of bits shifted out in alignment.")
      .def_prop_rw("output_rounding", [](const tc::TcParams& p) { return std::string(tc::to_string(p.output_rounding)); },
                   [](tc::TcParams& p, const std::string& v) { p.output_rounding = enum_of("output_rounding", v, kOutputRoundings); },
                   "toward_zero | nearest_even: rounding of the normalised sum into the output format.")
      .def_prop_rw("align_reference", [](const tc::TcParams& p) { return std::string(tc::to_string(p.align_reference)); },
                   [](tc::TcParams& p, const std::string& v) { p.align_reference = enum_of("align_reference", v, kAlignReferences); },
                   "exponent_sum | value_exponent: the exponent a product is aligned by.")
      .def_rw("c_in_alignment", &tc::TcParams::c_in_alignment, "C is aligned (and truncated) with the products.")
      .def_rw("subnormal_inputs", &tc::TcParams::subnormal_inputs, "False: subnormal inputs are flushed to zero.")
      .def_rw("subnormal_output", &tc::TcParams::subnormal_output, "False: subnormal C and results flush to zero.")
      .def_prop_ro("fraction_bits", &tc::TcParams::fraction_bits, "F, the fraction bits kept below the largest exponent.")
      .def("describe", &tc::TcParams::describe, "One line, as in gemmlab's tables.")
      .def("__repr__", [](const tc::TcParams& p) {
        return "TcParams(" + std::string(info(p.input).name) + " -> " + info(p.output).name + ", " + p.describe() + ")";
      })
      .def("__eq__", [](const tc::TcParams& a, nb::handle b) {
        return nb::isinstance<tc::TcParams>(b) && a == nb::cast<const tc::TcParams&>(b);
      }, "b"_a.none());

  m.def("instructions", [] {
    std::vector<nb::dict> v;
    for (tc::Instruction i : tc::all_instructions()) {
      const auto& x = tc::info(i);
      nb::dict d;
      d["name"] = x.name;
      d["input"] = info(x.input).name;
      d["output"] = info(x.output).name;
      d["m"] = x.m;
      d["n"] = x.n;
      d["k"] = x.k;
      d["min_cc"] = x.min_cc;
      v.push_back(d);
    }
    return v;
  }, "The instructions gemmlab probes (reference/tc_model.hpp InstructionInfo), as dicts.");
  m.def("tc_dot", [](const tc::TcParams& p, const In1& a, const In1& b, double c) {
    if (a.shape(0) != b.shape(0)) throw std::invalid_argument("dot: a and b must have the same length");
    return tc::dot(p, a.data(), b.data(), static_cast<int>(a.shape(0)), c);
  }, "params"_a, "a"_a, "b"_a, "c"_a, "d = c + sum a_i b_i through the model (reference/tc_model.hpp dot).");
  m.def("mma_tile", [](const tc::TcParams& p, const std::string& instruction, const In2& a, const In2& b, const In2& c) {
    const auto& ins = tc::info(instruction_of(instruction));
    std::vector<double> A(a.data(), a.data() + a.size()), B(b.data(), b.data() + b.size()), C(c.data(), c.data() + c.size());
    return to_numpy(tc::mma_tile(p, ins, A, B, C), {static_cast<std::size_t>(ins.m), static_cast<std::size_t>(ins.n)});
  }, "params"_a, "instruction"_a, "A"_a, "B"_a, "C"_a, "D = A B + C on one (m, n, k) tile of the instruction.");
  m.def("emulate", [](const std::string& accumulation, const std::string& instruction, int k_step, int promotion_k,
                      int split_k, const std::string& output, const In2& a, const In2& b, const tc::TcParams& p, int threads) {
    // A KernelOrder today; the refactor's Numerics record tomorrow (only this function changes).
    emulation::KernelOrder o;
    if (accumulation == "fma") o.accumulation = emulation::Accumulation::fma;
    else if (accumulation == "in_mma") o.accumulation = emulation::Accumulation::in_mma;
    else if (accumulation == "external") o.accumulation = emulation::Accumulation::external;
    else if (accumulation == "promoted") o.accumulation = emulation::Accumulation::promoted;
    else throw std::invalid_argument("cannot emulate accumulation '" + accumulation + "'; valid: fma, in_mma, external, promoted");
    if (o.accumulation != emulation::Accumulation::fma) o.instruction = instruction_of(instruction);
    o.k_step = k_step;
    o.promotion_k = promotion_k;
    o.split_k = split_k;
    o.output = format_of(output);
    const Matrix A = to_matrix(a), B = to_matrix(b);
    std::vector<double> out;
    {
      nb::gil_scoped_release release;
      out = emulation::emulate(o, A, B, p, threads);
    }
    return to_numpy(std::move(out), {static_cast<std::size_t>(A.rows), static_cast<std::size_t>(B.cols)});
  }, "accumulation"_a, "instruction"_a, "k_step"_a, "promotion_k"_a, "split_k"_a, "output"_a, "A"_a, "B"_a,
     "params"_a, "threads"_a = 0, "C = A B as a kernel with this order of accumulation computes it (kernel_emulation.hpp).");
}

}  // namespace
}  // namespace gemmlab::python

NB_MODULE(_core, m) {
  m.doc() = "gemmlab's reference/ (plain C++) for Python; use the typed API of the gemmlab package.";
  using namespace gemmlab::python;
  bind_formats(m);
  bind_distributions(m);
  bind_reference(m);
  bind_stats(m);
  bind_tc(m);
}
