// The prompt layout every stored KV and every query shares (DESIGN.md §6): [S][C_1]...[C_k][Q]. S is the chat
// template's opening up to where the user's content begins (system message included); chunks follow in the user
// turn; Q is the question and the rest of the template up to the assistant header.
#pragma once
#include <string>

#include "text/chat_template.h"

namespace kvf {

// S as text. An empty system_message keeps the template's own default system message (if it has one).
std::string rag_system_prefix(const ChatTemplate& chat, const std::string& system_message);

// Q as text: what follows the chunks in the user turn (the instruction and the question), the end of the turn and
// the assistant header. S + chunks + Q is exactly the template's rendering of one user message.
std::string rag_question_suffix(const ChatTemplate& chat, const std::string& system_message,
                                const std::string& question);

}  // namespace kvf
