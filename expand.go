package briefd

import "strings"

// ExpandToolName is the name of the tool an agent calls to read compacted
// messages verbatim. The client packages of every SDK define it under this
// name, and the briefing's footer (see [ExpandFooter]) refers to it.
const ExpandToolName = "expand_history"

// BriefingIDPrefix starts the id of every briefing message [Splice] creates
// ("briefing:" + the boundary id). Readers of the stream's originals skip
// such messages: they are briefd's, not the conversation's.
const BriefingIDPrefix = "briefing:"

// IsBriefingID reports whether id is the id of a spliced briefing message.
func IsBriefingID(id string) bool { return strings.HasPrefix(id, BriefingIDPrefix) }

// ExpandFooter returns the last line of a briefing: the ids of the first and
// last message it compacted and how to read them again. It is one line, so
// it survives any later clipping of the briefing's body, and it names the
// tool exactly as [ExpandToolName] does.
func ExpandFooter(first, last string) string {
	if first == last {
		return "Compacted message " + first + " verbatim: the " + ExpandToolName + " tool (from_id)."
	}
	return "Compacted messages " + first + " to " + last + " verbatim: the " + ExpandToolName + " tool (from_id, to_id, or a query)."
}
