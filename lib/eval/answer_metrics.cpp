#include "eval/answer_metrics.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <sstream>

namespace kvf {
namespace {

std::vector<std::string> words(const std::string& normalized) {
  std::istringstream in(normalized);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

double f1_one(const std::string& prediction, const std::string& gold) {
  const std::vector<std::string> p = words(normalize_answer(prediction)), g = words(normalize_answer(gold));
  if (p.empty() || g.empty()) return p.empty() && g.empty() ? 1.0 : 0.0;
  std::map<std::string, int> left;
  for (const std::string& w : g) ++left[w];
  int common = 0;
  for (const std::string& w : p)
    if (left[w]-- > 0) ++common;
  if (common == 0) return 0.0;
  const double precision = (double)common / p.size(), recall = (double)common / g.size();
  return 2 * precision * recall / (precision + recall);
}

template <typename Score>
double best(const std::vector<std::string>& golds, Score score) {
  double b = 0;
  for (const std::string& g : golds) b = std::max(b, score(g));
  return b;
}

}  // namespace

std::string normalize_answer(const std::string& text) {
  std::string lowered;
  for (unsigned char ch : text)
    if (!std::ispunct(ch)) lowered += (char)std::tolower(ch);  // ASCII punctuation, as SQuAD's string.punctuation
  std::string out;
  for (const std::string& w : words(lowered)) {
    if (w == "a" || w == "an" || w == "the") continue;
    if (!out.empty()) out += ' ';
    out += w;
  }
  return out;
}

double exact_match(const std::string& prediction, const std::vector<std::string>& golds) {
  const std::string p = normalize_answer(prediction);
  return best(golds, [&](const std::string& g) { return p == normalize_answer(g) ? 1.0 : 0.0; });
}

double token_f1(const std::string& prediction, const std::vector<std::string>& golds) {
  return best(golds, [&](const std::string& g) { return f1_one(prediction, g); });
}

double substring_match(const std::string& prediction, const std::vector<std::string>& golds) {
  // Whole words only: " " padding keeps "1" from matching inside "1995".
  const std::string p = " " + normalize_answer(prediction) + " ";
  return best(golds, [&](const std::string& g) {
    const std::string n = normalize_answer(g);
    return !n.empty() && p.find(" " + n + " ") != std::string::npos ? 1.0 : 0.0;
  });
}

}  // namespace kvf
