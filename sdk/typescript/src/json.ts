// JSON exactly as Go's encoding/json writes it, so that a body published
// from TypeScript has the bytes, and so the hash, the Go publisher gives
// the same message: bodies are content-addressed, and one message is one
// body whichever SDK sent it.

import type { ContentPart, Message, ToolCall } from "./types.js";

const htmlEscapes: Record<string, string> = {
  "<": "\\u003c",
  ">": "\\u003e",
  "&": "\\u0026",
  "\u2028": "\\u2028",
  "\u2029": "\\u2029",
};

/**
 * goString encodes s as Go's json.Marshal does: JSON.stringify's escapes
 * (which match Go's for quotes, backslashes and control characters), plus
 * <, >, & (when escapeHTML) and U+2028, U+2029 (always) as \u escapes. A
 * lone surrogate, which has no UTF-8 form, becomes U+FFFD as Go writes an
 * invalid byte.
 */
export function goString(s: string, escapeHTML = true): string {
  const out = JSON.stringify(toWellFormed(s));
  const re = escapeHTML ? /[<>&\u2028\u2029]/g : /[\u2028\u2029]/g;
  return out.replace(re, (c) => htmlEscapes[c]);
}

function toWellFormed(s: string): string {
  return s.replace(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, "\uFFFD");
}

/** Go sorts map keys by their UTF-8 bytes. */
function byteOrder(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, "utf8"), Buffer.from(b, "utf8"));
}

function encodePart(p: ContentPart, h: boolean): string {
  let s = `{"type":${goString(p.type ?? "", h)}`;
  if (p.text) s += `,"text":${goString(p.text, h)}`;
  if (p.image_url) {
    s += `,"image_url":{"url":${goString(p.image_url.url ?? "", h)}`;
    if (p.image_url.detail) s += `,"detail":${goString(p.image_url.detail, h)}`;
    s += "}";
  }
  return s + "}";
}

function encodeToolCall(tc: ToolCall, h: boolean): string {
  return (
    `{"id":${goString(tc.id ?? "", h)},"type":${goString(tc.type ?? "", h)},` +
    `"function":{"name":${goString(tc.function?.name ?? "", h)},"arguments":${goString(tc.function?.arguments ?? "", h)}}}`
  );
}

/** encodeContent writes a message's content as briefd.Content does. */
export function encodeContent(content: Message["content"], escapeHTML = true): string {
  if (Array.isArray(content)) return "[" + content.map((p) => encodePart(p, escapeHTML)).join(",") + "]";
  return goString(content ?? "", escapeHTML);
}

/**
 * encodeMessage returns the JSON of m exactly as Go's json.Marshal of a
 * briefd.Message: fields in the struct's order, empty optional fields
 * left out, metadata keys sorted. With escapeHTML false it is what Go's
 * encoder writes with SetEscapeHTML(false) (the expand tool's answers).
 */
export function encodeMessage(m: Message, escapeHTML = true): string {
  const h = escapeHTML;
  let s = `{"id":${goString(m.id ?? "", h)},"role":${goString(m.role ?? "", h)},"content":${encodeContent(m.content, h)}`;
  if (m.name) s += `,"name":${goString(m.name, h)}`;
  if (m.tool_calls && m.tool_calls.length > 0) s += `,"tool_calls":[${m.tool_calls.map((tc) => encodeToolCall(tc, h)).join(",")}]`;
  if (m.tool_call_id) s += `,"tool_call_id":${goString(m.tool_call_id, h)}`;
  if (m.pinned) s += `,"pinned":true`;
  const keys = m.metadata ? Object.keys(m.metadata) : [];
  if (keys.length > 0) {
    keys.sort(byteOrder);
    s += `,"metadata":{${keys.map((k) => `${goString(k, h)}:${goString(m.metadata![k] ?? "", h)}`).join(",")}}`;
  }
  return s + "}";
}

/**
 * normalizeMessage returns m as a Go reader sees it: content null or
 * missing becomes "", and fields outside the schema are dropped.
 */
export function normalizeMessage(m: Message): Message {
  return JSON.parse(encodeMessage(m)) as Message;
}
