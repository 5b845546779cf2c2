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
#include "reference/tc_corpus.hpp"

namespace gemmlab {

namespace {

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

std::uint64_t parse_tc_bits(Format f, const std::string& raw, const std::string& what) {
  const FormatInfo& fi = info(f);
  const std::string text = trim(raw);
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X') &&
      text.find_first_of("pP.") == std::string::npos) {
    const std::string digits = text.substr(2);
    if (digits.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos)
      throw UsageError(what + ": '" + text + "' is not a hex bit pattern (0x followed by hex digits)");
    errno = 0;
    const unsigned long long bits = std::strtoull(digits.c_str(), nullptr, 16);
    if (errno == ERANGE || (fi.storage_bits < 64 && bits >> fi.storage_bits))
      throw UsageError(what + ": " + text + " does not fit the " + std::to_string(fi.storage_bits) + " bits of " +
                       fi.name);
    return bits;  // tf32: any fp32 container; the instruction reads it as tf32_low_bits says
  }
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
    TcEvalCase c;
    try {
      c = parse_tc_case(field("instruction"), field("a"), field("b"), field("c"), has_d ? field("d") : "");
    } catch (const UsageError& e) {
      throw UsageError(where + ": " + e.what());
    }
    s.used_commas = s.used_commas || c.used_commas;
    TcEvalResult r;
    try {
      r = evaluate_tc_case(c, explain, g);
    } catch (const UsageError& e) {
      throw UsageError(where + ": " + e.what());
    }
    const tc::InstructionInfo& ii = tc::info(c.instruction);
    const tc::ModelProvenance prov = tc::provenance(g, c.instruction);
    models[ii.name] = {{"model", tc_eval_params(c.instruction, g).describe()},
                       {"source", tc::to_string(prov.source)},
                       {"evidence", prov.text}};
    ++s.cases;
    if (r.match) {
      ++s.compared;
      s.mismatches += !*r.match;
    }
    std::ostringstream value;
    value.precision(17);
    value << r.d_value;
    std::vector<std::string> row = rec;  // every input column, passed through
    row.insert(row.end(), {tc_hex(ii.output, r.d_bits), value.str(), r.match ? (*r.match ? "1" : "0") : ""});
    if (explain) {
      std::string text;
      for (const std::string& l : explain_tc_case(c, r)) text += (text.empty() ? "" : " | ") + l;
      row.insert(row.end(), {r.trace.rule, text});
    }
    rows.push_back(std::move(row));
  }
  std::vector<std::string> columns = header;
  columns.insert(columns.end(), added.begin(), added.end());
  nlohmann::json meta = base_metadata("tc-eval", command_line, out_csv);
  meta["input_file"] = in_csv;
  meta["generation"] = tc::to_string(g);
  meta["model"] = std::string("tc::generation_params(") + tc::to_string(g) + ") (reference/tc_gpus.hpp)";
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
      "source", "evidence"};
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
           dash(tc::to_string(p.zero_operand_exponent)), tc::to_string(prov.source), prov.text});
    }
  nlohmann::json meta = base_metadata("tc-eval --list", command_line, out_csv);
  meta["model"] = "tc::generation_params (reference/tc_gpus.hpp)";
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
