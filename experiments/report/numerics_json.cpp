// A numerics record as JSON (see numerics_json.hpp).
#include "experiments/report/numerics_json.hpp"

#include <stdexcept>
#include <string>

#include "reference/error_stats.hpp"
#include "reference/formats.hpp"
#include "reference/tc_model.hpp"

namespace gemmlab {

nlohmann::json numerics_to_json(const Numerics& n) {
  nlohmann::json j{{"input", info(n.input).name},
                   {"compute", info(n.compute).name},
                   {"accumulator", info(n.accumulator).name},
                   {"output", info(n.output).name},
                   {"accumulation", to_string(n.accumulation)},
                   {"k_step", n.k_step},
                   {"promotion_interval_k", n.promotion_interval_k},
                   {"split_k", n.split_k},
                   {"k_chunked", n.k_chunked},
                   {"accumulation_rounding", to_string(n.accumulation_rounding)},
                   {"acc_unit_roundoff", n.acc_unit_roundoff},
                   {"subnormals_flushed", n.subnormals_flushed}};
  j["instruction"] = n.instruction ? nlohmann::json(tc::info(*n.instruction).name) : nlohmann::json(nullptr);
  j["split_pieces"] = n.split.pieces;
  j["split_products"] = products_text(n.split);
  j["split_rounding"] = to_string(n.split.rounding);
  j["tree"] = n.tree;
  return j;
}

Numerics numerics_from_json(const nlohmann::json& j) {
  auto need = [&](const char* key) -> const nlohmann::json& {
    if (!j.contains(key)) throw std::invalid_argument(std::string("numerics: the field '") + key + "' is missing");
    return j.at(key);
  };
  auto format = [&](const char* key) {
    const std::string name = need(key).get<std::string>();
    auto f = parse_format(name);
    if (!f) throw std::invalid_argument(std::string("numerics: ") + key + " '" + name + "' is not a format");
    return *f;
  };
  Numerics n;
  n.input = format("input");
  n.compute = format("compute");
  n.accumulator = format("accumulator");
  n.output = format("output");
  const std::string acc = need("accumulation").get<std::string>();
  auto a = parse_accumulation(acc);
  if (!a) throw std::invalid_argument("numerics: accumulation '" + acc + "' is not known");
  n.accumulation = *a;
  n.k_step = need("k_step").get<int>();
  n.promotion_interval_k = need("promotion_interval_k").get<int>();
  n.split_k = need("split_k").get<int>();
  n.k_chunked = need("k_chunked").get<bool>();
  const std::string r = need("accumulation_rounding").get<std::string>();
  auto rr = parse_rounding(r);
  if (!rr) throw std::invalid_argument("numerics: accumulation_rounding '" + r + "' is not known");
  n.accumulation_rounding = *rr;
  n.acc_unit_roundoff = need("acc_unit_roundoff").get<double>();
  n.subnormals_flushed = need("subnormals_flushed").get<bool>();
  const nlohmann::json& ins = need("instruction");
  if (!ins.is_null()) {
    auto i = tc::parse_instruction(ins.get<std::string>());
    if (!i) throw std::invalid_argument("numerics: instruction '" + ins.get<std::string>() + "' is not known");
    n.instruction = *i;
  }
  // The split fields came with explain's split operands: a record written before them has none.
  if (j.contains("split_pieces")) {
    n.split.pieces = j.at("split_pieces").get<int>();
    const std::string products = need("split_products").get<std::string>();
    OperandSplit any{.pieces = max_operand_pieces};
    if (!parse_products(products, any))
      throw std::invalid_argument("numerics: split_products '" + products + "' is not a list of piece pairs (\"00 01 10\")");
    n.split.products = any.products;
    if (const std::string why = split_problem(n.split); !why.empty())
      throw std::invalid_argument("numerics: split_pieces " + std::to_string(n.split.pieces) + ", split_products '" +
                                  products + "': " + why);
    const std::string sr = need("split_rounding").get<std::string>();
    auto r2 = parse_rounding(sr);
    if (!r2) throw std::invalid_argument("numerics: split_rounding '" + sr + "' is not known");
    n.split.rounding = *r2;
  }
  // The revealed tree came with issue 37: a record written before it has none. Its K is the caller's
  // to check (bound_model refuses a tree of another K).
  if (j.contains("tree")) n.tree = j.at("tree").get<std::string>();
  if (n.accumulation == Accumulation::tree && n.tree.empty())
    throw std::invalid_argument("numerics: accumulation tree needs the field 'tree' (the revealed tree's compact form)");
  return n;
}

}  // namespace gemmlab
