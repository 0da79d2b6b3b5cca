// The publishing side of docs/protocol.md, as Go's internal/queue
// Publisher: content-addressed bodies sent once per conversation, delta
// manifests on the newest snapshot known stored, chunks for bodies over the
// server's limits, Nats-Msg-Id de-duplication, re-sends of what failed.
//
// Bodies are sent uncompressed (Content-Encoding is optional on the wire;
// the workers read both), in exactly the bytes Go's json.Marshal gives the
// same message (see json.ts), so a message has one hash whichever SDK
// published it.

import { Empty, headers, type JetStreamClient, type JetStreamManager, type MsgHdrs, type NatsConnection, type PubAck } from "nats";
import { encodeMessage, goString } from "./json.js";
import {
  bodyHash,
  ContentTypeJSON,
  DefaultPrefix,
  HeaderChunks,
  HeaderContentType,
  HeaderMsgID,
  HeaderSize,
  HeaderVersion,
  InvalidIDError,
  MaxBodyBytes,
  streamNames,
  Subjects,
  validToken,
} from "./protocol.js";
import type { Entry, Message } from "./types.js";

/** A body larger than the 16 MiB limit; nothing was published. */
export class BodyTooLargeError extends Error {
  constructor(id: string, size: number, limit: number) {
    super(`briefd: message ${JSON.stringify(id)} is ${size} bytes, limit ${limit}: message body too large`);
    this.name = "BodyTooLargeError";
  }
}

/** The server's payload limit leaves too little room for a body chunk; nothing was published. */
export class MaxPayloadTooSmallError extends Error {
  constructor(msg: string) {
    super(msg);
    this.name = "MaxPayloadTooSmallError";
  }
}

/** A snapshot's manifest was not stored and not re-sent because a newer snapshot of the conversation was published. */
export class SupersededError extends Error {
  constructor(msg: string) {
    super(msg);
    this.name = "SupersededError";
  }
}

/** The smallest chunk a body is split into. */
export const MinChunkBytes = 256;
// Room kept free in every body message beside its exact header size.
const headerSlack = 64;
// How long a publish waits for a read of the stream limits, at most.
const syncLimitsTimeoutMs = 2000;

export type LogFn = (level: "debug" | "warn", msg: string, fields?: Record<string, unknown>) => void;

/** Options of a Publisher; every field has the Go publisher's default. */
export interface PublisherOptions {
  /** Subject prefix; must match the workers'. Default "briefd". */
  prefix?: string;
  /** Fewest deltas between full manifests (64); always a full one after 8x. */
  fullEvery?: number;
  /** Conversations remembered (LRU, 4096); a forgotten one starts with a full manifest. */
  conversations?: number;
  /** Bound on the wait for one publish attempt's acks (30 s). */
  ackTimeoutMs?: number;
  /** Re-sends of a failed body or manifest (3); negative: none. */
  publishRetries?: number;
  /** Wait before the first re-send, doubling up to 8x (250 ms). */
  publishRetryWaitMs?: number;
  /** How often the streams' MaxAge and message size are re-read (60 s). */
  limitsRefreshMs?: number;
  /** Receives the publisher's logs; default none. */
  log?: LogFn;
}

/**
 * A snapshot's control (docs/protocol.md, "Control"): when and what the
 * workers compact for this conversation. Every field is optional.
 */
export interface Control {
  /** "auto" (the default), "now" (compact this snapshot, as a user's /compact) or "never". */
  mode?: "auto" | "now" | "never";
  /** Compact once the history is over this fraction of the context window, in (0, 1]. */
  triggerFraction?: number;
  /** The kept tail's budget in tokens; it must stay below the trigger. */
  keepTokens?: number;
  /** Ids of messages never compacted (system, user and plain assistant messages). */
  pin?: string[];
  /** What the briefing must keep above all, in words. */
  focus?: string;
}

/** Optional manifest fields of a snapshot. */
export interface PublishOptions {
  /** The agent's model: token encoding and context hints for the worker. */
  model?: string;
  /** The agent's context window in tokens. */
  contextWindow?: number;
  /** When and what to compact (validated before anything is sent). */
  control?: Control;
}

/**
 * encodeControl checks a control and encodes it as Go's briefd.Control
 * marshals it (empty fields left out); "" for a control that asks for
 * nothing.
 */
