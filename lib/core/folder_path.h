// Paths that a file names relative to its own folder (a Hugging Face index's shards, a sentence-transformers
// modules.json, a store manifest's files) must stay inside that folder. They are checked as text, not by where
// they resolve: a Hub cache links every file of snapshots/<rev>/ to ../../blobs/<hash>, and those stay allowed.
#pragma once
#include <string>

namespace kvf {

// "" for a relative path of non-empty parts, none "." or "..", without NUL bytes; else why it is not one
// ("is empty", "holds a NUL byte", "is an absolute path", "has an empty or '.' part", "leads out of the folder
// through '..'").
std::string folder_path_problem(const std::string& path);

}  // namespace kvf
