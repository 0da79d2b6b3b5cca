// Expand and search the originals, and the expand_history tool, as Go's
// client/expand.go and client/tool.go: the same bounds, clipping,
// snippets and answers (docs/protocol.md, "Reading the originals").

import vm from "node:vm";
import { encodeMessage, goString } from "./json.js";
import { contentText, messageSize } from "./message.js";
import type { Message, Role } from "./types.js";

export const DefaultExpandMaxMessages = 50;
export const DefaultExpandMaxBytes = 32 << 10;
export const DefaultSearchMaxMatches = 20;
/** The longest search query or pattern, in UTF-8 bytes. */
export const MaxQueryLength = 1024;
/** How long one regular-expression search may run (JavaScript's engine backtracks). */
export const RegexpTimeoutMs = 2000;
const snippetContext = 80;
const snippetMatch = 120;

/** Bounds of the answers of expand, search and the tool; a missing field takes its default. */
export interface ExpandLimits {
  /** Most messages one expand returns (50). */
  maxMessages?: number;
  /** Bytes of message text (messageSize) per expand, of snippets per search (32 KiB). */
  maxBytes?: number;
  /** Most messages one search returns (20). */
  maxMatches?: number;
}

export function expandLimits(l: ExpandLimits = {}): Required<ExpandLimits> {
  return {
    maxMessages: l.maxMessages && l.maxMessages > 0 ? l.maxMessages : DefaultExpandMaxMessages,
    maxBytes: l.maxBytes && l.maxBytes > 0 ? l.maxBytes : DefaultExpandMaxBytes,
    maxMatches: l.maxMatches && l.maxMatches > 0 ? l.maxMatches : DefaultSearchMaxMatches,
  };
}

/** An id in no snapshot of the conversation still in the stream (expired, or never published). */
export class UnknownMessageError extends Error {
  constructor(
    conv: string,
    readonly id: string,
    readonly maxAgeMs: number,
  ) {
    super(`briefd: expand ${conv}: ${JSON.stringify(id)}: message not in the conversation's stored snapshots (snapshots are kept ${formatAge(maxAgeMs)})`);
    this.name = "UnknownMessageError";
  }

  /** The error as the expand tool's answer says it (Go's words). */
  toolText(): string {
    return `message ${JSON.stringify(this.id)} is not in this conversation's stored snapshots (kept ${formatAge(this.maxAgeMs)}): it expired, or was never published`;
  }
}

/** An empty, oversized or unparsable query. */
export class InvalidQueryError extends Error {
  constructor(
    conv: string,
    readonly reason: string,
  ) {
    super(`briefd: search ${conv}: invalid search query: ${reason}`);
    this.name = "InvalidQueryError";
  }

  /** The error as the expand tool's answer says it. */
  toolText(): string {
    return `invalid search query: ${this.reason}`;
  }
}

/** Nothing in the conversation has been compacted yet (search without `all`). */
export class NoBriefingError extends Error {
  constructor(conv: string) {
    super(`briefd: latest ${conv}: no briefing`);
    this.name = "NoBriefingError";
  }
}

/** Messages of an answer whose bodies expired from the body stream; expand throws it with what could be read. */
export class ExpiredError extends Error {
  constructor(
    readonly conversationId: string,
    readonly ids: string[],
    readonly maxAgeMs: number,
    readonly expansion: Expansion,
  ) {
    super(`briefd: ${conversationId}: ${describeIDs(ids)} expired from the body stream (bodies are kept ${formatAge(maxAgeMs)})`);
    this.name = "ExpiredError";
  }
}

export function describeIDs(ids: string[]): string {
  if (ids.length === 0) return "no message";
  if (ids.length === 1) return `message ${ids[0]}`;
  return `${ids.length} messages from ${ids[0]} to ${ids[ids.length - 1]}`;
}

function formatAge(ms: number): string {
  if (ms <= 0) return "forever";
  const h = Math.floor(ms / 3_600_000);
  const m = Math.floor((ms % 3_600_000) / 60_000);
  const s = (ms % 60_000) / 1000;
  return `${h > 0 ? `${h}h` : ""}${h > 0 || m > 0 ? `${m}m` : ""}${s}s`;
}

