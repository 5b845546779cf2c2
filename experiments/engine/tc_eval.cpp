// `gemmlab tc-eval` (see tc_eval.hpp).
#include "experiments/engine/tc_eval.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <map>
#include <sstream>

#include "experiments/engine/files.hpp"
#include "experiments/plan/plan.hpp"
#include "experiments/report/files.hpp"
#include "experiments/report/metadata.hpp"

namespace gemmlab {

namespace {

std::vector<std::string> split_values(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  for (char ch : s) {
    if (ch == ' ' || ch == ',' || ch == '\t') {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else {
      cur += ch;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r") - b + 1);
}

std::uint64_t parse_bits(Format f, const std::string& text, const std::string& what) {
  const FormatInfo& fi = info(f);
  const std::string digits = text.substr(2);
  if (digits.empty() || digits.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos)
    throw UsageError(what + ": '" + text + "' is not a hex bit pattern (0x followed by hex digits)");
  errno = 0;
  const unsigned long long bits = std::strtoull(digits.c_str(), nullptr, 16);
  if (errno == ERANGE || (fi.storage_bits < 64 && bits >> fi.storage_bits))
    throw UsageError(what + ": " + text + " does not fit the " + std::to_string(fi.storage_bits) + " bits of " +
                     fi.name);
  if (f == Format::tf32 && (bits & 0x1FFFu))
    throw UsageError(what + ": " + text + " is not a tf32 value (its fp32 container's last 13 bits must be 0)");
  return bits;
}

}  // namespace

std::string tc_hex(Format f, std::uint64_t bits) {
  std::ostringstream s;
  s << "0x" << std::hex;
  s.width((info(f).storage_bits + 3) / 4);
  s.fill('0');
  s << bits;
  return s.str();
}

double parse_tc_value(Format f, const std::string& raw, const std::string& what) {
  const std::string text = trim(raw);
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X') &&
      text.find_first_of("pP.") == std::string::npos)
    return from_bits(f, parse_bits(f, text, what));
  char* end = nullptr;
  const double x = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size())
    throw UsageError(what + ": '" + text + "' is neither a 0x bit pattern nor a number");
  if (!std::isnan(x) && !tc::representable(f, x))
    throw UsageError(what + ": " + text + " is not exactly representable in " + info(f).name +
                     " (give the bit pattern, or a value the format holds)");
  return x;
}

TcEvalCase parse_tc_case(const std::string& instruction, const std::string& a, const std::string& b,
                         const std::string& c, const std::string& d) {
  TcEvalCase out;
  const auto ins = tc::parse_instruction(trim(instruction));
  if (!ins) {
    std::string names;
    for (tc::Instruction i : tc::all_instructions()) names += std::string(names.empty() ? "" : ", ") + tc::info(i).name;
    throw UsageError("unknown instruction '" + instruction + "'; known: " + names);
  }
  out.instruction = *ins;
  const tc::InstructionInfo& ii = tc::info(*ins);
  for (auto [text, values, name] : {std::tuple{&a, &out.a, "a"}, std::tuple{&b, &out.b, "b"}}) {
    const std::vector<std::string> items = split_values(*text);
    if (static_cast<int>(items.size()) != ii.k)
      throw UsageError(std::string(name) + ": " + ii.name + " takes k = " + std::to_string(ii.k) + " values, got " +
                       std::to_string(items.size()));
    for (std::size_t k = 0; k < items.size(); ++k)
      values->push_back(parse_tc_value(ii.input, items[k], std::string(name) + "[" + std::to_string(k) + "]"));
  }
  out.c = trim(c).empty() ? 0.0 : parse_tc_value(ii.output, c, "c");
  if (!trim(d).empty()) out.d_observed = to_bits(ii.output, parse_tc_value(ii.output, d, "d"));
  return out;
}

TcEvalResult evaluate_tc_case(const TcEvalCase& c) {
  const tc::InstructionInfo& ii = tc::info(c.instruction);
  const std::optional<tc::TcParams> p = tc::measured_hopper_params(c.instruction);
  if (!p) throw UsageError(std::string(ii.name) + ": gemmlab has no settled model of this instruction");
  TcEvalResult r;
  r.d_value = tc::dot(*p, c.a.data(), c.b.data(), ii.k, c.c);
  r.d_bits = to_bits(ii.output, r.d_value);
  if (c.d_observed) {
    const bool both_nan = std::isnan(r.d_value) && std::isnan(from_bits(ii.output, *c.d_observed));
    r.match = both_nan || *c.d_observed == r.d_bits;
  }
  return r;
}

TcEvalSummary tc_eval_file(const std::string& in_csv, const std::string& out_csv, const std::string& command_line) {
  check_writable(out_csv);
  const engine::CsvRecords csv = engine::parse_csv(engine::read_file(in_csv));
  if (csv.torn_tail) throw UsageError(in_csv + ": the last line is cut short (an unterminated quote or no newline)");
  if (csv.records.empty()) throw UsageError(in_csv + ": empty file; expected a header instruction,a,b,c[,d]");
  std::map<std::string, int> col;
  for (std::size_t i = 0; i < csv.records[0].size(); ++i) col[trim(csv.records[0][i])] = static_cast<int>(i);
  for (const char* need : {"instruction", "a", "b", "c"})
    if (!col.count(need))
      throw UsageError(in_csv + ": no column '" + need + "' in the header (expected instruction,a,b,c and optionally d)");
  const bool has_d = col.count("d") > 0;
  TcEvalSummary s;
  std::vector<std::vector<std::string>> rows;
  nlohmann::json models = nlohmann::json::object();
  for (std::size_t line = 1; line < csv.records.size(); ++line) {
    const std::vector<std::string>& rec = csv.records[line];
    if (rec.size() == 1 && trim(rec[0]).empty()) continue;  // a blank line
    const std::string where = in_csv + " line " + std::to_string(line + 1);
    if (rec.size() != csv.records[0].size())
      throw UsageError(where + ": " + std::to_string(rec.size()) + " fields, the header has " +
                       std::to_string(csv.records[0].size()));
    const auto field = [&](const char* name) { return rec[col.at(name)]; };
    TcEvalCase c;
    try {
      c = parse_tc_case(field("instruction"), field("a"), field("b"), field("c"), has_d ? field("d") : "");
    } catch (const UsageError& e) {
      throw UsageError(where + ": " + e.what());
    }
    const TcEvalResult r = evaluate_tc_case(c);
    const tc::InstructionInfo& ii = tc::info(c.instruction);
    models[ii.name] = tc::measured_hopper_params(c.instruction)->describe();
    ++s.cases;
    if (r.match) {
      ++s.compared;
      s.mismatches += !*r.match;
    }
    std::ostringstream value;
    value.precision(17);
    value << r.d_value;
    rows.push_back({ii.name, field("a"), field("b"), field("c"), has_d ? field("d") : "", tc_hex(ii.output, r.d_bits),
                    value.str(), r.match ? (*r.match ? "1" : "0") : ""});
  }
  nlohmann::json meta = base_metadata("tc-eval", command_line, out_csv);
  meta["input_file"] = in_csv;
  meta["model"] = "tc::measured_hopper_params (results/probes/README.md: inferred on H100 and H200)";
  meta["instruction_models"] = models;
  meta["cases"] = s.cases;
  meta["compared"] = s.compared;
  meta["mismatches"] = s.mismatches;
  write_table(out_csv, {"instruction", "a", "b", "c", "d", "d_model", "d_model_value", "match"}, rows, meta);
  return s;
}

}  // namespace gemmlab
