// The kernel layouts of quantized operands (see quantized_layout.hpp). The words are quantized_entry.hpp's
// element_word and scale_word, the GPU packer's too.
#include "reference/quantized_layout.hpp"

#include <stdexcept>

namespace gemmlab {
namespace {

using quant_detail::Code;

Code float_code(int exp_bits, int frac_bits, int bias, bool sign = true, int bits = 8) {
  Code c;
  c.kind = 0;
  c.sign_bits = sign ? 1 : 0;
  c.exp_bits = exp_bits, c.frac_bits = frac_bits, c.bias = bias, c.bits = bits;
  return c;
}
Code int_code(int bits) {
  Code c;
  c.kind = 2;
  c.bits = bits;
  return c;
}

Code code_of(Format f) {
  switch (f) {
    case Format::e4m3: return float_code(4, 3, 7);
    case Format::e5m2: return float_code(5, 2, 15);
    case Format::e2m3: return float_code(2, 3, 1, true, 6);
    case Format::e3m2: return float_code(3, 2, 3, true, 6);
    case Format::e2m1: return float_code(2, 1, 1, true, 4);
    case Format::ue4m3: return float_code(4, 3, 7, false);
    case Format::ue8m0: {
      Code c;
      c.kind = 1;
      return c;
    }
    case Format::int8: return int_code(8);
    case Format::int4:
    case Format::uint4: return int_code(4);
    case Format::bf16: return float_code(8, 7, 127, true, 16);
    case Format::fp16: return float_code(5, 10, 15, true, 16);
    case Format::fp32: return float_code(8, 23, 127, true, 32);
    default: break;
  }
  throw std::invalid_argument(std::string("no kernel tensor encodes ") + info(f).name + " values");
}

TensorType type_of(Format f) {
  switch (f) {
    case Format::e4m3: return TensorType::e4m3;
    case Format::e5m2: return TensorType::e5m2;
    case Format::ue4m3: return TensorType::e4m3;  // its codes are e4m3's of non-negative values
    case Format::int8: return TensorType::i8;
    case Format::bf16: return TensorType::bf16;
    case Format::fp16: return TensorType::fp16;
    case Format::fp32: return TensorType::f32;
    default: return TensorType::u8;
  }
}

bool two_per_byte(const QuantSpec& s) {
  return s.element == Format::e2m1 || s.element == Format::int4 || s.element == Format::uint4;
}
// MX and NVFP4 scales of B go (N, K/block), as tl.dot_scaled's rhs_scale.
bool transposed_scales(const QuantSpec& s, Operand which) {
  return which == Operand::B && (s.scheme == QuantScheme::mx || s.scheme == QuantScheme::nvfp4);
}

TensorLayout tensor(TensorType t, int rows, int cols) { return TensorLayout{t, 2, rows, cols}; }

quant_detail::ElementPack element_pack(const QuantizedOperand& op) {
  quant_detail::ElementPack p;
  p.code = element_code(op.spec);
  p.two_per_byte = two_per_byte(op.spec);
  p.operand_a = op.which == Operand::A;
  p.rows = op.q.rows, p.cols = op.q.cols;
  return p;
}

template <class Word>
std::vector<std::uint8_t> little_endian(std::size_t count, std::size_t width, const Word& word) {
  std::vector<std::uint8_t> out(count * width);
  for (std::size_t t = 0; t < count; ++t) {
    const std::uint32_t w = word(static_cast<long long>(t));
    for (std::size_t b = 0; b < width; ++b) out[t * width + b] = static_cast<std::uint8_t>(w >> (8 * b));
  }
  return out;
}

}  // namespace

const char* to_string(TensorType t) {
  switch (t) {
    case TensorType::u8: return "uint8";
    case TensorType::i8: return "int8";
    case TensorType::f32: return "float32";
    case TensorType::bf16: return "bfloat16";
    case TensorType::fp16: return "float16";
    case TensorType::e4m3: return "float8_e4m3fn";
    case TensorType::e5m2: return "float8_e5m2";
  }
  return "?";
}

std::size_t bytes_of(TensorType t) {
  switch (t) {
    case TensorType::f32: return 4;
    case TensorType::bf16:
    case TensorType::fp16: return 2;
    default: return 1;
  }
}

quant_detail::Code element_code(const QuantSpec& spec) { return code_of(spec.element); }
quant_detail::Code scale_code(const QuantSpec& spec) { return code_of(spec.scale_format()); }

KernelOperandLayout kernel_layout(const QuantSpec& spec, Operand which, int rows, int cols) {
  const quant_detail::QuantPlan p = quant_plan(which, spec, rows, cols);
  const bool a = which == Operand::A;
  KernelOperandLayout l;
  if (two_per_byte(spec)) {
    const int K = a ? cols : rows;
    if (K % 2)
      throw std::invalid_argument(std::string(a ? "A" : "B") + " under " + spec.name() + " packs two elements per byte along K: K = " +
                                  std::to_string(K) + " must be even");
    l.elements = a ? tensor(TensorType::u8, rows, cols / 2) : tensor(TensorType::u8, rows / 2, cols);
  } else {
    l.elements = tensor(type_of(spec.element), rows, cols);
  }
  if (spec.scheme == QuantScheme::plain) return l;
  const int grid_rows = (rows + p.block_rows - 1) / p.block_rows, grid_cols = p.grid_cols;
  const TensorType st = spec.scheme == QuantScheme::mx ? TensorType::u8 : type_of(spec.scale_format());
  if (spec.scheme == QuantScheme::channel) l.scales = TensorLayout{st, 1, a ? rows : cols, 0};
  else if (transposed_scales(spec, which)) l.scales = tensor(st, grid_cols, grid_rows);
  else l.scales = tensor(st, grid_rows, grid_cols);
  if (spec.has_zero()) l.zeros = l.scales;
  l.tensor_scale = spec.scheme == QuantScheme::nvfp4;
  return l;
}

std::vector<std::uint8_t> kernel_elements(const QuantizedOperand& op) {
  const KernelOperandLayout l = kernel_layout(op.spec, op.which, op.q.rows, op.q.cols);
  const quant_detail::ElementPack p = element_pack(op);
  auto q = [&](int i, int j) { return op.q(i, j); };
  return little_endian(l.elements.count(), bytes_of(l.elements.type),
                       [&](long long t) { return quant_detail::element_word(q, t, p); });
}

namespace {
std::vector<std::uint8_t> grid_bytes(const QuantizedOperand& op, const std::vector<double>& grid, const TensorLayout& l) {
  if (!l.present()) return {};
  quant_detail::ScalePack p;
  p.code = scale_code(op.spec);
  p.transposed = transposed_scales(op.spec, op.which);
  p.grid_rows = op.grid_rows, p.grid_cols = op.grid_cols;
  auto g = [&](long long t) { return grid[static_cast<std::size_t>(t)]; };
  return little_endian(l.count(), bytes_of(l.type), [&](long long t) { return quant_detail::scale_word(g, t, p); });
}
}  // namespace

std::vector<std::uint8_t> kernel_block_scales(const QuantizedOperand& op) {
  return grid_bytes(op, op.scales, kernel_layout(op.spec, op.which, op.q.rows, op.q.cols).scales);
}

std::vector<std::uint8_t> kernel_zeros(const QuantizedOperand& op) {
  return grid_bytes(op, op.zeros, kernel_layout(op.spec, op.which, op.q.rows, op.q.cols).zeros);
}

}  // namespace gemmlab
