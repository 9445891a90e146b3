// The prompt layout every stored KV and every query shares (DESIGN.md §6): [S][C_1]...[C_k][Q]. S is the chat
// template's opening up to where the user's content begins (system message included); chunks follow in the user
// turn; Q is the question and the rest of the template up to the assistant header.
//
// Both ask for a short answer, as the QA data sets score it (docs/eval.md): the system message kRagSystemMessage
// (unless the store was built with another) and Q's instruction before the question.
#pragma once
#include <string>

#include "text/chat_template.h"

namespace kvf {

// The system message of S when none is given.
inline constexpr const char* kRagSystemMessage =
    "You answer questions from the passages the user gives. Give a short answer: a few words, such as a name, a "
    "date, a number, or yes or no. Do not explain.";

// Q's instruction, before "Question: ..." (kvrun eval records it with a sweep's options).
inline constexpr const char* kRagQuestionInstruction =
    "Answer the question using the passages above. Reply with the short answer only, no explanation.";

// S as text. An empty system_message means kRagSystemMessage.
std::string rag_system_prefix(const ChatTemplate& chat, const std::string& system_message);

// Q as text: what follows the chunks in the user turn (the instruction and the question), the end of the turn and
// the assistant header. S + chunks + Q is exactly the template's rendering of one user message.
std::string rag_question_suffix(const ChatTemplate& chat, const std::string& system_message,
                                const std::string& question);

}  // namespace kvf