export function encodeControl(c: Control | undefined): string {
  if (!c) return "";
  const parts: string[] = [];
  if (c.mode !== undefined && c.mode !== "auto") {
    if (c.mode !== "now" && c.mode !== "never") throw new RangeError(`briefd: control mode ${JSON.stringify(c.mode)} (want auto, now or never)`);
    parts.push(`"mode":"${c.mode}"`);
  }
  if (c.triggerFraction !== undefined && c.triggerFraction !== 0) {
    if (!(c.triggerFraction > 0 && c.triggerFraction <= 1)) throw new RangeError(`briefd: control triggerFraction ${c.triggerFraction} (want a fraction in (0, 1])`);
    parts.push(`"trigger_fraction":${c.triggerFraction}`);
  }
  if (c.keepTokens !== undefined && c.keepTokens !== 0) {
    if (!Number.isInteger(c.keepTokens) || c.keepTokens < 0) throw new RangeError(`briefd: control keepTokens ${c.keepTokens} (want a positive integer)`);
    parts.push(`"keep_tokens":${c.keepTokens}`);
  }
  if (c.pin && c.pin.length > 0) parts.push(`"pin":[${c.pin.map((id) => goString(id)).join(",")}]`);
  if (c.focus) parts.push(`"focus":${goString(c.focus)}`);
  return parts.length ? `{${parts.join(",")}}` : "";
}

/** What one published snapshot was. */
export interface PublishResult {
  /** The snapshot's number in its conversation. */
  seq: number;
  /** Its sequence in the snapshot stream; 0 until acked. */
  streamSeq: number;
  /** Nothing changed since the last snapshot (nothing was sent), or the server de-duplicated it. */
  duplicate: boolean;
  /** A full manifest (base 0). */
  full: boolean;
  /** Bodies sent, their payload bytes, and how many of them were re-sends of earlier failures. */
  bodies: number;
  bodyBytes: number;
  resent: number;
}

/** The stream settings a publisher follows, read from the server. */
export interface Limits {
  /** The shorter MaxAge of the body and snapshot streams, in ms; 0 = forever. */
  maxAgeMs: number;
  /** The body stream's maximum message size; 0 = the server's max_payload only. */
  bodyMaxMsgSize: number;
  /** When they were read (ms since the epoch); 0 before the first read. */
  readAt: number;
}

interface PubEntry extends Entry {
  json: string; // the body bytes as a string, to find unchanged messages
}

class SentBody {
  futures: Promise<PubAck>[] = [];
  err: Error | null = null;
  constructor(
    readonly hash: string,
    readonly subject: string,
    readonly msgID: string,
    readonly payload: Uint8Array,
  ) {}
}

interface SentSnap {
  seq: number;
  streamSeq: number;
  list: PubEntry[];
  pending: Pending;
}

interface Outcome {
  result: PublishResult;
  error: Error | null;
}

/**
 * A published snapshot whose acks are awaited in the background. wait()
 * resolves once it is settled: its manifest and every body it names are
 * stored, or something failed for good.
 */
export class Pending {
  readonly settled: Promise<Outcome>;
  private resolve!: (o: Outcome) => void;
  done = false;
  err: Error | null = null;
  res: PublishResult;
  bodies: SentBody[] = [];
  man: { subject: string; data: Uint8Array; msgID: string } | null = null;
  manFuture: Promise<PubAck> | null = null;
  manifestOK = false;
  superseded = false;
  deps: Pending[] = [];
  list: PubEntry[] = [];
  gen = 0;

  constructor(res: PublishResult) {
    this.res = { ...res };
    this.settled = new Promise((r) => (this.resolve = r));
  }

  /** What was published; streamSeq is 0 until settled. */
  result(): PublishResult {
    return { ...this.res };
  }

  /** Resolves with the result once settled, or rejects with the reason it was not stored. */
  async wait(): Promise<PublishResult> {
    const o = await this.settled;
    if (o.error) throw o.error;
    return o.result;
  }

  settle(err: Error | null): void {
    this.done = true;
    this.err = err;
    this.resolve({ result: { ...this.res }, error: err });
  }

  settledWithError(): boolean {
    return this.done && this.err !== null;
  }

