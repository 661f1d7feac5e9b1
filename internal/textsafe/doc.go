// Package textsafe is the one sanitizer for peer text: it decides which
// characters may reach a terminal as they are (Classify) and writes every
// other one as a visible escape (Sanitize, SanitizeMultiline,
// AppendSanitized). C0 and C1 controls, DEL, invalid UTF-8, bidirectional
// controls, line separators and invisible characters are all escaped, so
// a peer can neither drive the terminal nor make text read as something
// it is not.
//
// It imports nothing of primalscope, so every layer can use it: ipc for
// the peer text it repeats in errors, render for the JSON it prints (its
// lower-level pieces, SafeByte, AlwaysSafe, LastRune, AppendEscape and
// HexDigits, are what render's printers are built on). To bound the size
// of the text, use human.Clip or human.Truncate after it.
package textsafe
