// gemmlab._core: the plain-C++ parts of reference/ for Python (nanobind).
//
// A thin layer: formats travel as their CSV names ("fp16"), matrices as C-contiguous float64 numpy
// arrays, copied into a reference Matrix before the GIL is released. The typed, documented API is
// the Python package around it (python/gemmlab/): it checks shapes, dtypes and values
// before calling in, so the errors raised here are the last line of defence (C++
// std::invalid_argument arrives as ValueError, std::out_of_range as IndexError).
//
// Beyond reference/ it links the plain-C++ experiment core (experiments/plan, report, engine, with
// no kernel registered), so that the CSV columns (report/result.hpp), `gemmlab evaluate`'s row
// (engine/evaluate.hpp: the reference with its MPFR spot checks, the statistics, judge's status)
// and `gemmlab inputs` folders have one implementation for the CLI and for Python.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "experiments/engine/evaluate.hpp"
#include "experiments/engine/inputs.hpp"
#include "experiments/plan/plan.hpp"
#include "experiments/report/metadata.hpp"
#include "experiments/report/result.hpp"
#include "reference/distributions.hpp"
#include "reference/error_stats.hpp"
#include "reference/exact_gemm.hpp"
#include "reference/formats.hpp"
#include "reference/gemm_form.hpp"
#include "reference/kernel_emulation.hpp"
#include "reference/mpfr_gemm.hpp"
#include "reference/quantized_layout.hpp"
#include "reference/tc_block_scaled.hpp"
#include "reference/tc_gpus.hpp"
#include "reference/tc_model.hpp"
#include "experiments/engine/port.hpp"
#include "experiments/report/numerics_json.hpp"

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

// A run format or a quantized operand's element or scale format (reference/formats.hpp), for the
// functions on values and bit patterns.
Format any_format_of(const std::string& name) {
  if (auto f = parse_any_format(name)) return *f;
  std::string valid;
  for (Format f : all_formats()) valid += std::string(valid.empty() ? "" : ", ") + info(f).name;
  for (Format f : quantized_formats()) valid += std::string(", ") + info(f).name;
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
  for (tc::Instruction i : tc::every_instruction()) valid += std::string(valid.empty() ? "" : ", ") + tc::info(i).name;
  throw std::invalid_argument("unknown instruction '" + name + "'; valid instructions: " + valid);
}

template <class E, std::size_t N>
E enum_of(const std::string& what, const std::string& name, const E (&values)[N]) {
  std::string valid;
  for (E v : values) {
    if (name == to_string(v)) return v;
    valid += std::string(valid.empty() ? "" : ", ") + to_string(v);
  }
  throw std::invalid_argument("unknown " + what + " '" + name + "'; valid: " + valid);
}
constexpr Rounding kAlignRoundings[] = {Rounding::toward_zero, Rounding::floor, Rounding::nearest_even};
constexpr Rounding kOutputRoundings[] = {Rounding::toward_zero, Rounding::nearest_even};
constexpr Rounding kAccRoundings[] = {Rounding::nearest_even, Rounding::toward_zero, Rounding::unknown};
using tc::to_string;
constexpr tc::AlignReference kAlignReferences[] = {tc::AlignReference::exponent_sum,
                                                   tc::AlignReference::value_exponent};
constexpr tc::NanEncoding kNanEncodings[] = {tc::NanEncoding::all_ones, tc::NanEncoding::ieee_quiet,
                                             tc::NanEncoding::propagate};
constexpr tc::Arithmetic kArithmetics[] = {tc::Arithmetic::block_fused, tc::Arithmetic::fma_chain,
                                           tc::Arithmetic::fused_sum};
constexpr tc::ChainOrder kChainOrders[] = {tc::ChainOrder::increasing, tc::ChainOrder::decreasing};
constexpr tc::Overflow kOverflows[] = {tc::Overflow::by_rounding, tc::Overflow::infinity, tc::Overflow::saturate};
constexpr tc::ZeroSign kZeroSigns[] = {tc::ZeroSign::ieee, tc::ZeroSign::plus, tc::ZeroSign::c_sign};
constexpr tc::ZeroOperandExponent kZeroOperands[] = {tc::ZeroOperandExponent::none, tc::ZeroOperandExponent::input_emin,
                                                     tc::ZeroOperandExponent::fp32_emin};
constexpr Rounding kTf32LowBits[] = {Rounding::toward_zero, Rounding::nearest_even};

