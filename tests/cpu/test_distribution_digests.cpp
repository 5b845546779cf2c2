// Pins generate()'s output bit for bit: a 64-bit FNV-1a digest of every value's binary64 pattern
// for each case of tests/distribution_cases.hpp (11 distributions, operands A and B) in every
// format where the distribution is usable (fp64 pins the raw values before rounding). The digests were computed by the generator as of commit 8d72b6c, before its
// per-entry arithmetic moved to reference/distribution_entry.hpp (shared with the GPU generator);
// the test proves that move changed no bit. A deliberate change to the generator changes
// recorded results and must update this table in the same commit.
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <cstdio>
#include <map>
#include <set>
#include <string>

#include "reference/distributions.hpp"
#include "reference/formats.hpp"
#include "tests/distribution_cases.hpp"

namespace gemmlab {
namespace {

using testing::case_distributions;
using testing::kCaseK;
using testing::kCaseM;
using testing::kCaseN;
using testing::kCaseSeed;

// FNV-1a over the shape and the little-endian bytes of every value's bit pattern, row-major.
std::uint64_t digest(const Matrix& m) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  auto eat = [&](std::uint64_t word) {
    for (int b = 0; b < 8; ++b) {
      h ^= (word >> (8 * b)) & 0xff;
      h *= 0x100000001b3ull;
    }
  };
  eat(static_cast<std::uint64_t>(m.rows));
  eat(static_cast<std::uint64_t>(m.cols));
  for (double x : m.v) eat(std::bit_cast<std::uint64_t>(x));
  return h;
}

// "<distribution>/<format>/<A|B>" -> digest, from commit 8d72b6c's generator.
const std::map<std::string, std::uint64_t> kGolden = {
    {"uniform_0_1/fp64/A", 0x0684bc54dbd39d3dull},
    {"uniform_0_1/fp64/B", 0x4d9584c2cfe3f55cull},
    {"uniform_0_1/fp32/A", 0x41053ae10c846b03ull},
    {"uniform_0_1/fp32/B", 0x29400cd2b2cd8c14ull},
    {"uniform_0_1/tf32/A", 0xfe438a4f54bee3a3ull},
    {"uniform_0_1/tf32/B", 0xcd176ae9c91e423cull},
    {"uniform_0_1/fp16/A", 0xfe438a4f54bee3a3ull},
    {"uniform_0_1/fp16/B", 0xcd176ae9c91e423cull},
    {"uniform_0_1/bf16/A", 0xff0dcad917382f8eull},
    {"uniform_0_1/bf16/B", 0xc6f8fd4c7428ebeeull},
    {"uniform_0_1/e4m3/A", 0x4b8fd2d6a39a8dc3ull},
    {"uniform_0_1/e4m3/B", 0x1d4bc64a58e48572ull},
    {"uniform_0_1/e5m2/A", 0xa74a1b91239bb960ull},
    {"uniform_0_1/e5m2/B", 0x50ebd5cbf9ce736cull},
    {"uniform_-1_1/fp64/A", 0x20bebef010e5c5a4ull},
    {"uniform_-1_1/fp64/B", 0x5d19142be03de224ull},
    {"uniform_-1_1/fp32/A", 0x8b863b07b7db2d27ull},
    {"uniform_-1_1/fp32/B", 0x151af863a140fc1cull},
    {"uniform_-1_1/tf32/A", 0xb52506677b4cb1e2ull},
    {"uniform_-1_1/tf32/B", 0x0048f8f6d10dccbfull},
    {"uniform_-1_1/fp16/A", 0xb52506677b4cb1e2ull},
    {"uniform_-1_1/fp16/B", 0x0048f8f6d10dccbfull},
    {"uniform_-1_1/bf16/A", 0x9560fd6747bb6a7aull},
    {"uniform_-1_1/bf16/B", 0x8d86feaa40a32feaull},
    {"uniform_-1_1/e4m3/A", 0x6369b6b06d44d356ull},
    {"uniform_-1_1/e4m3/B", 0xb60cfdd6600f87c5ull},
    {"uniform_-1_1/e5m2/A", 0x5bd8d25ab2e20d8cull},
    {"uniform_-1_1/e5m2/B", 0x61fd857c87905780ull},
    {"normal_0_1/fp64/A", 0x859efd85036dfadeull},
    {"normal_0_1/fp64/B", 0x434b66b94f3d4cfbull},
    {"normal_0_1/fp32/A", 0x1e3ae7d7ee4867eaull},
    {"normal_0_1/fp32/B", 0x4b9ed5c6f329c399ull},
    {"normal_0_1/tf32/A", 0x722365202011a4f1ull},
    {"normal_0_1/tf32/B", 0xeb7cc2d8ea97a655ull},
    {"normal_0_1/fp16/A", 0x722365202011a4f1ull},
    {"normal_0_1/fp16/B", 0xca32aeb0d6929a21ull},
    {"normal_0_1/bf16/A", 0x9ce30be650dd3666ull},
    {"normal_0_1/bf16/B", 0x78763f2e1e6bc2cbull},
    {"normal_0_1/e4m3/A", 0x8f3a1e0528591d68ull},
    {"normal_0_1/e4m3/B", 0x719138ddc9d4581eull},
    {"normal_0_1/e5m2/A", 0xce662298557c6819ull},
    {"normal_0_1/e5m2/B", 0xb17ac7b0af8f6fdcull},
    {"logunif_-8_8/fp64/A", 0x4616f8862dce8cd4ull},
    {"logunif_-8_8/fp64/B", 0x830c1e6718ce833dull},
    {"logunif_-8_8/fp32/A", 0xf19088d4d70bdd8aull},
    {"logunif_-8_8/fp32/B", 0x442869f631c95474ull},
    {"logunif_-8_8/tf32/A", 0x963c1bd55f3dec43ull},
    {"logunif_-8_8/tf32/B", 0x6640a4d8873567b0ull},
    {"logunif_-8_8/fp16/A", 0x963c1bd55f3dec43ull},
    {"logunif_-8_8/fp16/B", 0x6640a4d8873567b0ull},
    {"logunif_-8_8/bf16/A", 0x627548dfa4975e82ull},
    {"logunif_-8_8/bf16/B", 0x9a345416ef12d045ull},
    {"logunif_-8_8/e4m3/A", 0x951281ff0b71ec98ull},
    {"logunif_-8_8/e4m3/B", 0x0ff05540f19e2ac1ull},
    {"logunif_-8_8/e5m2/A", 0x4523c5f120e52a00ull},
    {"logunif_-8_8/e5m2/B", 0x0e023721dcebf9f1ull},
    {"cancel_-10/fp64/A", 0xc0e28e7a61f006a5ull},
    {"cancel_-10/fp64/B", 0x678921ebb17b55caull},
    {"cancel_-10/fp32/A", 0x1568686d85cac5c5ull},
    {"cancel_-10/fp32/B", 0x2ae938dfe5acd76dull},
    {"cancel_-10/tf32/A", 0xc22e079a88b096c5ull},
    {"cancel_-10/tf32/B", 0xa0a96388969f0c22ull},
    {"cancel_-10/fp16/A", 0xc22e079a88b096c5ull},
    {"cancel_-10/fp16/B", 0xa0a96388969f0c22ull},
    {"exactint_8/fp64/A", 0x2a05b47ed15c5690ull},
    {"exactint_8/fp64/B", 0xba7a132bbbc2c1b4ull},
    {"exactint_8/fp32/A", 0x2a05b47ed15c5690ull},
    {"exactint_8/fp32/B", 0xba7a132bbbc2c1b4ull},
    {"exactint_8/tf32/A", 0x2a05b47ed15c5690ull},
    {"exactint_8/tf32/B", 0xba7a132bbbc2c1b4ull},
    {"exactint_8/fp16/A", 0x2a05b47ed15c5690ull},
    {"exactint_8/fp16/B", 0xba7a132bbbc2c1b4ull},
    {"exactint_8/bf16/A", 0x2a05b47ed15c5690ull},
    {"exactint_8/bf16/B", 0xba7a132bbbc2c1b4ull},
    {"exactint_8/e4m3/A", 0x2a05b47ed15c5690ull},
    {"exactint_8/e4m3/B", 0xba7a132bbbc2c1b4ull},
    {"exactint_8/e5m2/A", 0x2a05b47ed15c5690ull},
    {"exactint_8/e5m2/B", 0xba7a132bbbc2c1b4ull},
    {"expspread_0.5/fp64/A", 0x1b0beb06d208bf45ull},
    {"expspread_0.5/fp64/B", 0x01af010e2b2992c7ull},
    {"expspread_0.5/fp32/A", 0xf083f50a351e739eull},
    {"expspread_0.5/fp32/B", 0x129503f7ce105562ull},
    {"expspread_0.5/tf32/A", 0x1bfab4ca101dfc6dull},
    {"expspread_0.5/tf32/B", 0xcd0af228538cd842ull},
    {"expspread_0.5/fp16/A", 0x1bfab4ca101dfc6dull},
    {"expspread_0.5/fp16/B", 0xcd0af228538cd842ull},
    {"expspread_0.5/bf16/A", 0xf22d0b276b3576b3ull},
    {"expspread_0.5/bf16/B", 0x9d1c08a8f8fa061full},
    {"expspread_0.5/e4m3/A", 0x80ae5a3ef0b0deb0ull},
    {"expspread_0.5/e4m3/B", 0x555ad3c97693efd8ull},
    {"expspread_0.5/e5m2/A", 0x6fc9f60c17e11e24ull},
    {"expspread_0.5/e5m2/B", 0xbefb97543a32e639ull},
    {"expspread_4/fp64/A", 0x40dd5ce96f5313ebull},
    {"expspread_4/fp64/B", 0xa0c0bcadf796bafcull},
    {"expspread_4/fp32/A", 0xc8cd999d551a4f97ull},
    {"expspread_4/fp32/B", 0xf78f4663f72dd41eull},
    {"expspread_4/tf32/A", 0x34ffa16e9dded853ull},
    {"expspread_4/tf32/B", 0xc0a7cbb3f41c84f0ull},
    {"expspread_4/bf16/A", 0x5391c5bbb8de1fdbull},
    {"expspread_4/bf16/B", 0xf788a235c40897f8ull},
    {"logunif_-140_-120/fp64/A", 0xe85a302d6b859298ull},
    {"logunif_-140_-120/fp64/B", 0xc4448818d965593dull},
    {"logunif_-140_-120/fp32/A", 0x02329685a26b6062ull},
    {"logunif_-140_-120/fp32/B", 0xd597e81f9a0d6d61ull},
    {"logunif_-140_-120/tf32/A", 0xeb2164019483f1c7ull},
    {"logunif_-140_-120/tf32/B", 0xcd6a2e494bec0601ull},
    {"logunif_-140_-120/fp16/A", 0x6053d8e878494e75ull},
    {"logunif_-140_-120/fp16/B", 0xda5a122445fffccdull},
    {"logunif_-140_-120/bf16/A", 0xab1ab965a5dbaa12ull},
    {"logunif_-140_-120/bf16/B", 0xa2461f9ed707be02ull},
    {"logunif_-140_-120/e4m3/A", 0x6053d8e878494e75ull},
    {"logunif_-140_-120/e4m3/B", 0xda5a122445fffccdull},
    {"logunif_-140_-120/e5m2/A", 0x6053d8e878494e75ull},
    {"logunif_-140_-120/e5m2/B", 0xda5a122445fffccdull},
    {"cancel_-3/fp64/A", 0xc0e28e7a61f006a5ull},
    {"cancel_-3/fp64/B", 0xec9e0cbad4a7329dull},
    {"cancel_-3/fp32/A", 0x1568686d85cac5c5ull},
    {"cancel_-3/fp32/B", 0xa38a34863e18aad9ull},
    {"cancel_-3/tf32/A", 0xc22e079a88b096c5ull},
    {"cancel_-3/tf32/B", 0xc0ad230e10c3d83cull},
    {"cancel_-3/fp16/A", 0xc22e079a88b096c5ull},
    {"cancel_-3/fp16/B", 0xc0ad230e10c3d83cull},
    {"cancel_-3/bf16/A", 0xc795e5ed84e4f83dull},
    {"cancel_-3/bf16/B", 0x00c0de76ce58d79full},
    {"cancel_-3/e4m3/A", 0xc4b8f373b9d0bc05ull},
    {"cancel_-3/e4m3/B", 0x75c9b74b1c0eb47bull},
    {"exactint_16/fp64/A", 0x8b1cc3c5e2fb2993ull},
    {"exactint_16/fp64/B", 0xdabb0fac0ec6161dull},
    {"exactint_16/fp32/A", 0x8b1cc3c5e2fb2993ull},
    {"exactint_16/fp32/B", 0xdabb0fac0ec6161dull},
    {"exactint_16/tf32/A", 0x8b1cc3c5e2fb2993ull},
    {"exactint_16/tf32/B", 0xdabb0fac0ec6161dull},
    {"exactint_16/fp16/A", 0x8b1cc3c5e2fb2993ull},
    {"exactint_16/fp16/B", 0xdabb0fac0ec6161dull},
    {"exactint_16/bf16/A", 0x8b1cc3c5e2fb2993ull},
    {"exactint_16/bf16/B", 0xdabb0fac0ec6161dull},
    {"exactint_16/e4m3/A", 0x8b1cc3c5e2fb2993ull},
    {"exactint_16/e4m3/B", 0xdabb0fac0ec6161dull},
};

TEST(DistributionDigests, GenerateMatchesTheDigestsOfCommit8d72b6c) {
  std::set<std::string> seen;
  std::size_t bad = 0;
  std::string table;  // the whole table as this build computes it, printed on failure
  for (const Distribution& d : case_distributions())
    for (Format f : all_formats()) {
      if (!unusable_reason(d, f).empty()) continue;
      for (Operand op : {Operand::A, Operand::B}) {
        const bool a = op == Operand::A;
        const std::string key = d.name() + "/" + info(f).name + "/" + (a ? "A" : "B");
        const std::uint64_t got = digest(generate(d, op, a ? kCaseM : kCaseK, a ? kCaseK : kCaseN, f, kCaseSeed));
        char line[160];
        std::snprintf(line, sizeof line, "    {\"%s\", 0x%016llxull},\n", key.c_str(),
                      static_cast<unsigned long long>(got));
        table += line;
        seen.insert(key);
        const auto it = kGolden.find(key);
        if (it == kGolden.end()) {
          ++bad;
          ADD_FAILURE() << key << ": no golden digest (a new case must be pinned from the old generator)";
        } else if (it->second != got) {
          ++bad;
          ADD_FAILURE() << key << ": digest changed, the generator no longer gives commit 8d72b6c's values";
        }
      }
    }
  for (const auto& [key, want] : kGolden)
    EXPECT_TRUE(seen.count(key)) << key << ": pinned but no longer generated (a format became unusable?)";
  // 11 distributions x 7 formats = 77 pairs less the 8 unusable ones (cancel_-10 in bf16, e4m3,
  // e5m2; cancel_-3 in e5m2; expspread_4 in fp16, e4m3, e5m2; exactint_16 in e5m2): 69, two
  // operands each.
  EXPECT_EQ(seen.size(), 138u);
  EXPECT_EQ(seen.size(), kGolden.size());
  if (bad) ADD_FAILURE() << "digests as computed now:\n" << table;
}

}  // namespace
}  // namespace gemmlab
