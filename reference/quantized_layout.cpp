// The kernel layouts of quantized operands (see quantized_layout.hpp). The words are quantized_entry.hpp's
// element_word and scale_word, the GPU packer's too.
#include "reference/quantized_layout.hpp"

#include <cmath>
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

namespace {

std::string shape_text(const TensorLayout& t) {
  return t.ndim == 1 ? "(" + std::to_string(t.rows) + ",)" : "(" + std::to_string(t.rows) + ", " + std::to_string(t.cols) + ")";
}

std::uint64_t word_at(const std::vector<std::uint8_t>& bytes, std::size_t t, std::size_t width) {
  std::uint64_t w = 0;
  for (std::size_t b = 0; b < width; ++b) w |= static_cast<std::uint64_t>(bytes[t * width + b]) << (8 * b);
  return w;
}

}  // namespace

QuantizedOperand decode_kernel_tensors(const QuantSpec& spec, Operand which, int rows, int cols,
                                       const std::vector<std::uint8_t>& elements, const std::vector<std::uint8_t>& scales,
                                       const std::vector<std::uint8_t>& zeros, double tensor_scale) {
  const bool a = which == Operand::A;
  const std::string op = a ? "A" : "B", low = a ? "a" : "b";
  const KernelOperandLayout l = kernel_layout(spec, which, rows, cols);  // refuses K the blocks do not divide
  auto check_size = [&](const std::string& name, const TensorLayout& t, const std::vector<std::uint8_t>& bytes) {
    if (bytes.size() != t.bytes())
      throw std::invalid_argument(name + " under " + spec.name() + " for " + op + " (" + std::to_string(rows) + ", " +
                                  std::to_string(cols) + ") is a " + to_string(t.type) + " tensor of shape " +
                                  shape_text(t) + " (" + std::to_string(t.bytes()) + " bytes), but " +
                                  std::to_string(bytes.size()) + " bytes were given: pass the tensor in that layout "
                                  "(docs/python.md, quantized forms)");
  };
  check_size(op, l.elements, elements);
  check_size(low + "_scale", l.scales, scales);
  check_size(low + "_zero", l.zeros, zeros);
  QuantizedOperand r;
  r.spec = spec;
  r.which = which;
  r.plan = quant_plan(which, spec, rows, cols);
  r.grid_rows = (rows + r.plan.block_rows - 1) / r.plan.block_rows;
  r.grid_cols = r.plan.grid_cols;
  r.q = Matrix(rows, cols);
  const Format ef = spec.element;
  const bool packed = two_per_byte(spec);
  const std::size_t ew = bytes_of(l.elements.type);
  const int code_bits = info(ef).storage_bits;
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < cols; ++j) {
      std::uint64_t code;
      if (packed) {
        const int k = a ? j : i;
        const std::size_t byte = a ? static_cast<std::size_t>(i) * (cols / 2) + j / 2 : static_cast<std::size_t>(i / 2) * cols + j;
        code = (elements[byte] >> (4 * (k % 2))) & 0xF;
      } else {
        code = word_at(elements, static_cast<std::size_t>(i) * cols + j, ew);
        if (code_bits < 8 * static_cast<int>(ew) && (code >> code_bits))
          throw std::invalid_argument(op + "(" + std::to_string(i) + ", " + std::to_string(j) + ") holds the code " +
                                      std::to_string(code) + ", beyond " + info(ef).name + "'s " +
                                      std::to_string(code_bits) + " bits: the unused high bits must be 0");
      }
      const double v = from_bits(ef, code);
      if (!std::isfinite(v))
        throw std::invalid_argument(op + "(" + std::to_string(i) + ", " + std::to_string(j) + ") is " +
                                    (std::isnan(v) ? "NaN" : "infinite") + " (" + info(ef).name + " code " +
                                    std::to_string(code) + "): a quantized operand must be finite");
      r.q(i, j) = v;
    }
  if (spec.scheme == QuantScheme::plain) {
    r.scales.assign(1, 1.0);
    return r;
  }
  // The scale grid (and zeros) from the tensor: the grid itself, or B's MX / NVFP4 transpose.
  const std::size_t cells = static_cast<std::size_t>(r.grid_rows) * r.grid_cols;
  const Format sf = spec.scale_format();
  const bool transposed = transposed_scales(spec, which);
  auto grid_index_of = [&](std::size_t t) {
    if (!transposed) return t;
    const std::size_t n = t / static_cast<std::size_t>(r.grid_rows), kb = t % static_cast<std::size_t>(r.grid_rows);
    return kb * static_cast<std::size_t>(r.grid_cols) + n;
  };
  auto read_grid = [&](const std::vector<std::uint8_t>& bytes, const TensorLayout& t, const std::string& name, bool zero) {
    std::vector<double> g(cells);
    const std::size_t w = bytes_of(t.type);
    for (std::size_t idx = 0; idx < cells; ++idx) {
      const std::uint64_t code = word_at(bytes, idx, w);
      const double v = from_bits(sf, code);
      const std::string where = name + "[" + (t.ndim == 1 ? std::to_string(idx)
                                                          : std::to_string(idx / t.cols) + ", " + std::to_string(idx % t.cols)) +
                                "]";
      if (!zero && sf == Format::ue4m3 && (code & 0x80))
        throw std::invalid_argument(where + " has its sign bit set (code " + std::to_string(code) +
                                    "): a ue4m3 scale has no sign; clear bit 7");
      if (!std::isfinite(v) || (!zero && !(v > 0)))
        throw std::invalid_argument(where + " is " + (std::isnan(v) ? "NaN" : std::isinf(v) ? "infinite" : v == 0 ? "zero" : "negative") +
                                    " (" + info(sf).name + " code " + std::to_string(code) + "): " +
                                    (zero ? "a zero point must be finite" : "a block scale must be finite and positive; "
                                            "a block without one has no dequantized value (gemmlab refuses to invent one)"));
      g[grid_index_of(idx)] = v;
    }
    return g;
  };
  r.scales = read_grid(scales, l.scales, low + "_scale", false);
  if (spec.has_zero()) r.zeros = read_grid(zeros, l.zeros, low + "_zero", true);
  if (l.tensor_scale) {
    if (!std::isfinite(tensor_scale) || !(tensor_scale > 0) || static_cast<double>(static_cast<float>(tensor_scale)) != tensor_scale)
      throw std::invalid_argument(low + "_tensor_scale = " + std::to_string(tensor_scale) +
                                  ": NVFP4's tensor scale must be a finite positive fp32 value");
    r.tensor_scale = tensor_scale;
  }
  if (spec.has_zero())
    for (int i = 0; i < rows; ++i)
      for (int j = 0; j < cols; ++j) {
        bool inexact = false;
        quant_detail::dequantize(r.q(i, j), r.scale_of(i, j), r.zero_of(i, j), 1.0, r.plan, &inexact);
        if (inexact)
          throw std::invalid_argument(op + "(" + std::to_string(i) + ", " + std::to_string(j) +
                                      "): (q - 8) scale + zero is not exact in binary64 (scale and zero too far apart)");
      }
  return r;
}

}  // namespace gemmlab
