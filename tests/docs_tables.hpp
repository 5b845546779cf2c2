// The lists docs/csv.md documents, read back for the tests that hold them against the code
// (tests/cpu/test_docs.cpp, tests/gpu/test_docs_explain.cpp; tests/python/test_docs.py reads the same
// file for the Python lists). A list is the markdown table after a marker line `<!-- columns: NAME -->`
// or `<!-- statuses -->`: every `backticked` name in the first cell of each row, in order.
#pragma once
#include <algorithm>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace gemmlab::docs {

inline std::vector<std::string> documented_list(const std::string& path, const std::string& marker) {
  std::ifstream f(path);
  if (!f) throw std::runtime_error(path + " cannot be read");
  std::string line;
  while (std::getline(f, line) && line != marker) {
  }
  if (!f) throw std::runtime_error(path + " has no line '" + marker + "' above the table it marks");
  std::vector<std::string> names;
  int row = 0;
  while (std::getline(f, line) && !line.empty() && line[0] == '|') {
    if (row++ < 2) continue;  // the header and the --- line
    const std::string cell = line.substr(1, line.find('|', 1) - 1);
    for (std::size_t a = cell.find('`'); a != std::string::npos; a = cell.find('`', a)) {
      const std::size_t b = cell.find('`', a + 1);
      if (b == std::string::npos) throw std::runtime_error(path + ": unbalanced ` in the row '" + line + "'");
      names.push_back(cell.substr(a + 1, b - a - 1));
      a = b + 1;
    }
  }
  if (names.empty()) throw std::runtime_error(path + ": the table after '" + marker + "' lists no `name`");
  return names;
}

// What differs between the documented list and the code's, in words ("" when they are the same list
// in the same order): names the code has that the docs lack, names the docs have that the code lacks,
// and otherwise the first place where the order differs.
inline std::string list_difference(const std::vector<std::string>& documented, const std::vector<std::string>& code,
                                   const std::string& what) {
  auto missing_from = [](const std::vector<std::string>& a, const std::vector<std::string>& b) {
    std::string out;
    for (const auto& x : a)
      if (std::find(b.begin(), b.end(), x) == b.end()) out += (out.empty() ? "" : ", ") + x;
    return out;
  };
  std::ostringstream s;
  const std::string undocumented = missing_from(code, documented), stale = missing_from(documented, code);
  if (!undocumented.empty()) s << what << " the code has but docs/csv.md does not document: " << undocumented << ". ";
  if (!stale.empty()) s << what << " docs/csv.md documents but the code does not have: " << stale << ". ";
  if (s.str().empty() && documented != code) {
    std::size_t i = 0;
    while (i < documented.size() && documented[i] == code[i]) ++i;
    s << what << " in another order than the code's: entry " << i + 1 << " is '" << documented[i] << "' in docs/csv.md"
      << " and '" << code[i] << "' in the code. ";
  }
  if (!s.str().empty()) s << "Edit docs/csv.md to match.";
  return s.str();
}

}  // namespace gemmlab::docs
