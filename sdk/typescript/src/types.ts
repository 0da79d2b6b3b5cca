// Types of briefd's wire formats, from docs/schema/*.v1.json.

/** The author of a message, as in the OpenAI chat-completions API. */
export type Role = "system" | "user" | "assistant" | "tool";

/** One element of a multi-part content (schema message.v1.json). */
export interface ContentPart {
  /** "text" or "image_url"; others are kept opaque. */
  type: string;
  text?: string;
  image_url?: { url: string; detail?: string };
}

/** One function call requested by an assistant message. */
export interface ToolCall {
  id: string;
  type: "function" | string;
  function: { name: string; arguments: string };
}

/**
 * One chat message in OpenAI form plus briefd's fields (message.v1.json).
 * Fields outside the schema are not published (a body holds exactly these).
 */
export interface Message {
  /** Stable, unique within the conversation; briefings name their boundary by it. */
  id: string;
  role: Role;
  /** A string, null (read as ""), or a list of parts. */
  content?: string | null | ContentPart[];
  name?: string;
  tool_calls?: ToolCall[];
  tool_call_id?: string;
  /** Keep out of compaction (system, user, or assistant without tool calls). */
  pinned?: boolean;
  metadata?: Record<string, string>;
}

/** A compaction's result as stored (briefing.v1.json). */
export interface Briefing {
  conversation_id: string;
  tenant?: string;
  /** Id of the first message kept verbatim. */
  boundary_id: string;
  /** Original messages covered, cumulative across chained compactions. */
  position: number;
  /** The briefing the agent reads, before escaping and wrapping. */
  text: string;
  structured?: Record<string, unknown>;
  tier: string;
  model?: string;
  prompt_version?: string;
  engine_version: string;
  input_hash: string;
  depth: number;
  compacted_ids: string[] | null;
  /** Messages before the boundary a snapshot's control pinned by id: splice keeps them with the pinned head. */
  pinned_ids?: string[];
  tokens_before: number;
  tokens_after: number;
  span_tokens: number;
  briefing_tokens: number;
  created_at: string;
  snapshot_seq?: number;
  snapshot_time?: string;
}

/** One entry of a snapshot's list: a message id and its body hash. */
export interface Entry {
  id: string;
  h: string;
}

/** A snapshot manifest (snapshot.v1.json). */
export interface Manifest {
  v: 1;
  tenant: string;
  conversation_id: string;
  seq: number;
  base: number;
  base_stream_seq?: number;
  keep: number;
  append: Entry[];
  model?: string;
  context_window?: number;
  created_at: string;
}

/** The expand tool's answer to a range (docs/schema/expand-answer.v1.json, $defs/range). */
export interface ExpandAnswer {
  conversation_id: string;
  from_id: string;
  to_id: string;
  messages: Message[];
  truncated: boolean;
  next_id?: string;
  expired_ids?: string[];
  note?: string;
}

/** The expand tool's answer to a query ($defs/search). */
export interface SearchAnswer {
  conversation_id: string;
  query: string;
  regexp: boolean;
  matches: { id: string; role: Role; snippet: string; count: number }[];
  searched: number;
  truncated: boolean;
  expired_ids?: string[];
  note?: string;
}

/** The expand tool's answer to a call it could not answer ($defs/error). */
export interface ErrorAnswer {
  error: string;
}