/** The answer of expand: originals, verbatim, within the limits. */
export interface Expansion {
  conversationId: string;
  fromId: string;
  toId: string;
  messages: Message[];
  /** A limit cut the answer: nextId is the first message left out, or "" when a message was clipped. */
  truncated: boolean;
  nextId: string;
  /** Messages whose bodies are gone. */
  expired: string[];
}

/** One matching message of a search. */
export interface SearchMatch {
  id: string;
  role: Role;
  /** Text around the first match, "…" marking a cut. */
  snippet: string;
  /** Matches in the message (at most 100). */
  count: number;
}

/** The answer of search. */
export interface SearchResult {
  conversationId: string;
  query: string;
  regexp: boolean;
  matches: SearchMatch[];
  truncated: boolean;
  searched: number;
  expired: string[];
}

/** searchText is what search matches in a message: its text, then each tool call as "name(arguments)" on its own line. */
export function searchText(m: Message): string {
  let text = contentText(m);
  for (const tc of m.tool_calls ?? []) text += `\n${tc.function?.name ?? ""}(${tc.function?.arguments ?? ""})`;
  return text;
}

// Code-point walks over UTF-16 strings.
function back(s: string, i: number, n: number): number {
  for (let k = 0; k < n && i > 0; k++) {
    i--;
    if (i > 0 && isLow(s.charCodeAt(i)) && isHigh(s.charCodeAt(i - 1))) i--;
  }
  return i;
}
function fwd(s: string, i: number, n: number, end = s.length): number {
  for (let k = 0; k < n && i < end; k++) {
    i += isHigh(s.charCodeAt(i)) && i + 1 < s.length && isLow(s.charCodeAt(i + 1)) ? 2 : 1;
  }
  return i;
}
const isHigh = (c: number) => c >= 0xd800 && c <= 0xdbff;
const isLow = (c: number) => c >= 0xdc00 && c <= 0xdfff;

/** snippet returns the text around s[start:end] as Go's client does. */
export function snippet(s: string, start: number, end: number): string {
  const from = back(s, start, snippetContext);
  let to = fwd(s, start, snippetMatch, end);
  const cutMatch = to < end;
  let out = from > 0 ? "…" : "";
  if (cutMatch) return out + s.slice(from, to) + "…";
  to = fwd(s, to, snippetContext);
  out += s.slice(from, to);
  if (to < s.length) out += "…";
  return out;
}

const utf8 = (s: string) => Buffer.byteLength(s, "utf8");

/** clipUTF8 returns the longest prefix of s of at most n UTF-8 bytes ending on a character boundary. */
export function clipUTF8(s: string, n: number): string {
  if (n <= 0) return "";
  const b = Buffer.from(s, "utf8");
  if (b.length <= n) return s;
  while (n > 0 && (b[n] & 0xc0) === 0x80) n--;
  return b.subarray(0, n).toString("utf8");
}

/** clipMessage cuts m's text to about max bytes, as Go's clipMessage (returns a copy). */
export function clipMessage(m: Message, max: number): Message {
  const out: Message = { ...m, tool_calls: m.tool_calls?.map((tc) => ({ ...tc, function: { ...tc.function } })) };
  let budget = max;
  for (const tc of out.tool_calls ?? []) budget -= utf8(tc.function.name ?? "");
  const clip = (s: string): string => {
    const n = utf8(s);
    if (n <= budget) {
      budget -= n;
      return s;
    }
    const cut = clipUTF8(s, budget);
    budget = 0;
    return cut + `\n[… clipped by briefd: ${n - utf8(cut)} more bytes]`;
  };
  const text = contentText(m);
  if (utf8(text) > budget || Array.isArray(m.content)) out.content = clip(text);
  else budget -= utf8(text);
  for (const tc of out.tool_calls ?? []) tc.function.arguments = clip(tc.function.arguments ?? "");
  if (out.tool_calls === undefined) delete out.tool_calls;
  return out;
}

/** A compiled query: finds the matches of each text, within a time bound for regular expressions. */
export interface Matcher {
  /** For each text, the [start, end] of its first match and the number of matches (0 if none). */
  run(texts: string[]): { first: [number, number]; count: number }[];
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
}

// The matching loop, run inside a vm context so that a pattern that
// backtracks forever is interrupted by the timeout.
const matchLoop = `
(() => {
  const out = [];
  for (const t of texts) {
    re.lastIndex = 0;
    let first = null, count = 0, m;
    while (count < 100 && (m = re.exec(t)) !== null) {
      if (first === null) first = [m.index, m.index + m[0].length];
      count++;
      if (m[0].length === 0) re.lastIndex++;
    }
    out.push({ first: first || [0, 0], count });
  }
  return out;
})()`;

