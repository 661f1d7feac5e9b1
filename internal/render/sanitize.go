package render

import "github.com/ecoPrimals/primalscope/internal/textsafe"

// Sanitize makes peer text safe to put on one line of a terminal: every
// character textsafe.Classify does not call Safe, and every byte of invalid
// UTF-8, becomes a visible escape (\x1b, \u202e, ...). It is
// textsafe.Sanitize, kept here for render's callers.
func Sanitize(s string) string { return textsafe.Sanitize(s) }

// SanitizeMultiline is Sanitize for multi-line text: newlines and tabs are
// kept (textsafe.SanitizeMultiline).
func SanitizeMultiline(s string) string { return textsafe.SanitizeMultiline(s) }

// AppendSanitized appends the sanitized form of s to dst (see Sanitize and
// SanitizeMultiline) and returns the extended buffer
// (textsafe.AppendSanitized).
func AppendSanitized(dst []byte, s []byte, multiline bool) []byte {
	return textsafe.AppendSanitized(dst, s, multiline)
}
