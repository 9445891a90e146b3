// The corpus of a QA data set's own passages, for building a store that answers its questions in the fixed-
// context setting: every distinct (title, text) of the questions' contexts, in first-seen order, ids 1, 2, ...
#pragma once
#include <string>
#include <vector>

#include "fusion/query_file.h"

namespace kvf {

// Writes JSONL {"id", "title", "text"} to `path` (through path.partial, renamed when complete); leaves an
// existing identical file untouched so that a rebuilt store sees an unchanged corpus, and one that holds more of
// the same questions' passages as it is. An existing file that is neither (not written from this data set) is
// never replaced: kvf::Error. Returns the passage count.
size_t write_dataset_corpus(const std::vector<QueryRecord>& records, const std::string& path);

// The corpus document ids ("1", "2", ...) of each question's passages in that corpus, one list per record.
std::vector<std::vector<std::string>> dataset_corpus_ids(const std::vector<QueryRecord>& records);

}  // namespace kvf