  failedBodyOf(list: PubEntry[]): Error | null {
    const failed = new Map<string, Error>();
    for (const b of this.bodies) if (b.err) failed.set(b.hash, b.err);
    if (failed.size === 0) return null;
    for (const e of list) {
      const err = failed.get(e.h);
      if (err) return new Error(`body of message ${JSON.stringify(e.id)} (sent with snapshot ${this.res.seq}) not stored: ${err.message}`, { cause: err });
    }
    return null;
  }

  static settledDuplicate(res: PublishResult): Pending {
    const p = new Pending(res);
    p.manifestOK = true;
    p.settle(null);
    return p;
  }
}

/** What a Publisher remembers of one conversation. */
class ConvState {
  gen = 0; // bumped by reset: settlements of older generations change nothing
  seq = 0;
  since = 0;
  bodies: Map<string, Pending | null> | null = null; // null value: stored
  resend = new Map<string, SentBody>();
  inflight: Pending[] = [];
  entries: PubEntry[] = [];
  sinceFull = 0;
  deltaBytes = 0;
  last: SentSnap | null = null;
  acked: SentSnap | null = null;
  lastOpts = "";
  queue: Promise<unknown> = Promise.resolve();

  reset(): void {
    this.gen++;
    this.since = 0;
    this.entries = [];
    this.bodies = null;
    this.resend = new Map();
    this.sinceFull = 0;
    this.deltaBytes = 0;
    this.inflight = [];
    this.last = null;
    this.acked = null;
    this.lastOpts = "";
  }

  listBytes(): number {
    let n = 0;
    for (const e of this.entries) n += e.id.length + e.h.length + 16;
    return n;
  }

