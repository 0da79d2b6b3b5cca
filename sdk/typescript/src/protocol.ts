// Protocol constants and checks of docs/protocol.md, version 1 (Go:
// internal/queue/protocol.go).

import { createHash } from "node:crypto";
import type { Entry, Manifest } from "./types.js";

export const Version = 1;
export const HeaderVersion = "Briefd-Version";
export const HeaderContentType = "Content-Type";
export const HeaderContentEncoding = "Content-Encoding";
export const HeaderChunks = "Briefd-Chunks";
export const HeaderSize = "Briefd-Size";
export const HeaderMsgID = "Nats-Msg-Id";
export const ContentTypeJSON = "application/json";
export const EncodingZstd = "zstd";
export const DefaultPrefix = "briefd";
export const MaxTokenLen = 128;
export const HashLen = 22;
/** The largest canonical body (16 MiB); larger ones are refused before anything is sent. */
export const MaxBodyBytes = 16 << 20;

/** A tenant or conversation id that is not 1-128 characters of [A-Za-z0-9_-]. */
export class InvalidIDError extends Error {
  constructor(what: string, id: string) {
    super(`briefd: ${what} ${JSON.stringify(id)}: id must be 1-128 characters of [A-Za-z0-9_-]`);
    this.name = "InvalidIDError";
  }
}

/** validToken reports whether s can be a tenant or conversation id (one NATS subject token). */
export function validToken(s: string): boolean {
  return typeof s === "string" && s.length > 0 && s.length <= MaxTokenLen && /^[A-Za-z0-9_-]+$/.test(s);
}

/** bodyHash is a body's content address: base64url (no padding) of the first 16 bytes of its SHA-256. */
export function bodyHash(body: Uint8Array | string): string {
  return createHash("sha256").update(body).digest().subarray(0, 16).toString("base64url");
}

export function validHash(h: string): boolean {
  return typeof h === "string" && h.length === HashLen && /^[A-Za-z0-9_-]+$/.test(h) && Buffer.from(h, "base64url").length === 16;
}

/** The subjects of one prefix. */
export class Subjects {
  constructor(readonly prefix: string = DefaultPrefix) {}
  body(tenant: string, conv: string, hash: string): string {
    return `${this.prefix}.body.${tenant}.${conv}.${hash}`;
  }
  chunk(tenant: string, conv: string, hash: string, n: number): string {
    return `${this.body(tenant, conv, hash)}.${n}`;
  }
  snapshot(tenant: string, conv: string): string {
    return `${this.prefix}.snap.${tenant}.${conv}`;
  }
}

/** streamBase is the upper-cased prefix every stream name starts with: briefd gives BRIEFD. */
export function streamBase(prefix: string): string {
  return (prefix || DefaultPrefix).replace(/[.-]/g, "_").toUpperCase();
}

export function streamNames(prefix: string): { bodies: string; snapshots: string } {
  const base = streamBase(prefix);
  return { bodies: `${base}_BODIES`, snapshots: `${base}_SNAPSHOTS` };
}

/** kvBucket is the workers' key-value bucket of a prefix: briefd_briefings for the default. */
export function kvBucket(prefix: string): string {
  return (prefix || DefaultPrefix).replace(/\./g, "_") + "_briefings";
}

/** A manifest that breaks the protocol. */
export class MalformedError extends Error {
  constructor(reason: string) {
    super(`malformed snapshot: ${reason}`);
    this.name = "MalformedError";
  }
}

/** decodeManifest parses and checks a manifest as the workers do (Go: queue.DecodeManifest). */
export function decodeManifest(data: Uint8Array): Manifest {
  let m: Manifest;
  try {
    m = JSON.parse(Buffer.from(data).toString("utf8")) as Manifest;
  } catch (err) {
    throw new MalformedError(`manifest is not valid JSON: ${(err as Error).message}`);
  }
  const int = (v: unknown) => v === undefined || (Number.isSafeInteger(v) && (v as number) >= 0);
  if (typeof m !== "object" || m === null) throw new MalformedError("manifest is not an object");
  if (m.v !== Version) throw new MalformedError(`manifest version ${m.v}, this reader speaks ${Version}`);
  if (!validToken(m.tenant)) throw new MalformedError(`manifest tenant ${JSON.stringify(m.tenant)} is not a valid token`);
  if (!validToken(m.conversation_id)) throw new MalformedError(`manifest conversation_id ${JSON.stringify(m.conversation_id)} is not a valid token`);
  if (!int(m.seq) || !m.seq) throw new MalformedError("manifest seq must be > 0");
  m.base ??= 0;
  m.keep ??= 0;
  if (!int(m.base) || !int(m.keep) || !int(m.base_stream_seq)) throw new MalformedError("manifest base, keep and base_stream_seq must be integers >= 0");
  if (m.base >= m.seq) throw new MalformedError(`manifest base ${m.base} is not before seq ${m.seq}`);
  if (m.base === 0 && m.keep !== 0) throw new MalformedError(`full manifest (base 0) with keep ${m.keep}`);
  if (m.base !== 0 && !m.base_stream_seq) throw new MalformedError(`manifest base ${m.base} without base_stream_seq`);
  m.append ??= [];
  if (!Array.isArray(m.append)) throw new MalformedError("manifest append is not a list");
  m.append.forEach((e: Entry, i: number) => {
    if (!e || !e.id) throw new MalformedError(`manifest append[${i}] has an empty id`);
    if (!validHash(e.h)) throw new MalformedError(`manifest append[${i}] (${JSON.stringify(e.id)}) has an invalid hash ${JSON.stringify(e.h)}`);
  });
  return m;
}