/** What a briefing shows where it cut a text, and its marks of a line break and a tab in quoted code. */
const cutMark = "…";
const briefingMarks = /[…⏎⇥]/u;

/**
 * quoteParts reads a literal query that holds a briefing's marks as the briefing writes a quote, as the Go
 * client does: "…" (where it cut the text) stands for any text, a " (N hex digits)" after a value told by
 * its ends is dropped ("A76EDD72…DCFAC323 (256 hex digits)"), and "⏎", "⇥" and every run of spaces stand for
 * any run of whitespace. It returns a pattern per part between the cuts, each matched in turn, or null for a
 * query without the marks (a plain substring).
 */
function quoteParts(query: string): RegExp[] | null {
  if (!briefingMarks.test(query)) return null;
  const parts = query
    .replace(/\s*\(\d+ hex digits\)/g, "")
    .split(cutMark)
    .map((p) => p.split(/[\t\n\f\r ⏎⇥]+/u).filter((w) => w !== "")) // Go's quoteSpace
    .filter((words) => words.length > 0)
    .map((words) => new RegExp(words.map(escapeRegExp).join("[\\t\\n\\f\\r ]+"), "giu")); // Go's \s
  if (parts.length === 0) throw new Error("query has no text besides the briefing's marks (…⏎⇥)");
  return parts;
}

/**
 * quoteMatcher finds the parts of a briefing quote one after another: the first part's first match, the
 * next part's first match after it, and so on, which is the leftmost and shortest match of Go's
 * "part.*?part"; each part is literal text and whitespace runs, so no match backtracks (a single
 * expression with "[\s\S]*?" between the parts does, for seconds on a long message).
 */
function quoteMatcher(parts: RegExp[]): Matcher {
  const find = (t: string, from: number): [number, number] | null => {
    let start = -1;
    let pos = from;
    for (const re of parts) {
      re.lastIndex = pos;
      const m = re.exec(t);
      if (m === null) return null;
      if (start < 0) start = m.index;
      pos = m.index + m[0].length;
    }
    return [start, pos];
  };
  return {
    run(texts: string[]) {
      return texts.map((t) => {
        let first: [number, number] = [0, 0];
        let count = 0;
        for (let from = 0, m = find(t, from); m !== null && count < 100; m = find(t, from)) {
          if (count === 0) first = m;
          count++;
          from = Math.max(m[1], m[0] + 1);
        }
        return { first, count };
      });
    },
  };
}

/** compileQuery returns the matcher of a query: a case-insensitive literal, or a JavaScript regular expression. */
export function compileQuery(conv: string, query: string, isRegexp: boolean): Matcher {
  if (!query) throw new InvalidQueryError(conv, "empty query");
  if (utf8(query) > MaxQueryLength) throw new InvalidQueryError(conv, `query is ${utf8(query)} bytes, more than the limit of ${MaxQueryLength}`);
  let re: RegExp;
  try {
    const parts = isRegexp ? null : quoteParts(query);
    if (parts !== null) return quoteMatcher(parts);
    re = isRegexp ? new RegExp(query, "gu") : new RegExp(escapeRegExp(query), "giu");
  } catch (err) {
    throw new InvalidQueryError(conv, (err as Error).message);
  }
  const script = new vm.Script(matchLoop);
  return {
    run(texts: string[]) {
      const ctx = vm.createContext({ re, texts });
      try {
        const out = script.runInContext(ctx, { timeout: RegexpTimeoutMs }) as { first: [number, number]; count: number }[];
        // Objects of this context, not the vm's.
        return Array.from(out, (x) => ({ first: [x.first[0], x.first[1]] as [number, number], count: x.count }));
      } catch (err) {
        throw new InvalidQueryError(conv, `the pattern ran longer than ${RegexpTimeoutMs} ms: ${(err as Error).message}`);
      }
    },
  };
}

/** The expand tool's name, as Go's briefd.ExpandToolName. */
export const ExpandToolName = "expand_history";