  fullDue(every: number): boolean {
    const n = this.sinceFull + 1;
    return n >= 8 * every || (n >= every && this.deltaBytes >= this.listBytes() / 8);
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** headerBytes is the size of a header block as NATS sends it. */
function headerBytes(h: [string, string][]): number {
  let n = "NATS/1.0\r\n".length + 2;
  for (const [k, v] of h) n += Buffer.byteLength(k) + 2 + Buffer.byteLength(v) + 2;
  return n;
}

function bodyHeader(b: SentBody, chunks: number, chunk: number): [string, string][] {
  const h: [string, string][] = [
    [HeaderVersion, "1"],
    [HeaderContentType, ContentTypeJSON],
  ];
  if (chunks === 0) {
    h.push([HeaderMsgID, b.msgID]);
    return h;
  }
  h.push([HeaderMsgID, `${b.msgID}/${chunk}`], [HeaderChunks, String(chunks)], [HeaderSize, String(b.payload.length)]);
  return h;
}

function toHdrs(h: [string, string][]): MsgHdrs {
  const out = headers();
  for (const [k, v] of h) out.set(k, v);
  return out;
}

/**
 * chunkSize returns 0 when b fits one message of limit bytes, else the
 * size of the chunks to split it into (Go: sentBody.chunkSize).
 */
function chunkSize(b: SentBody, limit: number): number {
  if (b.payload.length + headerBytes(bodyHeader(b, 0, 0)) + headerSlack <= limit) return 0;
  const over = headerBytes([[HeaderMsgID, b.msgID + ".99999999999/99999999999"]]);
  const chunk = limit - over - headerSlack;
  if (chunk < MinChunkBytes || headerBytes(bodyHeader(b, Math.floor(b.payload.length / Math.max(chunk, 1)) + 1, chunk)) + headerSlack > limit) {
    throw new MaxPayloadTooSmallError(
      `briefd: body ${b.subject} is ${b.payload.length} bytes and a payload limit of ${limit} bytes leaves ${Math.max(chunk, 0)} for a chunk, ` +
        `at least ${MinChunkBytes} needed (raise the server's max_payload or the body stream's max_msg_size)`,
    );
  }
  return chunk;
}

/**
 * Publisher publishes conversation snapshots as docs/protocol.md says.
 * Publishes of one conversation are sent in call order.
 */
export class Publisher {
  private readonly js: JetStreamClient;
  private readonly subj: Subjects;
  private readonly prefix: string;
  private readonly o: Required<Omit<PublisherOptions, "log">>;
  private readonly log: LogFn;
  private readonly convs = new Map<string, ConvState>();
  private limits: Limits | null = null;
  private lastRefresh = 0;
  private refreshing: Promise<void> | null = null;

  constructor(
    private readonly nc: NatsConnection,
    private readonly jsm: JetStreamManager,
    opts: PublisherOptions = {},
  ) {
    this.prefix = opts.prefix || DefaultPrefix;
    this.o = {
      prefix: this.prefix,
      fullEvery: opts.fullEvery ?? 64,
      conversations: opts.conversations ?? 4096,
      ackTimeoutMs: opts.ackTimeoutMs ?? 30_000,
      publishRetries: opts.publishRetries ?? 3,
      publishRetryWaitMs: opts.publishRetryWaitMs ?? 250,
      limitsRefreshMs: opts.limitsRefreshMs ?? 60_000,
    };
    this.log = opts.log ?? (() => {});
    this.js = nc.jetstream({ timeout: this.o.ackTimeoutMs });
    this.subj = new Subjects(this.prefix);
  }

  /** The stream settings the publisher follows now. */
  currentLimits(): Limits {
    return this.limits ?? { maxAgeMs: 7 * 24 * 3600 * 1000, bodyMaxMsgSize: 0, readAt: 0 };
  }

  /**
   * refreshLimits reads the streams' MaxAge and the body stream's maximum
   * message size (STREAM.INFO of both streams). The publisher also calls
   * it every limitsRefreshMs, and after a publish the server refused.
   */
  async refreshLimits(): Promise<void> {
    this.lastRefresh = Date.now();
    const names = streamNames(this.prefix);
    const l: Limits = { maxAgeMs: 0, bodyMaxMsgSize: 0, readAt: Date.now() };
    for (const name of [names.bodies, names.snapshots]) {
      let info;
      try {
        info = await this.jsm.streams.info(name);
      } catch (err) {
        throw new Error(`briefd: read the limits of stream ${name}: ${(err as Error).message}`, { cause: err });
      }
      const ageMs = Math.floor((info.config.max_age ?? 0) / 1e6);
      if (ageMs > 0 && (l.maxAgeMs === 0 || ageMs < l.maxAgeMs)) l.maxAgeMs = ageMs;
      if (name === names.bodies && (info.config.max_msg_size ?? 0) > 0) l.bodyMaxMsgSize = info.config.max_msg_size;
    }
    this.limits = l;
  }

  private async maybeRefreshLimits(wait: boolean): Promise<void> {
    if (Date.now() - this.lastRefresh < this.o.limitsRefreshMs) return;
    if (!this.refreshing) {
      this.lastRefresh = Date.now();
      this.refreshing = this.refreshLimits()
        .catch((err) => this.log("warn", "briefd: cannot read the stream limits; keeping the last known", { err: String(err) }))
        .finally(() => (this.refreshing = null));
    }
    if (wait && !this.nc.isClosed()) {
      await Promise.race([this.refreshing, sleep(syncLimitsTimeoutMs)]);
    }
  }

  private payloadLimit(): number {
    let limit = this.nc.info?.max_payload ?? 1 << 20;
    const l = this.limits;
    if (l && l.bodyMaxMsgSize > 0 && l.bodyMaxMsgSize < limit) limit = l.bodyMaxMsgSize;
    return limit;
  }

  private state(key: string): ConvState {
    let st = this.convs.get(key);
    if (st) {
      this.convs.delete(key); // most recently used last
    } else {
      st = new ConvState();
    }
    this.convs.set(key, st);
    while (this.convs.size > this.o.conversations) {
      const oldest = this.convs.keys().next().value as string;
      this.convs.delete(oldest);
    }
    return st;
  }

  /**
   * publish sends a snapshot of conversation conv of tenant (the whole
   * history as the agent holds it) and resolves once it is handed to the
   * connection, with a Pending whose wait() says when it is stored. Only
   * bodies not stored for the conversation travel; the manifest is a delta
   * on the newest snapshot known stored. Nothing changed since the last
   * snapshot: nothing is sent and the result is a duplicate. Throws
   * InvalidIDError, BodyTooLargeError or MaxPayloadTooSmallError with
   * nothing published.
   */
  publish(tenant: string, conv: string, msgs: Message[], opts: PublishOptions = {}): Promise<Pending> {
    if (!validToken(tenant)) return Promise.reject(new InvalidIDError("tenant", tenant));
    if (!validToken(conv)) return Promise.reject(new InvalidIDError("conversation", conv));
    const key = `${tenant}.${conv}`;
    const st = this.state(key);
    // One conversation's publishes run in call order, each to the end of
    // its synchronous part before the next starts.
    const run = st.queue.then(async () => {
      await this.maybeRefreshLimits(st.bodies !== null && Date.now() - st.since > this.o.limitsRefreshMs);
      return this.publishNow(st, tenant, conv, key, msgs, opts);
    });
    st.queue = run.catch(() => {});
    return run;
  }

  private refresh(st: ConvState): void {
    const maxAge = this.currentLimits().maxAgeMs;
    if (st.bodies && maxAge > 0 && Date.now() - st.since > maxAge / 2) st.reset();
    if (!st.bodies) {
      st.bodies = new Map();
      st.since = Date.now();
      // Number above any earlier process's snapshots without a round
      // trip: the clock in microseconds (below 2^53).
      if (st.seq === 0) st.seq = Date.now() * 1000;
    }
  }

  private publishNow(st: ConvState, tenant: string, conv: string, key: string, msgs: Message[], opts: PublishOptions): Pending {
    this.refresh(st);
    const bodies = st.bodies!;
    const prev = st.entries;
    const encoded = msgs.map((m) => encodeMessage(m));
    let same = 0;
    while (same < msgs.length && same < prev.length && prev[same].json === encoded[same]) same++;
    const next: PubEntry[] = prev.slice(0, same);
    const toSend: { hash: string; body?: string; sent?: SentBody }[] = [];
    const seen = new Set<string>();
    for (let i = same; i < msgs.length; i++) {
      const json = encoded[i];
      const size = Buffer.byteLength(json);
      if (size > MaxBodyBytes) throw new BodyTooLargeError(msgs[i].id, size, MaxBodyBytes);
      const h = bodyHash(json);
      next.push({ id: msgs[i].id, h, json });
      if (!bodies.has(h) && !seen.has(h)) {
        seen.add(h);
        toSend.push({ hash: h, body: json });
      }
    }
    let resent = 0;
    if (st.resend.size > 0) {
      for (const e of next) {
        const b = st.resend.get(e.h);
        if (b && !seen.has(e.h)) {
          seen.add(e.h);
          toSend.push({ hash: e.h, sent: b });
          resent++;
        }
      }
    }
    const control = encodeControl(opts.control);
    const optsKey = JSON.stringify([opts.model ?? "", opts.contextWindow ?? 0, control]);
    if (resent === 0 && same === msgs.length && msgs.length === prev.length && st.last && optsKey === st.lastOpts && !st.last.pending.settledWithError()) {
      const res = st.last.pending.result();
      return Pending.settledDuplicate({ ...res, duplicate: true, bodies: 0, bodyBytes: 0, resent: 0 });
    }

    // Encode every body and check that it can be sent before sending any.
    const limit = this.payloadLimit();
    const seq = st.seq + 1;
    const pend = new Pending({ seq, streamSeq: 0, duplicate: false, full: false, bodies: 0, bodyBytes: 0, resent });
    pend.gen = st.gen;
    for (const nb of toSend) {
      let b: SentBody;
      if (nb.sent) {
        b = new SentBody(nb.hash, nb.sent.subject, nb.sent.msgID, nb.sent.payload);
      } else {
        const subject = this.subj.body(tenant, conv, nb.hash);
        b = new SentBody(nb.hash, subject, `${key}.${nb.hash}`, Buffer.from(nb.body!, "utf8"));
      }
      chunkSize(b, limit); // throws before anything is sent
      pend.bodies.push(b);
      pend.res.bodyBytes += b.payload.length;
    }
    pend.res.bodies = pend.bodies.length;

    // The base: the newest snapshot known stored, bodies included, unless
    // a full manifest is due.
    const base = st.acked;
    const full = base === null || st.fullDue(this.o.fullEvery);
    let head = `{"v":1,"tenant":${goString(tenant)},"conversation_id":${goString(conv)},"seq":${seq}`;
    let append: PubEntry[] = next;
    if (full) {
      head += `,"base":0,"keep":0`;
    } else {
      let keep = same;
      if (base !== st.last) keep = commonPrefix(base!.list, next);
      head += `,"base":${base!.seq},"base_stream_seq":${base!.streamSeq},"keep":${keep}`;
      append = next.slice(keep);
    }
    let data = head + `,"append":[` + append.map((e) => `{"id":${goString(e.id)},"h":"${e.h}"}`).join(",") + "]";
    if (opts.model) data += `,"model":${goString(opts.model)}`;
    if (opts.contextWindow && opts.contextWindow > 0) data += `,"context_window":${Math.floor(opts.contextWindow)}`;
    if (control) data += `,"control":${control}`;
    data += `,"created_at":"${new Date().toISOString()}"}`;
    pend.res.full = full;

    for (const b of pend.bodies) {
      try {
        this.sendBody(b, limit);
      } catch (err) {
        // Some bodies may be on their way: start the conversation over
        // (numbering kept), so the next snapshot sends them all.
        st.reset();
        throw err;
      }
    }
    pend.man = { subject: this.subj.snapshot(tenant, conv), data: Buffer.from(data, "utf8"), msgID: `${key}.${seq}` };
    try {
      pend.manFuture = this.sendManifest(pend);
    } catch (err) {
      st.reset();
      throw new Error(`briefd: publish snapshot ${key} seq ${seq}: ${(err as Error).message}`, { cause: err });
    }

    for (const b of pend.bodies) bodies.set(b.hash, pend);
    st.resend.clear();
    pend.deps = [...st.inflight];
    pend.list = next;
    st.inflight.push(pend);
    st.seq = seq;
    st.entries = next;
    st.lastOpts = optsKey;
    st.last = { seq, streamSeq: 0, list: next, pending: pend };
    if (full) {
      st.sinceFull = 0;
      st.deltaBytes = 0;
    } else {
      st.sinceFull++;
      st.deltaBytes += data.length;
    }
    const snap = st.last;
    void this.own(pend, st, snap, key);
    return pend;
  }

  private sendManifest(p: Pending): Promise<PubAck> {
    const m = p.man!;
    const h = toHdrs([
      [HeaderVersion, "1"],
      [HeaderContentType, ContentTypeJSON],
      [HeaderMsgID, m.msgID],
    ]);
    return this.js.publish(m.subject, m.data, { headers: h, timeout: this.o.ackTimeoutMs });
  }

  /** sendBody hands b to the connection, chunked when it does not fit limit: chunks first, so a stored head implies its chunks. */
  private sendBody(b: SentBody, limit: number): void {
    b.futures = [];
    const chunk = chunkSize(b, limit);
    const opts = { timeout: this.o.ackTimeoutMs };
    if (chunk === 0) {
      b.futures.push(this.js.publish(b.subject, b.payload, { ...opts, headers: toHdrs(bodyHeader(b, 0, 0)) }));
      return;
    }
    const n = Math.ceil(b.payload.length / chunk);
    for (let i = 0; i < n; i++) {
      const h = toHdrs([[HeaderMsgID, `${b.msgID}.${i}/${chunk}`]]);
      b.futures.push(this.js.publish(`${b.subject}.${i}`, b.payload.subarray(i * chunk, Math.min((i + 1) * chunk, b.payload.length)), { ...opts, headers: h }));
    }
    b.futures.push(this.js.publish(b.subject, Empty, { ...opts, headers: toHdrs(bodyHeader(b, n, chunk)) }));
  }

  /** await collects the acks of the attempt in flight. */
  private async awaitAcks(p: Pending): Promise<void> {
    await Promise.all(
      p.bodies.map(async (b) => {
        if (b.futures.length === 0) return;
        const fs = b.futures;
        b.futures = [];
        b.err = null;
        const rs = await Promise.allSettled(fs);
        for (const r of rs) {
          if (r.status === "rejected" && !b.err) b.err = new Error(`briefd: publish ${b.subject}: ${errText(r.reason)}`, { cause: r.reason });
        }
      }),
    );
    if (p.manFuture) {
      const f = p.manFuture;
      p.manFuture = null;
      try {
        const ack = await f;
        p.err = null;
        p.manifestOK = true;
        p.res.streamSeq = ack.seq;
        p.res.duplicate = ack.duplicate;
      } catch (err) {
        p.err = new Error(`briefd: publish ${p.man!.subject} seq ${p.res.seq}: ${errText(err)}`, { cause: err });
      }
    }
  }

  /** own awaits a snapshot's acks, re-sends what failed, and settles it. */
  private async own(p: Pending, st: ConvState, snap: SentSnap, key: string): Promise<void> {
    await this.awaitAcks(p);
    const failed = () => p.bodies.some((b) => b.err) || (p.man !== null && !p.manifestOK);
    const supersededOnly = () => !p.bodies.some((b) => b.err) && p.superseded;
    let wait = this.o.publishRetryWaitMs;
    for (let attempt = 1; failed() && !supersededOnly() && attempt <= this.o.publishRetries; attempt++) {
      const err = p.bodies.find((b) => b.err)?.err ?? p.err;
      this.log("debug", "briefd: publish failed; re-sending", { conversation: key, seq: p.res.seq, attempt, err: String(err) });
      await sleep(wait * (0.5 + Math.random()));
      wait = Math.min(wait * 2, 8 * this.o.publishRetryWaitMs);
      if (isServerRefusal(err)) {
        // The server's limits may have changed: send by the ones it has now.
        await this.refreshLimits().catch((e) => this.log("warn", "briefd: cannot read the stream limits", { err: String(e) }));
      }
      const limit = this.payloadLimit();
      for (const b of p.bodies) {
        if (!b.err) continue;
        try {
          this.sendBody(b, limit);
        } catch (e) {
          b.err = e as Error;
          b.futures = [];
        }
      }
      if (p.man && !p.manifestOK && !p.superseded) {
        // Re-send only while no newer snapshot was published: stored after
        // it, the older one would pass for the conversation's newest.
        if (st.gen !== p.gen || st.seq !== p.res.seq || this.convs.get(key) !== st) {
          p.superseded = true;
        } else {
          try {
            p.manFuture = this.sendManifest(p);
          } catch (e) {
            p.err = e as Error;
          }
        }
      }
      await this.awaitAcks(p);
    }
    let err: Error | null = p.bodies.find((b) => b.err)?.err ?? null;
    if (!err && !p.manifestOK) {
      err = p.err;
      if (p.superseded) {
        err = new SupersededError(`briefd: snapshot ${key} seq ${p.res.seq} not stored (${p.err?.message}), and not re-sent: superseded by a newer snapshot`);
      }
    }
    // A body this snapshot names but an earlier one sent counts too.
    for (const d of p.deps) {
      await d.settled;
      if (!err) err = d.failedBodyOf(p.list);
    }
    p.deps = [];
    // Take the outcome into the conversation's state (unless it started over).
    if (st.gen === p.gen && st.bodies) {
      for (const b of p.bodies) {
        if (st.bodies.get(b.hash) !== p) continue;
        if (!b.err) {
          st.bodies.set(b.hash, null);
        } else {
          st.bodies.delete(b.hash);
          st.resend.set(b.hash, b);
        }
      }
      st.inflight = st.inflight.filter((x) => x !== p);
      if (!err && (st.acked === null || snap.seq > st.acked.seq)) {
        snap.streamSeq = p.res.streamSeq;
        st.acked = snap;
      }
    }
    p.list = [];
    if (err) this.log("debug", "briefd: snapshot not stored", { conversation: key, seq: p.res.seq, err: err.message });
    p.settle(err);
  }
}

function commonPrefix(a: Entry[], b: Entry[]): number {
  let n = 0;
  while (n < a.length && n < b.length && a[n].id === b[n].id && a[n].h === b[n].h) n++;
  return n;
}

function errText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

// A refusal by the server (an API error: a stream limit, say), not a lost
// connection or a timeout.
function isServerRefusal(err: unknown): boolean {
  let e: unknown = err;
  while (e instanceof Error) {
    const code = (e as { code?: string }).code;
    if (code && /^[45]\d\d$/.test(code) && code !== "503" && code !== "408") return true;
    if ((e as { api_error?: unknown }).api_error) return true;
    e = e.cause;
  }
  return false;
}
