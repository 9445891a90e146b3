// Answer quality against gold answers, as the QA papers score it: SQuAD normalisation (lower case, punctuation
// and the articles a/an/the removed, whitespace collapsed), exact match, token F1, and substring accuracy
// (KVLink A.2: correct when a gold answer occurs in the prediction). Each takes the best over the gold answers.
#pragma once
#include <string>
#include <vector>

namespace kvf {

std::string normalize_answer(const std::string& text);

double exact_match(const std::string& prediction, const std::vector<std::string>& golds);
double token_f1(const std::string& prediction, const std::vector<std::string>& golds);
double substring_match(const std::string& prediction, const std::vector<std::string>& golds);

}  // namespace kvf
