// `gemmlab tc-eval` (see tc_eval.hpp).
#include "experiments/engine/tc_eval.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "experiments/engine/files.hpp"
#include "experiments/plan/plan.hpp"
#include "experiments/report/files.hpp"
#include "experiments/report/metadata.hpp"
#include "reference/tc_corpus.hpp"
#include "reference/tc_infer.hpp"

namespace gemmlab {

namespace {

// The columns of a case file that only the block-scaled kinds read.
constexpr const char* kBlockScaledColumns[] = {"scale_a", "scale_b", "a_format", "b_format", "block", "scale_format"};

// Values are separated by spaces (tabs too); a comma is read as a separator but marked deprecated.
std::vector<std::string> split_values(const std::string& s, bool& used_commas) {
  std::vector<std::string> out;
  std::string cur;
  for (char ch : s) {
    if (ch == ' ' || ch == ',' || ch == '\t') {
      used_commas = used_commas || ch == ',';
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

}  // namespace

std::string tc_hex(Format f, std::uint64_t bits) {
  std::ostringstream s;
  s << "0x" << std::hex;
  s.width((info(f).storage_bits + 3) / 4);
  s.fill('0');
  s << bits;
  return s.str();
}

// A 0x bit pattern of f (hex digits that fit its storage), or nullopt where `text` is not written as one (a
// hex float such as 0x1p-3 is a number). Throws UsageError for a malformed or oversized pattern.
std::optional<std::uint64_t> parse_hex_bits(Format f, const std::string& text, const std::string& what) {
  if (!(text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X') &&
        text.find_first_of("pP.") == std::string::npos))
    return std::nullopt;
  const FormatInfo& fi = info(f);
  const std::string digits = text.substr(2);
  if (digits.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos)
    throw UsageError(what + ": '" + text + "' is not a hex bit pattern (0x followed by hex digits)");
  errno = 0;
  const unsigned long long bits = std::strtoull(digits.c_str(), nullptr, 16);
  if (errno == ERANGE || (fi.storage_bits < 64 && bits >> fi.storage_bits))
    throw UsageError(what + ": " + text + " does not fit the " + std::to_string(fi.storage_bits) + " bits of " +
                     fi.name);
  return bits;
}

std::uint64_t parse_tc_bits(Format f, const std::string& raw, const std::string& what) {
  const FormatInfo& fi = info(f);
  const std::string text = trim(raw);
  if (const auto bits = parse_hex_bits(f, text, what))
    return *bits;  // tf32: any fp32 container; the instruction reads it as tf32_low_bits says
  char* end = nullptr;
  const double x = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size())
    throw UsageError(what + ": '" + text + "' is neither a 0x bit pattern nor a number");
  if (!std::isnan(x) && !tc::representable(f, x))
    throw UsageError(what + ": " + text + " is not exactly representable in " + fi.name +
                     " (give the bit pattern, or a value the format holds)");
  return to_bits(f, x);
}

double parse_tc_value(Format f, const std::string& text, const std::string& what) {
  return from_bits(f, parse_tc_bits(f, text, what));
}

TcEvalCase parse_tc_case(const std::string& instruction, const std::string& a, const std::string& b,
                         const std::string& c, const std::string& d) {
  TcEvalCase out;
  const auto ins = tc::parse_instruction(trim(instruction));
  if (!ins) {
    std::string names;
    for (tc::Instruction i : tc::every_instruction()) names += std::string(names.empty() ? "" : ", ") + tc::info(i).name;
    for (tc::BlockScaledKind k : tc::every_block_scaled_kind()) names += std::string(", ") + tc::info(k).name;
    throw UsageError("unknown instruction '" + instruction + "'; known: " + names);
  }
  out.instruction = *ins;
  const tc::InstructionInfo& ii = tc::info(*ins);
  for (auto [text, bits, name, format] :
       {std::tuple{&a, &out.bits.a, "a", ii.input}, std::tuple{&b, &out.bits.b, "b", ii.format_b()}}) {
    const std::vector<std::string> items = split_values(*text, out.used_commas);
    if (static_cast<int>(items.size()) != ii.k)
      throw UsageError(std::string(name) + ": " + ii.name + " takes k = " + std::to_string(ii.k) + " values, got " +
                       std::to_string(items.size()) + " (values are separated by spaces)");
    for (std::size_t k = 0; k < items.size(); ++k)
      bits->push_back(parse_tc_bits(format, items[k], std::string(name) + "[" + std::to_string(k) + "]"));
  }
  out.bits.c = trim(c).empty() ? 0 : parse_tc_bits(ii.output, c, "c");
  if (!trim(d).empty()) out.d_observed = parse_tc_bits(ii.output, d, "d");
  return out;
}

tc::TcParams tc_eval_params(tc::Instruction i, tc::Generation g) {
  if (!tc::has_instruction(g, i)) {
    const std::optional<tc::Instruction> near = tc::closest_instruction(g, i);
    throw UsageError(std::string(tc::info(i).name) + " does not exist on " + tc::to_string(g) +
                     (near ? std::string(": the closest instruction it has is ") + tc::info(*near).name
                           : std::string(", nor any instruction of the same formats")) +
                     " (`gemmlab tc-eval --list --gpu " + tc::to_string(g) + "` names them)");
  }
  const std::optional<tc::TcParams> p = tc::generation_params(g, i);
  if (!p) throw UsageError(std::string(tc::info(i).name) + ": gemmlab has no model of this instruction");
  return *p;
}

TcEvalResult evaluate_tc_case(const TcEvalCase& c, bool explain, tc::Generation g) {
  const tc::TcParams p = tc_eval_params(c.instruction, g);
  tc::Probe probe;
  probe.raw = c.bits;
  TcEvalResult r;
  r.d_value = tc::predict(p, probe, explain ? &r.trace : nullptr);
  r.d_bits = tc::encode_output(p, r.d_value);
  if (c.d_observed) r.match = *c.d_observed == r.d_bits;
  return r;
}

std::vector<std::string> explain_tc_case(const TcEvalCase& c, const TcEvalResult& r, tc::Generation g) {
  const tc::InstructionInfo& ii = tc::info(c.instruction);
  const tc::TcParams p = tc_eval_params(c.instruction, g);
  const tc::TcTrace& t = r.trace;
  const auto x = [](double v) { return tc::exact_text(v); };
  std::vector<std::string> out;
  out.push_back(std::string("model of ") + ii.name + " on " + tc::to_string(g) + " (" + tc::provenance(g, c.instruction).text +
                "): " + p.describe());
  out.push_back("rule: " + t.rule);
  for (std::size_t j = 0; j < t.blocks.size(); ++j) {
    const tc::TcTrace::Block& b = t.blocks[j];
    std::string ks;
    for (int k : b.ks) ks += (ks.empty() ? "" : ",") + std::to_string(k);
    out.push_back("block " + std::to_string(j + 1) + " of " + std::to_string(t.blocks.size()) + " (k = " + ks +
                  "), C = " + x(b.c));
    for (const tc::TcTrace::Term& term : b.terms)
      out.push_back("  " + (term.k < 0 ? std::string("C") : "a" + std::to_string(term.k) + "*b" + std::to_string(term.k)) +
                    " = " + x(term.value) + " (exponent " + std::to_string(term.align_exponent) + ") -> aligned " +
                    x(term.aligned));
    if (!b.max_from.empty()) {
      out.push_back("  aligned to 2^" + std::to_string(b.max_exponent) + " (set by " + b.max_from + "), " +
                    std::to_string(p.fraction_bits()) + " fraction bits kept: last place 2^" +
                    std::to_string(b.quantum_exponent) + ", bits below it " + to_string(p.align_rounding));
      out.push_back("  truncated sum " + x(b.aligned_sum) +
                    (b.aligned_sum == 0 ? std::string("") : ", normalised: leading bit 2^" + std::to_string(b.leading_exponent)));
    }
    if (!b.note.empty()) out.push_back("  " + b.note);
    std::string rounding = std::string("rounded ") + to_string(p.output_rounding) + " to " + info(p.output).name;
    if (p.result_fraction_bits >= 0) rounding += " after a cut to " + std::to_string(p.result_fraction_bits) + " fraction bits";
    out.push_back("  block result " + x(b.result) + " (" + rounding + ")");
  }
  if (t.final_add)
    out.push_back("C added last: " + x(t.final_sum) + " + C, rounded to nearest even in " + std::string(info(p.output).name) +
                  " (an FADD)");
  out.push_back("D = " + tc_hex(ii.output, r.d_bits) + " = " + x(r.d_value) +
                (std::isnan(r.d_value) ? std::string(" (NaN encoding ") + to_string(p.nan_encoding) + ")" : ""));
  return out;
}

namespace {

std::string format_list(const std::vector<Format>& fs) {
  std::string s;
  for (Format f : fs) s += (s.empty() ? "" : ", ") + std::string(info(f).name);
  return s;
}

// What values a format holds, for a message about one it does not.
std::string format_hint(Format f) {
  switch (f) {
    case Format::ue8m0: return "ue8m0 scales are powers of two, 2^-127 .. 2^127 (e.g. 0.25, 1, 8; or the bit pattern 0x7f for 1)";
    case Format::ue4m3: return "ue4m3 scales are e4m3's non-negative values, 0 .. 448 (e.g. 0.75, 1.5, 6)";
    case Format::e2m1: return "e2m1 holds 0, 0.5, 1, 1.5, 2, 3, 4, 6 and their negatives";
    default:
      return std::string(info(f).name) + " holds values up to " + tc::exact_text(info(f).max_finite) +
             " on its grid; give the bit pattern, or a value the format holds";
  }
}

// One element or scale value: a 0x bit pattern of f, or a number f holds exactly (formats.hpp's grid).
double parse_block_scaled_value(Format f, const std::string& raw, const std::string& what) {
  const FormatInfo& fi = info(f);
  const std::string text = trim(raw);
  if (const auto bits = parse_hex_bits(f, text, what)) return from_bits(f, *bits);
  char* end = nullptr;
  const double x = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size())
    throw UsageError(what + ": '" + text + "' is neither a 0x bit pattern nor a number");
  if (!is_representable(f, x))
    throw UsageError(what + ": " + text + " is not a value of " + fi.name + ": " + format_hint(f));
  return x;
}

std::vector<double> parse_block_scaled_values(Format f, const std::string& text, const std::string& what,
                                              std::size_t count, const std::string& count_text, bool& used_commas) {
  const std::vector<std::string> items = split_values(text, used_commas);
  if (items.size() != count)
    throw UsageError(what + ": " + count_text + ", got " + std::to_string(items.size()) +
                     " (values are separated by spaces)");
  std::vector<double> v;
  for (std::size_t i = 0; i < items.size(); ++i)
    v.push_back(parse_block_scaled_value(f, items[i], what + "[" + std::to_string(i) + "]"));
  return v;
}

}  // namespace

TcBlockScaledCase parse_tc_block_scaled_case(const TcBlockScaledFields& f) {
  TcBlockScaledCase out;
  const auto kind = tc::parse_block_scaled_kind(trim(f.instruction));
  if (!kind) throw UsageError("'" + f.instruction + "' is not a block-scaled kind (tcgen05_mxf8f6f4, tcgen05_mxf4, tcgen05_mxf4nvf4)");
  out.kind = *kind;
  const tc::BlockScaledInfo& bi = tc::info(*kind);
  const std::vector<Format>& elements = tc::element_formats(*kind);
  for (auto [text, dst, name] : {std::tuple{&f.a_format, &out.a_format, "a_format"},
                                 std::tuple{&f.b_format, &out.b_format, "b_format"}}) {
    const std::string t = trim(*text);
    if (t.empty()) {
      *dst = elements.front();
      continue;
    }
    const std::optional<Format> fmt = parse_any_format(t);
    if (!fmt || std::find(elements.begin(), elements.end(), *fmt) == elements.end())
      throw UsageError(std::string(name) + ": " + bi.name + " takes " + format_list(elements) + " elements, not '" + t + "'");
    *dst = *fmt;
  }
  const std::string block = trim(f.block);
  if (block.empty()) {
    out.block = bi.default_block;
  } else if (block == "16" || block == "32") {
    out.block = std::stoi(block);
  } else {
    throw UsageError("block: '" + block + "' is not a scale block (16 or 32); " + bi.name + " takes scales " +
                     tc::scales_help(*kind));
  }
  const std::string sf = trim(f.scale_format);
  if (sf.empty()) {
    out.scale_format = tc::default_scale_format(*kind, out.block);
  } else {
    const std::optional<Format> fmt = parse_any_format(sf);
    if (!fmt || (*fmt != Format::ue8m0 && *fmt != Format::ue4m3))
      throw UsageError("scale_format: '" + sf + "' is not a scale format (ue8m0 or ue4m3)");
    out.scale_format = *fmt;
  }
  if (!tc::takes_scales(*kind, out.block, out.scale_format))
    throw UsageError(std::string(bi.name) + " takes scales " + tc::scales_help(*kind) + ", not " +
                     info(out.scale_format).name + " per " + std::to_string(out.block) +
                     ": give a block and scale_format of those");
  const std::string k_text = std::string(bi.name) + " takes k = " + std::to_string(bi.k) + " values";
  out.a = parse_block_scaled_values(out.a_format, f.a, "a", static_cast<std::size_t>(bi.k), k_text, out.used_commas);
  out.b = parse_block_scaled_values(out.b_format, f.b, "b", static_cast<std::size_t>(bi.k), k_text, out.used_commas);
  const int scales = bi.k / out.block;
  const std::string s_text = std::string(bi.name) + " takes " + std::to_string(scales) + " " +
                             info(out.scale_format).name + " scale" + (scales > 1 ? "s" : "") + " per operand (one per " +
                             std::to_string(out.block) + " of k = " + std::to_string(bi.k) + ")";
  out.scales_a = parse_block_scaled_values(out.scale_format, f.scale_a, "scale_a", static_cast<std::size_t>(scales),
                                           s_text, out.used_commas);
  out.scales_b = parse_block_scaled_values(out.scale_format, f.scale_b, "scale_b", static_cast<std::size_t>(scales),
                                           s_text, out.used_commas);
  out.c = trim(f.c).empty() ? 0.0 : parse_tc_value(Format::fp32, f.c, "c");
  if (!trim(f.d).empty()) out.d_observed = parse_tc_bits(Format::fp32, f.d, "d");
  return out;
}

void require_block_scaled(tc::BlockScaledKind k, tc::Generation g) {
  if (tc::has_block_scaled(g, k)) return;
  throw UsageError(std::string(tc::info(k).name) + " does not exist on " + tc::to_string(g) +
                   ": Blackwell's block-scaled kinds are on " + tc::gpus_with(k) +
                   " only (gemmlab has them as a model from the literature); pass --gpu b200");
}

TcBlockScaledResult evaluate_tc_block_scaled_case(const TcBlockScaledCase& c, bool explain, tc::Generation g) {
  require_block_scaled(c.kind, g);
  TcBlockScaledResult r;
  tc::BlockScaledTrace* trace = explain ? &r.trace : nullptr;
  try {
    if (c.kind == tc::BlockScaledKind::mxf8f6f4)
      r.d_value = tc::mxf8f6f4_dot(c.a, c.a_format, c.b, c.b_format, c.scales_a.at(0), c.scales_b.at(0), c.c, trace);
    else
      r.d_value = tc::mxf4nvf4_dot(c.a, c.b, c.scales_a, c.scales_b, c.block, c.scale_format, c.c, trace);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  r.d_bits = to_bits(Format::fp32, r.d_value);
  if (c.d_observed) r.match = *c.d_observed == r.d_bits;
  return r;
}

std::string describe_tc_block_scaled_case(const TcBlockScaledCase& c) {
  return std::string(info(c.a_format).name) + " x " + info(c.b_format).name + ", one " + info(c.scale_format).name +
         " scale per " + std::to_string(c.block) + " products; " + tc::describe(c.kind);
}

std::vector<std::string> explain_tc_block_scaled_case(const TcBlockScaledCase& c, const TcBlockScaledResult& r,
                                                      tc::Generation g) {
  const auto x = [](double v) { return tc::exact_text(v); };
  const tc::BlockScaledTrace& t = r.trace;
  std::vector<std::string> out;
  out.push_back(std::string("model of ") + tc::info(c.kind).name + " on " + tc::to_string(g) + " (" +
                tc::provenance(g, c.kind).text + "): " + describe_tc_block_scaled_case(c));
  out.push_back("rule: " + t.rule);
  int zeros = 0;
  for (const tc::BlockScaledTrace::Term& term : t.terms) {
    if (term.value == 0) {
      ++zeros;
      continue;
    }
    out.push_back("  " + term.name + " = " + x(term.value) + " (exponent " + std::to_string(term.exponent) +
                  ") -> aligned " + x(term.aligned));
  }
  if (zeros) out.push_back("  " + std::to_string(zeros) + " zero term(s) not shown (aligned 0)");
  if (!t.max_from.empty()) {
    out.push_back("  aligned to 2^" + std::to_string(t.max_exponent) + " (set by " + t.max_from + "), " +
                  std::to_string(t.fraction_bits) + " fraction bits kept: last place 2^" +
                  std::to_string(t.max_exponent - t.fraction_bits) + ", bits below it truncated toward zero");
    out.push_back("  truncated sum " + x(t.aligned_sum) + ", written to fp32 toward zero");
  }
  out.push_back("D = " + tc_hex(Format::fp32, r.d_bits) + " = " + x(r.d_value) +
                (std::isnan(r.d_value) ? std::string(" (fp32's canonical NaN: the hardware's NaN bits are not modelled)")
                                       : ""));
  return out;
}

TcEvalSummary tc_eval_file(const std::string& in_csv, const std::string& out_csv, const std::string& command_line,
                           bool explain, tc::Generation g) {
  check_writable(out_csv);
  const engine::CsvRecords csv = engine::parse_csv(engine::read_file(in_csv));
  if (csv.torn_tail) throw UsageError(in_csv + ": the last line is cut short (an unterminated quote or no newline)");
  if (csv.records.empty()) throw UsageError(in_csv + ": empty file; expected a header instruction,a,b,c[,d]");
  const std::vector<std::string>& header = csv.records[0];
  std::map<std::string, int> col;
  for (std::size_t i = 0; i < header.size(); ++i) col[trim(header[i])] = static_cast<int>(i);
  for (const char* need : {"instruction", "a", "b", "c"})
    if (!col.count(need))
      throw UsageError(in_csv + ": no column '" + need + "' in the header (expected instruction,a,b,c and optionally d)");
  std::vector<std::string> added = {"d_model", "d_model_value", "match"};
  if (explain) added.insert(added.end(), {"rule", "explanation"});
  for (const std::string& a : added)
    if (col.count(a))
      throw UsageError(in_csv + ": the input has a column '" + a + "', which tc-eval writes; rename it");
  const bool has_d = col.count("d") > 0;
  TcEvalSummary s;
  std::vector<std::vector<std::string>> rows;
  nlohmann::json models = nlohmann::json::object();
  for (std::size_t line = 1; line < csv.records.size(); ++line) {
    const std::vector<std::string>& rec = csv.records[line];
    if (rec.size() == 1 && trim(rec[0]).empty()) continue;  // a blank line
    const std::string where = in_csv + " line " + std::to_string(line + 1);
    if (rec.size() != header.size())
      throw UsageError(where + ": " + std::to_string(rec.size()) + " fields, the header has " +
                       std::to_string(header.size()));
    const auto field = [&](const char* name) { return rec[col.at(name)]; };
    const auto optional_field = [&](const char* name) { return col.count(name) ? rec[col.at(name)] : std::string(); };
    std::vector<std::string> row = rec;  // every input column, passed through
    std::ostringstream value;
    value.precision(17);
    std::optional<bool> match;
    std::string rule, text;
    if (const auto kind = tc::parse_block_scaled_kind(trim(field("instruction")))) {
      TcBlockScaledResult r;
      TcBlockScaledCase c;
      try {
        c = parse_tc_block_scaled_case({field("instruction"), field("a"), field("b"), optional_field("scale_a"),
                                        optional_field("scale_b"), optional_field("a_format"), optional_field("b_format"),
                                        optional_field("block"), optional_field("scale_format"), field("c"),
                                        has_d ? field("d") : ""});
        r = evaluate_tc_block_scaled_case(c, explain, g);
      } catch (const UsageError& e) {
        throw UsageError(where + ": " + e.what());
      }
      s.used_commas = s.used_commas || c.used_commas;
      const tc::ModelProvenance prov = tc::provenance(g, *kind);
      models[tc::info(*kind).name] = {{"model", tc::describe(*kind)},
                                      {"source", tc::to_string(prov.source)},
                                      {"evidence", prov.text}};
      value << r.d_value;
      row.insert(row.end(), {tc_hex(Format::fp32, r.d_bits), value.str()});
      match = r.match;
      if (explain) {
        for (const std::string& l : explain_tc_block_scaled_case(c, r, g)) text += (text.empty() ? "" : " | ") + l;
        rule = r.trace.rule;
      }
    } else {
      for (const char* name : kBlockScaledColumns)
        if (!trim(optional_field(name)).empty())
          throw UsageError(where + ": " + name + " is given, but only the block-scaled kinds (tcgen05_mxf8f6f4, "
                           "tcgen05_mxf4, tcgen05_mxf4nvf4) take it; leave it empty for " + trim(field("instruction")));
      TcEvalCase c;
      TcEvalResult r;
      try {
        c = parse_tc_case(field("instruction"), field("a"), field("b"), field("c"), has_d ? field("d") : "");
        r = evaluate_tc_case(c, explain, g);
      } catch (const UsageError& e) {
        throw UsageError(where + ": " + e.what());
      }
      s.used_commas = s.used_commas || c.used_commas;
      const tc::InstructionInfo& ii = tc::info(c.instruction);
      const tc::ModelProvenance prov = tc::provenance(g, c.instruction);
      models[ii.name] = {{"model", tc_eval_params(c.instruction, g).describe()},
                         {"source", tc::to_string(prov.source)},
                         {"evidence", prov.text}};
      value << r.d_value;
      row.insert(row.end(), {tc_hex(ii.output, r.d_bits), value.str()});
      match = r.match;
      if (explain) {
        for (const std::string& l : explain_tc_case(c, r, g)) text += (text.empty() ? "" : " | ") + l;
        rule = r.trace.rule;
      }
    }
    ++s.cases;
    if (match) {
      ++s.compared;
      s.mismatches += !*match;
    }
    row.push_back(match ? (*match ? "1" : "0") : "");
    if (explain) row.insert(row.end(), {rule, text});
    rows.push_back(std::move(row));
  }
  std::vector<std::string> columns = header;
  columns.insert(columns.end(), added.begin(), added.end());
  nlohmann::json meta = base_metadata("tc-eval", command_line, out_csv);
  meta["input_file"] = in_csv;
  meta["generation"] = tc::to_string(g);
  meta["model"] = std::string("tc::generation_params(") + tc::to_string(g) +
                  ") (reference/tc_gpus.hpp); block-scaled kinds: reference/tc_block_scaled.hpp (literature)";
  meta["instruction_models"] = models;
  meta["match"] = "bit for bit, NaN included (the model writes NaN as its nan_encoding rule says)";
  meta["cases"] = s.cases;
  meta["compared"] = s.compared;
  meta["mismatches"] = s.mismatches;
  write_table(out_csv, columns, rows, meta);
  return s;
}

void write_tc_models(const std::vector<tc::Generation>& gens, const std::string& out_csv,
                     const std::string& command_line) {
  check_writable(out_csv);
  const std::vector<std::string> columns = {
      "generation", "instruction", "k", "input", "input_b", "output", "arithmetic", "block", "fraction_bits",
      "align_rounding", "output_rounding", "align_reference", "c_in_alignment", "result_fraction_bits", "zero_c_exponent",
      "split", "c_entry", "operand_conversion", "subnormals", "nan_encoding", "overflow", "zero_sign", "zero_operand",
      "scales", "source", "evidence"};
  std::vector<std::vector<std::string>> rows;
  for (tc::Generation g : gens)
    for (tc::Instruction i : tc::instructions_of(g)) {
      const tc::InstructionInfo& ii = tc::info(i);
      const tc::TcParams p = *tc::generation_params(g, i);
      const tc::ModelProvenance prov = tc::provenance(g, i);
      const bool fused = p.arithmetic == tc::Arithmetic::block_fused;
      const auto dash = [&](const std::string& v) { return fused ? v : std::string(""); };
      rows.push_back(
          {tc::to_string(g), ii.name, std::to_string(ii.k), info(ii.input).name, ii.input_b ? info(*ii.input_b).name : "",
           info(ii.output).name, tc::to_string(p.arithmetic), std::to_string(p.block_size),
           dash(std::to_string(p.fraction_bits())), dash(to_string(p.align_rounding)), to_string(p.output_rounding),
           dash(tc::to_string(p.align_reference)), dash(p.c_in_alignment ? "yes" : "no"),
           dash(p.result_fraction_bits < 0 ? "none" : std::to_string(p.result_fraction_bits)),
           dash(p.zero_c_offset < 0 ? "absent" : "emin-" + std::to_string(p.zero_c_offset)),
           dash(p.step_interleave == 0 ? "contiguous" : "interleave" + std::to_string(p.step_interleave)),
           dash(tc::to_string(p.c_entry)), dash(p.operand_conversion ? info(*p.operand_conversion).name : "as_is"),
           std::string(p.subnormal_inputs ? "kept" : "flushed") + "/" + (p.subnormal_output ? "kept" : "flushed"),
           tc::to_string(p.nan_encoding), tc::to_string(p.overflow), tc::to_string(p.zero_sign),
           dash(tc::to_string(p.zero_operand_exponent)), "", tc::to_string(prov.source), prov.text});
    }
    // Blackwell's block-scaled kinds (reference/tc_block_scaled.hpp): one fused sum of C and the k products
    // (kind::mxf4, mxf4nvf4: of C and 4 exact groups of 16), its terms and the fp32 result toward zero;
    // what MMA-Sim does not say (NaN bits, the exponent of a zero C beyond -126) is left empty.
    for (tc::Generation g : gens)
      for (tc::BlockScaledKind k : tc::block_scaled_kinds_of(g)) {
        const tc::BlockScaledInfo& bi = tc::info(k);
        const tc::ModelProvenance prov = tc::provenance(g, k);
        // scales: every (format, block) the kind takes, as "ue4m3/16 ue8m0/16 ue8m0/32".
        std::string elements, scales;
        for (Format f : tc::element_formats(k)) elements += (elements.empty() ? "" : " ") + std::string(info(f).name);
        for (Format f : {Format::ue4m3, Format::ue8m0})
          for (int block : {16, 32})
            if (tc::takes_scales(k, block, f))
              scales += (scales.empty() ? "" : " ") + std::string(info(f).name) + "/" + std::to_string(block);
        rows.push_back({tc::to_string(g), bi.name, std::to_string(bi.k), elements, "", "fp32", "block_scaled",
                        std::to_string(bi.k), std::to_string(bi.fraction_bits), "toward_zero", "toward_zero", "", "yes",
                        "none", "", "", "", "as_is", "kept/kept", "", "infinity", "plus", "", scales,
                        tc::to_string(prov.source), prov.text});
      }
  nlohmann::json meta = base_metadata("tc-eval --list", command_line, out_csv);
  meta["model"] = "tc::generation_params (reference/tc_gpus.hpp); the block-scaled kinds (arithmetic block_scaled): "
                  "reference/tc_block_scaled.hpp, a model from the literature (MMA-Sim) that no gemmlab probe has run";
  write_table(out_csv, columns, rows, meta);
}

long long write_tc_cases(tc::Instruction instruction, const std::string& which, const std::string& out_csv,
                         const std::string& command_line) {
  check_writable(out_csv);
  const tc::InstructionInfo& ii = tc::info(instruction);
  std::vector<tc::Probe> cases;
  if (which == "probes") cases = tc::make_probes(ii);
  else if (which == "corpus") cases = tc::make_corpus(ii);
  else throw UsageError("--write-cases takes probes or corpus, not '" + which + "'");
  std::vector<std::vector<std::string>> rows;
  for (const tc::Probe& p : cases) {
    const tc::RawBits bits = tc::probe_bits(ii, p);
    std::string a, b;
    for (int k = 0; k < ii.k; ++k) {
      a += (k ? " " : "") + tc_hex(ii.input, bits.a[k]);
      b += (k ? " " : "") + tc_hex(ii.format_b(), bits.b[k]);
    }
    rows.push_back({ii.name, a, b, tc_hex(ii.output, bits.c), p.id, p.feature});
  }
  nlohmann::json meta = base_metadata("tc-eval --write-cases", command_line, out_csv);
  meta["cases"] = which == "probes" ? "reference/tc_infer.cpp make_probes" : "reference/tc_corpus.cpp make_corpus";
  if (which == "corpus") meta["corpus_seed"] = tc::kCorpusSeed;
  write_table(out_csv, {"instruction", "a", "b", "c", "case", "class"}, rows, meta);
  return static_cast<long long>(rows.size());
}

}  // namespace gemmlab
