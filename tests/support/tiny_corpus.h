// A small JSONL corpus of short encyclopaedia-style passages on twelve topics, in related pairs (violin and
// cello, Saturn and Jupiter, ...), for end-to-end kvprep tests.
#pragma once
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

namespace kvf::test {

inline const char* const kTopics[][2] = {
    {"Volcano", "A volcano is a rupture in the crust where lava, ash and gases escape from below the surface."},
    {"Glacier", "A glacier is a persistent body of dense ice that moves slowly under its own weight."},
    {"Violin", "The violin is a wooden string instrument played with a bow, the smallest of its family."},
    {"Cello", "The cello is a bowed string instrument, larger than the viola, played seated between the knees."},
    {"Python", "Python is a programming language whose design emphasises readable code and indentation."},
    {"Rust", "Rust is a programming language focused on memory safety without a garbage collector."},
    {"Saturn", "Saturn is the sixth planet from the Sun, known for its bright system of rings."},
    {"Jupiter", "Jupiter is the largest planet of the Solar System, a gas giant with a great red storm."},
    {"Espresso", "Espresso is coffee brewed by forcing hot water through finely ground beans under pressure."},
    {"Green tea", "Green tea is made from leaves that are not withered or oxidised like those of black tea."},
    {"Marathon", "The marathon is a long-distance foot race of about forty-two kilometres."},
    {"Chess", "Chess is a board game for two players on a checkered board of sixty-four squares."},
};

// Writes the first n_docs passages (at most 12) as JSONL {id, title, text}.
inline void write_tiny_corpus(const std::string& path, size_t n_docs) {
  std::ofstream out(path);
  for (size_t i = 0; i < n_docs; ++i) {
    const nlohmann::json doc = {{"id", "doc" + std::to_string(i)}, {"title", kTopics[i][0]}, {"text", kTopics[i][1]}};
    out << doc.dump() << "\n";
  }
}

}  // namespace kvf::test
