// The conversation rules of briefd's root Go package (message.go,
// history.go): text, size, pinning and Validate, rule for rule.

import type { Message } from "./types.js";

/** Metadata keys and values briefd sets on the messages it creates. */
export const MetaKind = "briefd.kind";
export const MetaBoundary = "briefd.boundary";
export const MetaPosition = "briefd.position";
export const KindBriefing = "briefing";
/** Starts the id of every spliced briefing message. */
export const BriefingIDPrefix = "briefing:";

const utf8 = (s: string | undefined | null): number => (s ? Buffer.byteLength(s, "utf8") : 0);

/** isBriefing reports whether m is a briefing message made by splice. */
export function isBriefing(m: Message): boolean {
  return m.metadata?.[MetaKind] === KindBriefing;
}

/** isBriefingID reports whether id is the id of a spliced briefing message. */
export function isBriefingID(id: string): boolean {
  return id.startsWith(BriefingIDPrefix);
}

/** contentText returns the text of m's content: the string, or its text parts joined by newlines. */
export function contentText(m: Message): string {
  const c = m.content;
  if (!Array.isArray(c)) return c ?? "";
  return c
    .filter((p) => p.type === "text" && p.text)
    .map((p) => p.text as string)
    .join("\n");
}

/** messageSize is briefd's unit of size limits: UTF-8 bytes of content text, image URLs, tool call names and arguments. */
export function messageSize(m: Message): number {
  let n = 0;
  if (Array.isArray(m.content)) {
    for (const p of m.content) n += utf8(p.text) + utf8(p.image_url?.url);
  } else {
    n += utf8(m.content);
  }
  for (const tc of m.tool_calls ?? []) n += utf8(tc.function?.name) + utf8(tc.function?.arguments);
  return n;
}

/** Limits bound what validate accepts; a missing field takes its default. */
export interface Limits {
  maxMessages?: number;
  maxMessageBytes?: number;
  maxTotalBytes?: number;
  maxIDLength?: number;
}

export const DefaultMaxMessages = 100_000;
export const DefaultMaxMessageBytes = 16 << 20;
export const DefaultMaxTotalBytes = 256 << 20;
export const DefaultMaxIDLength = 256;

/** ValidationError says which message breaks which rule (Go: briefd.ValidationError). */
export class ValidationError extends Error {
  constructor(
    readonly messageID: string,
    readonly index: number,
    readonly reason: string,
  ) {
    super(index < 0 ? `invalid history: ${reason}` : `invalid history: message ${JSON.stringify(messageID)} (#${index}): ${reason}`);
    this.name = "ValidationError";
  }
}

const wellFormed = (s: string | undefined | null): boolean =>
  !s || !/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(s);

/**
 * validate checks the conversation rules briefd relies on, as Go's
 * briefd.Validate: known roles, unique non-empty ids, valid UTF-8, sizes
 * within the limits, every tool result answering a call of the assistant
 * message before it, and every call answered (unless in the last turn). It
 * throws the first violation as a ValidationError.
 */
export function validate(msgs: Message[], lim: Limits = {}): void {
  const maxMessages = lim.maxMessages || DefaultMaxMessages;
  const maxMessageBytes = lim.maxMessageBytes || DefaultMaxMessageBytes;
  const maxTotalBytes = lim.maxTotalBytes || DefaultMaxTotalBytes;
  const maxIDLength = lim.maxIDLength || DefaultMaxIDLength;
  if (msgs.length > maxMessages) {
    throw new ValidationError("", -1, `${msgs.length} messages, more than the limit of ${maxMessages}`);
  }
  const bad = (i: number, reason: string) => new ValidationError(msgs[i].id, i, reason);
  const seen = new Map<string, number>();
  const callSeen = new Set<string>();
  const pending = new Set<string>();
  let pendingFrom = -1;
  let total = 0;
  for (let i = 0; i < msgs.length; i++) {
    const m = msgs[i];
    if (!m.id) throw bad(i, "empty id");
    if (utf8(m.id) > maxIDLength) throw bad(i, `id is ${utf8(m.id)} bytes, more than the limit of ${maxIDLength}`);
    if (!wellFormed(m.id)) throw bad(i, "id is not valid UTF-8");
    const j = seen.get(m.id);
    if (j !== undefined) throw bad(i, `duplicate id (first at #${j})`);
    seen.set(m.id, i);
    if (Array.isArray(m.content)) {
      if (!m.content.every((p) => wellFormed(p.text))) throw bad(i, "content part is not valid UTF-8");
    } else if (!wellFormed(m.content)) {
      throw bad(i, "content is not valid UTF-8");
    }
    if (!wellFormed(m.name)) throw bad(i, "name is not valid UTF-8");
    const size = messageSize(m);
    if (size > maxMessageBytes) throw bad(i, `${size} bytes, more than the limit of ${maxMessageBytes}`);
    total += size;
    if (total > maxTotalBytes) throw bad(i, `history reaches ${total} bytes, more than the limit of ${maxTotalBytes}`);
    if (m.role !== "tool" && pending.size > 0) {
      throw bad(pendingFrom, `tool call ${JSON.stringify([...pending].sort()[0])} is never answered`);
    }
    const calls = m.tool_calls ?? [];
    switch (m.role) {
      case "system":
      case "user":
        if (calls.length > 0 || m.tool_call_id) throw bad(i, `a ${m.role} message cannot carry tool calls or a tool_call_id`);
        break;
      case "assistant":
        if (m.tool_call_id) throw bad(i, "an assistant message cannot carry a tool_call_id");
        if (m.pinned && calls.length > 0) throw bad(i, "an assistant message with tool calls cannot be pinned");
        for (const tc of calls) {
          if (!tc.id) throw bad(i, "tool call with empty id");
          if (callSeen.has(tc.id)) throw bad(i, `tool call id ${JSON.stringify(tc.id)} used twice`);
          if (!wellFormed(tc.function?.name) || !wellFormed(tc.function?.arguments)) {
            throw bad(i, `tool call ${JSON.stringify(tc.id)} is not valid UTF-8`);
          }
          callSeen.add(tc.id);
          pending.add(tc.id);
        }
        if (calls.length > 0) pendingFrom = i;
        break;
      case "tool":
        if (m.pinned) throw bad(i, "a tool message cannot be pinned");
        if (!m.tool_call_id) throw bad(i, "tool message without tool_call_id");
        if (!pending.has(m.tool_call_id)) {
          if (callSeen.has(m.tool_call_id)) {
            throw bad(i, `tool result for call ${JSON.stringify(m.tool_call_id)}, which is already answered or not from the assistant message just before`);
          }
          throw bad(i, `tool result for call ${JSON.stringify(m.tool_call_id)}, which no assistant message makes`);
        }
        pending.delete(m.tool_call_id);
        break;
      default:
        throw bad(i, `unknown role ${JSON.stringify(m.role)}`);
    }
  }
}
