package compact

// OWNER: deterministic-briefing helper. Stub with the agreed signature.

// Identifiers returns the identifiers found in text, verbatim and in order
// of first appearance: file paths, URLs, commands' programs, ids, codes,
// versions, numbers of note. The fidelity gate of internal/cascade and the
// quality report use it, so it must be deterministic.
func Identifiers(text string) []string {
	panic("not implemented")
}
