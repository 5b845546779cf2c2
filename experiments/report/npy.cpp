#include "experiments/report/npy.hpp"

#include <cstdint>
#include <cstring>
#include <fstream>
#include <regex>

#include "experiments/plan/plan.hpp"
#include "reference/formats.hpp"

namespace gemmlab {

namespace {

[[noreturn]] void bad(const std::string& path, const std::string& why) {
  throw UsageError("'" + path + "' is not a readable .npy matrix: " + why);
}

}  // namespace

NpyArray read_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UsageError("cannot open '" + path + "': check the path");
  char magic[8];
  if (!in.read(magic, 8) || std::memcmp(magic, "\x93NUMPY", 6) != 0) bad(path, "no .npy magic (save it with numpy.save)");
  const int major = static_cast<unsigned char>(magic[6]);
  std::uint32_t hlen = 0;
  if (major == 1) {
    unsigned char b[2];
    if (!in.read(reinterpret_cast<char*>(b), 2)) bad(path, "truncated header");
    hlen = b[0] | (b[1] << 8);
  } else if (major == 2 || major == 3) {
    unsigned char b[4];
    if (!in.read(reinterpret_cast<char*>(b), 4)) bad(path, "truncated header");
    hlen = b[0] | (b[1] << 8) | (b[2] << 16) | (std::uint32_t(b[3]) << 24);
  } else {
    bad(path, "unknown .npy format version " + std::to_string(major));
  }
  std::string header(hlen, '\0');
  if (!in.read(header.data(), hlen)) bad(path, "truncated header");

  std::smatch m;
  if (!std::regex_search(header, m, std::regex(R"('descr'\s*:\s*'([^']*)')"))) bad(path, "header has no 'descr'");
  const std::string descr = m[1];
  const bool fortran = std::regex_search(header, std::regex(R"('fortran_order'\s*:\s*True)"));
  if (!std::regex_search(header, m, std::regex(R"('shape'\s*:\s*\(([^)]*)\))"))) bad(path, "header has no 'shape'");
  std::vector<long long> shape;
  const std::string dims = m[1];
  static const std::regex digits(R"(\d+)");
  for (std::sregex_iterator it(dims.begin(), dims.end(), digits), end; it != end; ++it)
    shape.push_back(std::stoll(it->str()));
  if (shape.size() != 2) bad(path, "it has " + std::to_string(shape.size()) + " dimensions, a matrix needs 2");

  NpyArray a;
  int bytes = 0;
  if (descr == "<f8") a.dtype = "float64", bytes = 8;
  else if (descr == "<f4") a.dtype = "float32", bytes = 4;
  else if (descr == "<f2") a.dtype = "float16", bytes = 2;
  else
    bad(path, "element type '" + descr + "' is not float16, float32 or float64 (little-endian); "
              "bf16 or fp8 outputs go in as float32 or float64 holding their exact values");
  a.rows = static_cast<int>(shape[0]);
  a.cols = static_cast<int>(shape[1]);
  const std::size_t n = static_cast<std::size_t>(shape[0]) * static_cast<std::size_t>(shape[1]);
  std::vector<char> raw(n * bytes);
  if (!in.read(raw.data(), static_cast<std::streamsize>(raw.size())))
    bad(path, "truncated data (" + std::to_string(shape[0]) + "x" + std::to_string(shape[1]) + " " + a.dtype + " expected)");
  a.v.resize(n);
  for (std::size_t k = 0; k < n; ++k) {
    const char* p = raw.data() + k * bytes;
    double x;
    if (bytes == 8) {
      std::memcpy(&x, p, 8);
    } else if (bytes == 4) {
      float f;
      std::memcpy(&f, p, 4);
      x = f;
    } else {
      std::uint16_t h;
      std::memcpy(&h, p, 2);
      x = from_bits(Format::fp16, h);
    }
    // Fortran order: element k is (k % rows, k / rows).
    const std::size_t dst = fortran ? (k % a.rows) * a.cols + k / a.rows : k;
    a.v[dst] = x;
  }
  return a;
}

}  // namespace gemmlab