/** The expand tool's definition in OpenAI's form, identical to Go's client.ExpandTool(). */
export const expandTool = {
  type: "function",
  function: {
    name: ExpandToolName,
    description:
      "Read messages of this conversation that were compacted into the <compacted-history> briefing, verbatim. " +
      "Give from_id and to_id (the ids the briefing names, e.g. in its last line) to read a range, or query to search the compacted messages; " +
      "answers are bounded: when truncated, call again from next_id.",
    parameters: {
      type: "object",
      properties: {
        from_id: { type: "string", description: "Id of the first message to read." },
        to_id: { type: "string", description: "Id of the last message to read (inclusive); default from_id." },
        query: { type: "string", description: "Text to search for in the compacted messages (case-insensitive; … stands for any text, as where the briefing cut one), instead of a range." },
        regexp: { type: "boolean", description: "Treat query as a regular expression." },
      },
      additionalProperties: false,
    },
  },
} as const;

/** The arguments of the expand tool. */
export interface ExpandToolArgs {
  from_id?: string;
  to_id?: string;
  query?: string;
  regexp?: boolean;
}

// Tool answers: compact JSON without HTML escaping, fields in Go's order.
const s = (v: string) => goString(v, false);
const list = (ids: string[]) => "[" + ids.map(s).join(",") + "]";

export function toolError(msg: string): string {
  return `{"error":${s(msg)}}`;
}

export function expandAnswer(conv: string, ex: Expansion, note: string): string {
  let out = `{"conversation_id":${s(conv)},"from_id":${s(ex.fromId)},"to_id":${s(ex.toId)},"messages":[${ex.messages.map((m) => encodeMessage(m, false)).join(",")}],"truncated":${ex.truncated}`;
  if (ex.nextId) out += `,"next_id":${s(ex.nextId)}`;
  if (ex.expired.length > 0) out += `,"expired_ids":${list(ex.expired)}`;
  if (note) out += `,"note":${s(note)}`;
  return out + "}";
}

export function searchAnswer(conv: string, r: SearchResult, note: string): string {
  const matches = r.matches.map((m) => `{"id":${s(m.id)},"role":${s(m.role)},"snippet":${s(m.snippet)},"count":${m.count}}`);
  let out = `{"conversation_id":${s(conv)},"query":${s(r.query)},"regexp":${r.regexp},"matches":[${matches.join(",")}],"searched":${r.searched},"truncated":${r.truncated}`;
  if (r.expired.length > 0) out += `,"expired_ids":${list(r.expired)}`;
  if (note) out += `,"note":${s(note)}`;
  return out + "}";
}

/** The notes of a tool answer, as Go's HandleExpandTool writes them. */
export function expandNote(ex: Expansion): string {
  const notes: string[] = [];
  if (ex.nextId) notes.push(`answer cut at ${ex.messages.length} messages; call again with from_id ${ex.nextId} to read on`);
  else if (ex.truncated) notes.push("a message was clipped to fit the answer");
  if (ex.expired.length > 0) notes.push(`${describeIDs(ex.expired)} expired and cannot be read; the briefing is what remains of them`);
  return notes.join("; ");
}

export function searchNote(r: SearchResult): string {
  const notes: string[] = [];
  if (r.truncated) notes.push(`more messages match than the ${r.matches.length} shown; narrow the query`);
  if (r.expired.length > 0) notes.push(`${describeIDs(r.expired)} expired and could not be searched`);
  if (r.matches.length > 0) notes.push("read a match in full with from_id");
  return notes.join("; ");
}

/** parseToolArgs reads a call's JSON arguments strictly (unknown fields refused), as Go's decoder does. */
export function parseToolArgs(args: string): ExpandToolArgs | string {
  let v: unknown;
  try {
    v = JSON.parse(args);
  } catch (err) {
    return `arguments are not the ${ExpandToolName} tool's: ${(err as Error).message}`;
  }
  if (typeof v !== "object" || v === null || Array.isArray(v)) return `arguments are not the ${ExpandToolName} tool's: not a JSON object`;
  const known: Record<string, string> = { from_id: "string", to_id: "string", query: "string", regexp: "boolean" };
  for (const [k, val] of Object.entries(v)) {
    if (!(k in known)) return `arguments are not the ${ExpandToolName} tool's: unknown field ${JSON.stringify(k)}`;
    if (val !== null && typeof val !== known[k]) return `arguments are not the ${ExpandToolName} tool's: ${k} must be a ${known[k]}`;
  }
  return v as ExpandToolArgs;
}