Accumulation accumulation_of(const std::string& name) {
  if (auto a = parse_accumulation(name)) return *a;
  std::string valid;
  for (Accumulation a : all_accumulations()) valid += std::string(valid.empty() ? "" : ", ") + to_string(a);
  throw std::invalid_argument("accumulation '" + name + "' is not known; valid: " + valid);
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

GemmReference reference_from(const In2& c, const In2& c_out, const In2& abs_ab, int K, Format out) {
  for (const In2* x : {&c_out, &abs_ab})
    if (x->shape(0) != c.shape(0) || x->shape(1) != c.shape(1))
      throw std::invalid_argument("reference: c, c_out and abs_ab differ in shape");
  GemmReference ref;
  ref.M = static_cast<int>(c.shape(0)), ref.N = static_cast<int>(c.shape(1)), ref.K = K, ref.out = out;
  ref.c.assign(c.data(), c.data() + c.size());
  ref.c_out.assign(c_out.data(), c_out.data() + c_out.size());
  ref.abs_ab.assign(abs_ab.data(), abs_ab.data() + abs_ab.size());
  return ref;
}

// experiments/engine/evaluate.hpp evaluate(): the row `gemmlab evaluate` writes, as its CSV fields
// (result_columns() order). The reference is computed as `gemmlab run` computes it unless given
// (ref_c, ref_c_out, ref_abs_ab, ref_label from exact_gemm).
std::vector<std::string> evaluate_row(const In2& a, const In2& b, const In2& computed, const std::string& kernel,
                                      const std::string& family, const std::string& input, const std::string& compute,
                                      const std::string& accumulator, const std::string& output,
                                      const std::string& accumulation, const std::string& rounding,
                                      double acc_unit_roundoff, int promotion_interval_k,
                                      const std::string& distribution, std::uint64_t seed, double time_ms, int reps,
                                      const std::string& note, int spot_checks, int threads,
                                      std::optional<In2> ref_c, std::optional<In2> ref_c_out,
                                      std::optional<In2> ref_abs_ab, const std::string& ref_label) {
  Declared d;
  d.numerics = declared_numerics(format_of(input), format_of(output), accumulation_of(accumulation),
                                 format_of(compute), format_of(accumulator), promotion_interval_k);
  if (!rounding.empty()) d.numerics.accumulation_rounding = enum_of("acc_rounding", rounding, kAccRoundings);
  d.numerics.acc_unit_roundoff = acc_unit_roundoff;
  d.kernel = kernel, d.family = family, d.distribution = distribution, d.seed = seed, d.note = note;
  if (std::isfinite(time_ms)) d.time_ms = time_ms;
  if (reps > 0) d.reps = reps;
  const Matrix A = to_matrix(a), B = to_matrix(b);
  if (computed.shape(0) != static_cast<std::size_t>(A.rows) || computed.shape(1) != static_cast<std::size_t>(B.cols))
    throw std::invalid_argument("evaluate: C does not have the shape of A B");
  const std::vector<double> C(computed.data(), computed.data() + computed.size());
  GemmReference ref;
  std::string label = ref_label;
  if (ref_c) ref = reference_from(*ref_c, *ref_c_out, *ref_abs_ab, A.cols, d.numerics.output);
  ResultRow row;
  {
    nb::gil_scoped_release release;
    if (!ref_c) ref = evaluation_reference(A, B, d.numerics.output, spot_checks, seed, threads, label);
    row = evaluate(A, B, C, d, ref, label, threads);
  }
  return to_fields(row);
}

void bind_formats(nb::module_& m) {
  m.def("format_names", [] {
    std::vector<std::string> v;
    for (Format f : all_formats()) v.push_back(info(f).name);
    return v;
  }, "The formats gemmlab knows, by their CSV names.");
  m.def("quantized_format_names", [] {
    std::vector<std::string> v;
    for (Format f : quantized_formats()) v.push_back(info(f).name);
    return v;
  }, "The element and scale formats of quantized operands (reference/formats.hpp quantized_formats()).");
  m.def("format_info", [](const std::string& name) {
    const FormatInfo& i = info(any_format_of(name));
    nb::dict d;
    d["name"] = i.name;
    d["precision"] = i.precision;
    d["emin"] = i.emin;
    d["emax"] = i.emax;
    d["storage_bits"] = i.storage_bits;
    d["has_infinity"] = i.has_infinity;
    d["max_finite"] = i.max_finite;
    d["unit_roundoff"] = i.unit_roundoff;
    d["lowest"] = i.lowest;
    d["has_nan"] = i.has_nan;
    d["integer"] = i.integer;
    return d;
  }, "format"_a, "Facts of one format (reference/formats.hpp FormatInfo) as a dict.");
  m.def("round_to", [](const std::string& fmt, const In1& x) {
    const Format f = any_format_of(fmt);
    std::vector<double> out(x.shape(0));
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = round_to(f, x(i));
    return to_numpy(std::move(out), {out.size()});
  }, "format"_a, "x"_a, "Round-to-nearest-even into the format (subnormals kept; overflow as formats.hpp says).");
  m.def("to_bits", [](const std::string& fmt, const In1& x) {
    const Format f = any_format_of(fmt);
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
    const Format f = any_format_of(fmt);
    std::vector<double> out(bits.shape(0));
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = from_bits(f, bits(i));
    return to_numpy(std::move(out), {out.size()});
  }, "format"_a, "bits"_a, "Values of bit patterns.");
  m.def("is_representable", [](const std::string& fmt, const In1& x) {
    const Format f = any_format_of(fmt);
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
    if (e != ExactEngine::automatic && spot_checks > 0)
      throw std::invalid_argument("spot checks are made on the automatic engine, as gemmlab run makes them: "
                                  "leave engine='automatic' or spot_checks=0");
    GemmReference r;
    std::string label;
    {
      nb::gil_scoped_release release;
      // The automatic engine through the one function gemmlab run and evaluate use (MPFR spot
      // checks on the entries the seed picks); a forced engine (tests) directly.
      if (e == ExactEngine::automatic) {
        r = evaluation_reference(A, B, f, spot_checks, seed, threads, label);
      } else {
        r = exact_gemm(A, B, f, threads, e);
        label = r.engine;
      }
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
  m.def("evaluate", &evaluate_row, "A"_a, "B"_a, "C"_a, "kernel"_a, "family"_a, "input_format"_a, "compute_format"_a,
        "accumulator_format"_a, "output_format"_a, "accumulation"_a, "acc_rounding"_a, "acc_unit_roundoff"_a,
        "promotion_interval_k"_a, "distribution"_a, "seed"_a, "time_ms"_a, "reps"_a, "note"_a, "spot_checks"_a,
        "threads"_a, "ref_c"_a.none(), "ref_c_out"_a.none(), "ref_abs_ab"_a.none(), "ref_label"_a,
        "experiments/engine/evaluate.hpp evaluate(): the CSV fields of the row (result_columns() order).\n"
        "acc_rounding '' takes the accumulation's default; time_ms NaN and reps <= 0 mean not given.");
  m.def("result_columns", [] { return result_columns(); }, "The CSV columns of every result row, in order.");
  m.def("timing_columns", [] { return timing_columns(); },
        "The columns that say how a row was timed: two runs of the same kernel on the same inputs differ in these alone.");
  m.def("form_name", [](const std::string& text) { return parse_form(text).name(); }, "text"_a,
        "The canonical text of a form (reference/gemm_form.hpp: the CSV's `form`); ValueError naming what is wrong");
  m.def("integer_stats_columns", [] {
    std::vector<std::string> v;
#define GEMMLAB_INTEGER_FIELD(type, name, doc) \
  if (std::is_integral_v<type>) v.push_back(#name);
    GEMMLAB_ERROR_STATS_FIELDS(GEMMLAB_INTEGER_FIELD)
#undef GEMMLAB_INTEGER_FIELD
    return v;
  }, "The statistics columns that are counts (GEMMLAB_ERROR_STATS_FIELDS of an integer type).");
  m.def("statuses", [] {
    std::vector<std::string> v;
    for (Status st : all_statuses()) v.push_back(to_string(st));
    return v;
  }, "The values of the status column (report/result.hpp Status, all eight; `planned` only in dry runs).");
  m.def("accumulations", [] {
    std::vector<std::string> v;
    for (Accumulation a : all_accumulations()) v.push_back(to_string(a));
    return v;
  }, "The accumulation modes (reference/numerics.hpp).");
  m.def("default_accumulation_rounding", [](const std::string& a) {
    return std::string(to_string(default_accumulation_rounding(accumulation_of(a))));
  }, "accumulation"_a, "How a declared accumulation rounds its additions (reference/numerics.hpp).");
  m.def("bound", [](int K, const std::string& input, const std::string& compute, const std::string& accumulator,
                    const std::string& output, const std::string& rounding, double acc_unit_roundoff) {
    BoundModel b;
    b.K = K;
    b.input = format_of(input);
    b.compute = format_of(compute);
    b.accumulator = format_of(accumulator);
    b.output = format_of(output);
    b.rounding = enum_of("acc_rounding", rounding, kAccRoundings);
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
      .def_prop_rw("arithmetic", [](const tc::TcParams& p) { return std::string(tc::to_string(p.arithmetic)); },
                   [](tc::TcParams& p, const std::string& v) { p.arithmetic = enum_of("arithmetic", v, kArithmetics); },
                   "block_fused | fma_chain | fused_sum: how the products and C are combined (the last two binary64 only).")
      .def_prop_rw("chain_order", [](const tc::TcParams& p) { return std::string(tc::to_string(p.chain_order)); },
                   [](tc::TcParams& p, const std::string& v) { p.chain_order = enum_of("chain_order", v, kChainOrders); },
                   "increasing | decreasing: the order of k in an fma_chain.")
      .def_rw("block_size", &tc::TcParams::block_size, "Products per fused addition before a rounding.")
      .def_rw("neab", &tc::TcParams::neab, "Extra alignment bits: F = p_out - 1 + neab fraction bits kept.")
      .def_prop_rw("align_rounding", [](const tc::TcParams& p) { return std::string(to_string(p.align_rounding)); },
                   [](tc::TcParams& p, const std::string& v) { p.align_rounding = enum_of("align_rounding", v, kAlignRoundings); },
                   "toward_zero | floor | nearest_even: rounding of bits shifted out in alignment.")
      .def_prop_rw("output_rounding", [](const tc::TcParams& p) { return std::string(to_string(p.output_rounding)); },
                   [](tc::TcParams& p, const std::string& v) { p.output_rounding = enum_of("output_rounding", v, kOutputRoundings); },
                   "toward_zero | nearest_even: rounding of the normalised sum into the output format.")
      .def_prop_rw("align_reference", [](const tc::TcParams& p) { return std::string(tc::to_string(p.align_reference)); },
                   [](tc::TcParams& p, const std::string& v) { p.align_reference = enum_of("align_reference", v, kAlignReferences); },
                   "exponent_sum | value_exponent: the exponent a product is aligned by.")
      .def_rw("c_in_alignment", &tc::TcParams::c_in_alignment, "C is aligned (and truncated) with the products.")
      .def_rw("subnormal_inputs", &tc::TcParams::subnormal_inputs, "False: subnormal inputs are flushed to zero.")
      .def_rw("subnormal_output", &tc::TcParams::subnormal_output, "False: subnormal C and results flush to zero.")
      .def_rw("result_fraction_bits", &tc::TcParams::result_fraction_bits,
              "The normalised block result is cut to this many fraction bits (-1: the output format's).")
      .def_rw("zero_c_offset", &tc::TcParams::zero_c_offset,
              "A zero C joins the alignment with exponent emin_out - offset (-1: it takes no part).")
      .def_rw("step_interleave", &tc::TcParams::step_interleave,
              "0: contiguous blocks; g > 0: product i goes to block (i / g) mod (k / block_size).")
      // The special rules (reference/tc_model.hpp), settled on the H100/H200 by the adversarial corpus.
      .def_prop_rw("nan_encoding", [](const tc::TcParams& p) { return std::string(tc::to_string(p.nan_encoding)); },
                   [](tc::TcParams& p, const std::string& v) { p.nan_encoding = enum_of("nan_encoding", v, kNanEncodings); },
                   "all_ones | ieee_quiet | propagate: the bits of a NaN result (propagate: binary64 only, a NaN "
                   "operand's bits quieted, invalid operations 0xfff8000000000000).")
      .def_prop_rw("overflow", [](const tc::TcParams& p) { return std::string(tc::to_string(p.overflow)); },
                   [](tc::TcParams& p, const std::string& v) { p.overflow = enum_of("overflow", v, kOverflows); },
                   "by_rounding | infinity | saturate: a finite result beyond the output's range.")
      .def_prop_rw("zero_sign", [](const tc::TcParams& p) { return std::string(tc::to_string(p.zero_sign)); },
                   [](tc::TcParams& p, const std::string& v) { p.zero_sign = enum_of("zero_sign", v, kZeroSigns); },
                   "ieee | plus | c_sign: the sign of an exactly zero result.")
      .def_prop_rw("zero_operand_exponent",
                   [](const tc::TcParams& p) { return std::string(tc::to_string(p.zero_operand_exponent)); },
                   [](tc::TcParams& p, const std::string& v) {
                     p.zero_operand_exponent = enum_of("zero_operand_exponent", v, kZeroOperands);
                   },
                   "none | input_emin | fp32_emin: how a product with a zero operand joins the alignment.")
      .def_prop_rw("tf32_low_bits", [](const tc::TcParams& p) { return std::string(to_string(p.tf32_low_bits)); },
                   [](tc::TcParams& p, const std::string& v) { p.tf32_low_bits = enum_of("tf32_low_bits", v, kTf32LowBits); },
                   "toward_zero | nearest_even: what the low 13 bits of a tf32 operand's fp32 container do.")
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
    for (tc::Instruction i : tc::every_instruction()) {
      const auto& x = tc::info(i);
      nb::dict d;
      d["name"] = x.name;
      d["input"] = info(x.input).name;
      d["input_b"] = info(x.format_b()).name;
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
  m.def("measured_hopper_params", [](const std::string& instruction) -> std::optional<tc::TcParams> {
    return tc::measured_hopper_params(instruction_of(instruction));
  }, "instruction"_a, "The model gemmlab's probes inferred on Hopper (reference/tc_model.hpp); None where open (fp8).");
  // GPU generations (reference/tc_gpus.hpp).
  const auto generation_of = [](const std::string& gpu) {
    const std::optional<tc::Generation> g = tc::parse_gpu(gpu);
    if (!g) throw std::invalid_argument("gpu " + gpu + ": not a GPU gemmlab models; use one of " + tc::gpu_name_help());
    return *g;
  };
  m.def("tc_generation", [generation_of](const std::string& gpu) { return std::string(tc::to_string(generation_of(gpu))); },
        "gpu"_a, "The generation a GPU name, architecture (sm_80) or generation name stands for.");
  m.def("tc_gpus", [] {
    std::vector<nb::dict> v;
    for (const tc::GpuName& g : tc::gpu_names()) {
      nb::dict d;
      d["name"] = g.name;
      d["full_name"] = g.full_name;
      d["generation"] = tc::to_string(g.generation);
      d["compute_capability"] = std::to_string(g.cc / 10) + "." + std::to_string(g.cc % 10);
      v.push_back(d);
    }
    return v;
  }, "The GPUs --gpu names (reference/tc_gpus.hpp gpu_names).");
  m.def("tc_instructions_of", [generation_of](const std::string& gpu) {
    std::vector<std::string> v;
    for (tc::Instruction i : tc::instructions_of(generation_of(gpu))) v.push_back(tc::info(i).name);
    return v;
  }, "gpu"_a, "The instructions a generation has.");
  m.def("generation_params", [generation_of](const std::string& instruction, const std::string& gpu) {
    const tc::Generation g = generation_of(gpu);
    const tc::Instruction i = instruction_of(instruction);
    const std::optional<tc::TcParams> p = tc::generation_params(g, i);
    if (!p) {
      const std::optional<tc::Instruction> near = tc::closest_instruction(g, i);
      throw std::invalid_argument(instruction + " does not exist on " + tc::to_string(g) +
                                  (near ? std::string(": the closest instruction it has is ") + tc::info(*near).name : ""));
    }
    return *p;
  }, "instruction"_a, "gpu"_a, "A generation's model of an instruction (reference/tc_gpus.hpp generation_params).");
  m.def("tc_provenance", [generation_of](const std::string& instruction, const std::string& gpu) {
    const tc::ModelProvenance p = tc::provenance(generation_of(gpu), instruction_of(instruction));
    return std::make_pair(std::string(tc::to_string(p.source)), p.text);
  }, "instruction"_a, "gpu"_a, "Where a generation's model of an instruction comes from: (probed|fitted|literature, text).");
  // Blackwell's block-scaled kinds (reference/tc_block_scaled.hpp: a model from the literature). Empty
  // formats and block 0 are the kind's defaults, as tc-eval's.
  m.def("block_scaled_dot", [](const std::string& kind_name, const In1& a, const In1& b, const In1& scale_a,
                               const In1& scale_b, const std::string& a_format, const std::string& b_format, int block,
                               const std::string& scale_format, double c) {
    const std::optional<tc::BlockScaledKind> kind = tc::parse_block_scaled_kind(kind_name);
    if (!kind)
      throw std::invalid_argument("unknown block-scaled kind '" + kind_name +
                                  "'; valid: tcgen05_mxf8f6f4, tcgen05_mxf4, tcgen05_mxf4nvf4");
    const std::vector<Format>& elements = tc::element_formats(*kind);
    std::string valid;
    for (Format f : elements) valid += std::string(valid.empty() ? "" : ", ") + info(f).name;
    const auto element = [&](const std::string& what, const std::string& name) {
      if (name.empty()) return elements.front();
      const Format f = any_format_of(name);
      if (std::find(elements.begin(), elements.end(), f) == elements.end())
        throw std::invalid_argument(what + ": " + kind_name + " takes " + valid + " elements, not " + name);
      return f;
    };
    const Format fa = element("a_format", a_format), fb = element("b_format", b_format);
    if (block == 0) block = tc::info(*kind).default_block;
    const Format sf = scale_format.empty() ? tc::default_scale_format(*kind, block) : any_format_of(scale_format);
    if (!tc::takes_scales(*kind, block, sf))
      throw std::invalid_argument(kind_name + " takes scales " + tc::scales_help(*kind) + ", not " + info(sf).name +
                                  " per " + std::to_string(block));
    const auto span = [](const In1& x) { return std::span<const double>(x.data(), x.shape(0)); };
    return tc::block_scaled_dot(*kind, span(a), fa, span(b), fb, span(scale_a), span(scale_b), block, sf, c);
  }, "kind"_a, "a"_a, "b"_a, "scale_a"_a, "scale_b"_a, "a_format"_a, "b_format"_a, "block"_a, "scale_format"_a, "c"_a,
        "A block-scaled dot product of K (a multiple of the kind's k) as chained instructions "
        "(reference/tc_block_scaled.hpp block_scaled_dot; a model from the literature).");
  m.def("port", [generation_of](const std::vector<std::string>& kernels_json, const std::vector<std::string>& targets,
                                const std::vector<std::string>& distributions, int M, int N, int K, std::uint64_t seed,
                                int entries, int threads, const std::string& out_csv, const std::string& command_line) {
    // kernels_json: one JSON object per kernel: {"name", "numerics", "conversion_a", "conversion_b",
    // "from", "origin", "measured": {dist: [bias, spread]}} or {"explanation": path}.
    std::vector<PortKernel> ks;
    for (const std::string& text : kernels_json) {
      const nlohmann::json j = nlohmann::json::parse(text);
      if (j.contains("explanation")) {
        ks.push_back(port_kernel_from_explain(j.at("explanation").get<std::string>()));
        continue;
      }
      PortKernel k;
      k.name = j.at("name").get<std::string>();
      k.numerics = numerics_from_json(j.at("numerics"));
      for (auto [key, dst] : {std::pair{"conversion_a", &k.conversion_a}, std::pair{"conversion_b", &k.conversion_b}}) {
        const std::string v = j.value(key, std::string("as_is"));
        const auto c = explain::parse_conversion(v);
        if (!c) throw std::invalid_argument(std::string(key) + " '" + v + "' is not a conversion explain writes");
        *dst = *c;
      }
      k.from = generation_of(j.value("from", std::string("hopper")));
      k.origin = j.value("origin", std::string("gemmlab.port"));
      if (j.contains("measured"))
        for (const auto& [d, v] : j.at("measured").items()) k.measured[d] = {v.at(0).get<double>(), v.at(1).get<double>()};
      ks.push_back(std::move(k));
    }
    PortOptions o;
    for (const std::string& t : targets) {
      const tc::Generation g = generation_of(t);
      if (std::find(o.targets.begin(), o.targets.end(), g) == o.targets.end()) o.targets.push_back(g);
    }
    if (!distributions.empty()) o.distributions = distributions;
    o.M = M, o.N = N, o.K = K, o.seed = seed, o.entries = entries, o.threads = threads;
    std::vector<PortRow> rows;
    {
      nb::gil_scoped_release release;
      rows = port(ks, o);
    }
    if (!out_csv.empty()) write_port_csv(rows, out_csv, command_line, o);
    std::vector<std::vector<std::string>> out;
    for (const PortRow& r : rows) out.push_back(to_fields(r));
    return out;
  }, "kernels_json"_a, "targets"_a, "distributions"_a, "M"_a, "N"_a, "K"_a, "seed"_a, "entries"_a, "threads"_a,
     "out_csv"_a, "command_line"_a, "experiments/engine/port.hpp port: rows as lists of the CSV's fields.");
  m.def("port_columns", [] { return port_columns(); }, "The columns of gemmlab port's CSV.");
  m.def("emulate", [](const std::string& accumulation, const std::string& instruction, int k_step, int promotion_k,
                      int split_k, const std::string& output, const In2& a, const In2& b, const tc::TcParams& p, int threads) {
    // The numerics record (reference/numerics.hpp) of the order the Python Order describes.
    Numerics n;
    n.accumulation = accumulation_of(accumulation);
    if (n.accumulation == Accumulation::library || n.accumulation == Accumulation::unknown)
      throw std::invalid_argument("cannot emulate accumulation '" + accumulation +
                                  "'; valid: fma, in_mma, in_wgmma, external, promoted");
    if (n.accumulation != Accumulation::fma) {
      const auto& ins = tc::info(instruction_of(instruction));
      n.instruction = ins.id;
      n.input = n.compute = ins.input;
    }
    n.k_step = k_step;
    n.promotion_interval_k = promotion_k;
    n.split_k = split_k;
    n.output = format_of(output);
    const Matrix A = to_matrix(a), B = to_matrix(b);
    std::vector<double> out;
    {
      nb::gil_scoped_release release;
      out = emulation::emulate(n, A, B, p, threads);
    }
    return to_numpy(std::move(out), {static_cast<std::size_t>(A.rows), static_cast<std::size_t>(B.cols)});
  }, "accumulation"_a, "instruction"_a, "k_step"_a, "promotion_k"_a, "split_k"_a, "output"_a, "A"_a, "B"_a,
     "params"_a, "threads"_a = 0, "C = A B as a kernel with these numerics computes it (kernel_emulation.hpp).");
}

void bind_inputs(nb::module_& m) {
  m.def("write_inputs", [](const std::string& dist, int M, int N, int K, std::uint64_t seed, const std::string& fmt,
                           const std::string& dir, bool force, int threads) {
    InputsSpec spec;
    spec.distribution = dist, spec.M = M, spec.N = N, spec.K = K, spec.seed = seed, spec.format = format_of(fmt);
    nlohmann::json j;
    {
      nb::gil_scoped_release release;
      j = write_inputs(spec, dir, force, threads, "gemmlab.inputs (Python)");
    }
    return j.dump();
  }, "distribution"_a, "M"_a, "N"_a, "K"_a, "seed"_a, "format"_a, "dir"_a, "force"_a, "threads"_a,
     "experiments/engine/inputs.hpp write_inputs(): `gemmlab inputs`; returns inputs.json's text.");
  m.def("read_inputs", [](const std::string& dir) {
    InputsFolder f = read_inputs(dir);
    nb::dict d;
    d["json"] = f.json.dump();
    d["warnings"] = f.warnings;
    d["A"] = to_numpy(std::move(f.A.v), {static_cast<std::size_t>(f.A.rows), static_cast<std::size_t>(f.A.cols)});
    d["B"] = to_numpy(std::move(f.B.v), {static_cast<std::size_t>(f.B.rows), static_cast<std::size_t>(f.B.cols)});
    return d;
  }, "dir"_a, "experiments/engine/inputs.hpp read_inputs(): A, B, inputs.json's text and warnings.");
  m.def("inputs_format_version", [] { return kInputsFormatVersion; }, "The layout version of inputs.json.");
  m.def("version", [] { return std::string(gemmlab_version()); },
        "gemmlab's version (pyproject.toml's, compiled in: the CLI's `gemmlab --version`).");
}

// Quantized recipes (reference/quantized_recipe.hpp) and the tensors of their kernel layouts
// (reference/quantized_layout.hpp), for gemmlab.judge's checks and gemmlab.quantized_inputs.
void bind_quantized(nb::module_& m) {
  m.def("canonical_quant_recipe", [](const std::string& name) { return parse_quant_recipe(name).name(); }, "name"_a,
        "The canonical name of a quantized recipe; ValueError naming what is valid otherwise.");
  m.def("explain_input_format", [](const std::string& recipe) {
          std::string why;
          const std::optional<Format> f = explain_input_format(parse_quant_recipe(recipe), &why);
          if (!f) throw std::invalid_argument(why);
          return std::string(info(*f).name);
        }, "recipe"_a,
        "The format gemmlab.explain explains a recipe's kernel in (the plain operand's); ValueError saying why "
        "where explain cannot take the recipe (both operands quantized).");
  m.def("epilogue_explanation", [](const std::vector<long long>& differ, long long entries) {
          if (differ.size() != static_cast<std::size_t>(quant_detail::kEpilogueCandidates))
            throw std::invalid_argument("epilogue_explanation: one count per candidate (" +
                                        std::to_string(quant_detail::kEpilogueCandidates) + ")");
          return epilogue_explanation(differ.data(), entries);
        }, "differ"_a, "entries"_a,
        "The words a judged int8 row's note gives its epilogue (reference/quantized.hpp), from each candidate's "
        "mispredicted outputs: what gemmlab.explain of int8 reads back.");
  m.def("unit_scale_values", [](const std::string& spec) { return unit_scale_values(parse_quant_spec(spec)); }, "spec"_a,
        "The values an operand of this spec holds at unit scale (explain's probes), sorted; [] for a plain one.");
  // Each tensor of an (M, N, K) problem: name -> (type, shape); tensor scales as name -> True.
  auto layout = [](const std::string& recipe, int M, int N, int K) {
    const QuantRecipe r = parse_quant_recipe(recipe);
    nb::dict d;
    for (int which : {0, 1}) {
      const Operand op = which == 0 ? Operand::A : Operand::B;
      const KernelOperandLayout l = kernel_layout(which == 0 ? r.a : r.b, op, which == 0 ? M : K, which == 0 ? K : N);
      const std::string p = which == 0 ? "a" : "b";
      auto put = [&](const std::string& name, const TensorLayout& t) {
        if (!t.present()) return;
        nb::object shape = t.ndim == 2 ? nb::object(nb::make_tuple(t.rows, t.cols)) : nb::object(nb::make_tuple(t.rows));
        d[name.c_str()] = nb::make_tuple(to_string(t.type), shape);
      };
      put(which == 0 ? "A" : "B", l.elements);
      put(p + "_scale", l.scales);
      put(p + "_zero", l.zeros);
      if (l.tensor_scale) d[(p + "_tensor_scale").c_str()] = true;
    }
    return d;
  };
  m.def("quantized_layout", layout, "recipe"_a, "M"_a, "N"_a, "K"_a,
        "The kernel tensors of a quantized problem: name -> (type, shape), tensor scales name -> True; ValueError for "
        "a K the recipe's blocks do not divide.");
  m.def("quantized_tensor_types", [layout](const std::string& recipe) {
    nb::dict d;
    nb::dict l = layout(recipe, 1, 1, 256);  // every block divides 256; the types do not depend on the size
    for (auto [k, v] : l)
      if (nb::isinstance<nb::tuple>(v)) d[k] = nb::borrow<nb::tuple>(v)[0];
    return d;
  }, "recipe"_a, "Each kernel tensor's type name (uint8, int8, float32, bfloat16, float16, float8_e4m3fn, float8_e5m2).");
  using Bytes = nb::ndarray<const std::uint8_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
  m.def("dequantize_tensors", [](const std::string& recipe, int M, int N, int K, const nb::dict& tensors,
                                 double a_tensor_scale, double b_tensor_scale) {
    const QuantRecipe r = parse_quant_recipe(recipe);
    auto bytes = [&](const char* name) {
      std::vector<std::uint8_t> v;
      if (tensors.contains(name)) {
        const Bytes b = nb::cast<Bytes>(tensors[name]);
        v.assign(b.data(), b.data() + b.shape(0));
      }
      return v;
    };
    QuantizedOperand a, b;
    {
      const std::vector<std::uint8_t> ea = bytes("A"), sa = bytes("a_scale"), za = bytes("a_zero");
      const std::vector<std::uint8_t> eb = bytes("B"), sb = bytes("b_scale"), zb = bytes("b_zero");
      nb::gil_scoped_release release;
      a = decode_kernel_tensors(r.a, Operand::A, M, K, ea, sa, za, a_tensor_scale);
      b = decode_kernel_tensors(r.b, Operand::B, K, N, eb, sb, zb, b_tensor_scale);
    }
    auto mat = [](const Matrix& x) {
      std::vector<double> v = x.v;
      return to_numpy(std::move(v), {static_cast<std::size_t>(x.rows), static_cast<std::size_t>(x.cols)});
    };
    return nb::make_tuple(mat(a.dequantized()), mat(b.dequantized()));
  }, "recipe"_a, "M"_a, "N"_a, "K"_a, "tensors"_a, "a_tensor_scale"_a = 1.0, "b_tensor_scale"_a = 1.0,
     "The dequantized operands of a quantized problem's kernel tensors (name -> uint8 bytes), every tensor checked "
     "(reference/quantized_layout.hpp decode_kernel_tensors).");
  m.def("quantized_problem", [](const std::string& distribution, int M, int N, int K, std::uint64_t seed, int threads) {
    const Distribution d = parse_distribution(distribution);
    if (!d.quant) throw std::invalid_argument(distribution + " carries no quantized recipe (SOURCE@RECIPE, e.g. normal_0_1@mxfp4)");
    QuantizedProblem p;
    {
      nb::gil_scoped_release release;
      p = make_quantized_problem(d, M, N, K, seed, threads);
    }
    nb::dict out;
    auto mat = [](const Matrix& x) {
      std::vector<double> v = x.v;
      return to_numpy(std::move(v), {static_cast<std::size_t>(x.rows), static_cast<std::size_t>(x.cols)});
    };
    auto bytes = [](std::vector<std::uint8_t> v) {
      const std::size_t n = v.size();
      return to_numpy(std::move(v), {n});
    };
    out["A0"] = mat(p.A0);
    out["B0"] = mat(p.B0);
    out["A_dequantized"] = mat(p.A.dequantized());
    out["B_dequantized"] = mat(p.B.dequantized());
    for (const QuantizedOperand* op : {&p.A, &p.B}) {
      const bool a = op->which == Operand::A;
      const std::string s = a ? "a" : "b";
      out[a ? "A" : "B"] = bytes(kernel_elements(*op));
      if (op->spec.scheme != QuantScheme::plain) out[(s + "_scale").c_str()] = bytes(kernel_block_scales(*op));
      if (op->spec.has_zero()) out[(s + "_zero").c_str()] = bytes(kernel_zeros(*op));
      if (op->spec.scheme == QuantScheme::nvfp4) out[(s + "_tensor_scale").c_str()] = op->tensor_scale;
    }
    return out;
  }, "distribution"_a, "M"_a, "N"_a, "K"_a, "seed"_a, "threads"_a = 0,
     "A quantized problem (make_quantized_problem): sources, dequantized operands, and each kernel tensor's bytes.");
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
  bind_inputs(m);
  bind_quantized(m);
  // gemmlab's C++ errors for the user (UsageError) arrive as ValueError.
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const gemmlab::UsageError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    }
  });
}
