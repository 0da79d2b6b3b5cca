// The agent side of briefd in TypeScript: publish after each turn (never
// waiting for the workers), prepare before each model call, expand what
// the model asks for. Go's counterpart is the client package.

import type { JetStreamManager, KV, NatsConnection } from "nats";
import {
  clipMessage,
  compileQuery,
  describeIDs,
  type ExpandLimits,
  expandAnswer,
  expandLimits,
  expandNote,
  type Expansion,
  ExpiredError,
  InvalidQueryError,
  NoBriefingError,
  parseToolArgs,
  searchAnswer,
  searchNote,
  type SearchResult,
  searchText,
  snippet,
  toolError,
  UnknownMessageError,
} from "./expand.js";
import { messageSize } from "./message.js";
import { DefaultPrefix, InvalidIDError, kvBucket, MalformedError, validToken } from "./protocol.js";
import { type Control, encodeControl, type LogFn, type Pending, Publisher, type PublisherOptions, SupersededError } from "./publisher.js";
import { BodyMissingError, type DirectGets, Reader } from "./reader.js";
import { BoundaryMissingError, NothingToSpliceError, splice } from "./splice.js";
import type { Briefing, Entry, Message } from "./types.js";

/** The part of a node-redis client (the `redis` package) the client uses. */
export interface RedisLike {
  hGet(key: string, field: string): Promise<string | null | undefined | {}>;
}

export interface ClientOptions {
  /** The tenant every snapshot and lookup belongs to. Default "default". */
  tenant?: string;
  /** Subject and Redis key prefix; must match the workers'. Default "briefd". */
  prefix?: string;
  /** Read briefings from Redis (a connected node-redis client, which the caller owns); default the JetStream key-value bucket. */
  redis?: RedisLike;
  /** The key-value bucket of the KV store. Default the workers' (briefd_briefings). */
  kvBucket?: string;
  /** The model named in every snapshot (token encoding). */
  model?: string;
  /** The context window named in every snapshot (tokens). */
  contextWindow?: number;
  /** Control sent with every snapshot (a publish's own control overrides its fields). */
  control?: Control;
  /** How many snapshots may wait for their acks (1024); beyond, superseded ones are dropped, else publish throws BufferFullError. */
  buffer?: number;
  /** Bounds of expand, search and the tool's answers. */
  expandLimits?: ExpandLimits;
  /** Called with every asynchronous publish error (a snapshot not stored after re-sends). */
  onError?: (err: Error) => void;
  /** Publisher settings (retries, timeouts, full-manifest cadence). */
  publisher?: Omit<PublisherOptions, "prefix" | "log">;
  /** Receives the client's logs; default none. */
  log?: LogFn;
}

/** Every buffer slot holds the newest snapshot of a conversation: the snapshot is not sent. */
export class BufferFullError extends Error {
  constructor(conv: string) {
    super(`briefd: publish ${conv}: publish buffer full`);
    this.name = "BufferFullError";
  }
}

/** The client is closed. */
export class ClosedError extends Error {
  constructor() {
    super("briefd: client closed");
    this.name = "ClosedError";
  }
}

/** What became of the snapshots handed to publish. */
export interface Stats {
  pending: number;
  stored: number;
  failed: number;
  superseded: number;
  refused: number;
}

interface Slot {
  conv: string;
  dropped: boolean;
}

const b64 = (s: string) => (s === "" ? "_" : Buffer.from(s, "utf8").toString("base64url"));
const escapeKey = (s: string) => s.replace(/[%:{}]/g, (c) => ({ "%": "%25", ":": "%3A", "{": "%7B", "}": "%7D" })[c] as string);

/**
 * BriefdClient publishes snapshots and reads briefings for one tenant.
 * Make one with BriefdClient.connect.
 */
export class BriefdClient {
  readonly tenant: string;
  private readonly prefix: string;
  private readonly pub: Publisher;
  private readonly reader: Reader;
  private readonly limits: Required<ExpandLimits>;
  private readonly log: LogFn;
  private kv: KV | null = null;
  private closed = false;
  private readonly slots = new Map<string, Slot[]>();
  private inflight = 0;
  private idle: Promise<void> = Promise.resolve();
  private idleResolve: (() => void) | null = null;
  private firstErr: Error | null = null;
  private readonly st: Stats = { pending: 0, stored: 0, failed: 0, superseded: 0, refused: 0 };

  private constructor(
    private readonly nc: NatsConnection,
    private readonly o: ClientOptions,
    jsm: DirectGets & JetStreamManager,
  ) {
    this.tenant = o.tenant ?? "default";
    this.prefix = o.prefix || DefaultPrefix;
    this.log = o.log ?? (() => {});
    this.pub = new Publisher(nc, jsm, { ...o.publisher, prefix: this.prefix, log: this.log });
    this.reader = new Reader(jsm, this.prefix);
    this.limits = expandLimits(o.expandLimits);
  }

  /**
   * connect returns a client publishing on nc, which the caller keeps
   * owning. It reads the streams' limits (the workers create the streams;
   * if they do not exist yet the publisher keeps trying) and, without
   * Redis, opens the key-value bucket.
   */
  static async connect(nc: NatsConnection, opts: ClientOptions = {}): Promise<BriefdClient> {
    const tenant = opts.tenant ?? "default";
    if (!validToken(tenant)) throw new InvalidIDError("tenant", tenant);
    const jsm = await nc.jetstreamManager({ checkAPI: false });
    const c = new BriefdClient(nc, opts, jsm as DirectGets & JetStreamManager);
    try {
      await c.pub.refreshLimits();
    } catch (err) {
      c.log("warn", "briefd client: cannot read the stream limits yet; retrying in the background", { err: String(err) });
    }
    if (!opts.redis) {
      c.kv = await nc.jetstream().views.kv(opts.kvBucket ?? kvBucket(c.prefix), { bindOnly: true });
    }
    return c;
  }

  private checkConv(conv: string): void {
    if (this.closed) throw new ClosedError();
    if (!validToken(conv)) throw new InvalidIDError("conversation", conv);
  }

  /**
   * publish hands a snapshot of conversation conv (the whole history as the
   * agent holds it, spliced briefings included) to the publisher and
   * resolves once it is on the connection, without waiting for the
   * server: only messages not sent before for conv travel. Errors of the
   * acks come later, through onError and flush. A control (this publish's
   * fields over the client's) says when and what to compact; it is
   * checked before anything is sent.
   */
  async publish(conv: string, history: Message[], opts: { control?: Control } = {}): Promise<void> {
    this.checkConv(conv);
    const control = mergeControl(this.o.control, opts.control);
    encodeControl(control); // a bad control throws before anything is sent
    if (history.length === 0) throw new Error(`briefd: publish ${conv}: empty history`);
    if (this.inflight >= (this.o.buffer ?? 1024) && !this.dropSuperseded(conv)) {
      this.st.refused++;
      throw new BufferFullError(conv);
    }
    if (this.inflight === 0) this.idle = new Promise((r) => (this.idleResolve = r));
    this.inflight++;
    const slot: Slot = { conv, dropped: false };
    const list = this.slots.get(conv) ?? [];
    list.push(slot);
    this.slots.set(conv, list);
    let pend: Pending;
    try {
      pend = await this.pub.publish(this.tenant, conv, history, { model: this.o.model, contextWindow: this.o.contextWindow, control });
    } catch (err) {
      this.release(slot, null, false);
      throw err;
    }
    void pend.settled.then(({ error }) => this.release(slot, error, true));
  }

  private dropSuperseded(conv: string): boolean {
    let victim = (this.slots.get(conv)?.length ?? 0) > 0 ? conv : "";
    if (!victim) {
      for (const [k, v] of this.slots) {
        if (v.length > 1) {
          victim = k;
          break;
        }
      }
    }
    if (!victim) return false;
    const slot = this.slots.get(victim)![0];
    this.remove(slot);
    slot.dropped = true;
    this.inflight--;
    this.st.superseded++;
    return true;
  }

  private remove(slot: Slot): void {
    const list = (this.slots.get(slot.conv) ?? []).filter((s) => s !== slot);
    if (list.length === 0) this.slots.delete(slot.conv);
    else this.slots.set(slot.conv, list);
  }

  private release(slot: Slot, err: Error | null, count: boolean): void {
    if (slot.dropped) return;
    this.remove(slot);
    this.inflight--;
    if (this.inflight === 0) this.idleResolve?.();
    if (!count) return;
    if (err instanceof SupersededError) {
      this.st.superseded++;
      return;
    }
    if (err) {
      this.st.failed++;
      this.firstErr ??= err;
      this.log("warn", "briefd client: async publish failed", { tenant: this.tenant, err: err.message });
      this.o.onError?.(err);
    } else {
      this.st.stored++;
    }
  }

  /** stats counts what became of the snapshots handed to publish. */
  stats(): Stats {
    return { ...this.st, pending: this.inflight };
  }

  /** flush waits until every snapshot published so far is acked or failed, then throws the first asynchronous error since the last flush (and clears it). */
  async flush(): Promise<void> {
    if (this.inflight > 0) await this.idle;
    const err = this.firstErr;
    this.firstErr = null;
    if (err) throw err;
  }

  /** latest returns the conversation's newest briefing from the store, or null when it has none. */
  async latest(conv: string): Promise<Briefing | null> {
    this.checkConv(conv);
    let data: string | Uint8Array | null;
    if (this.o.redis) {
      const key = `${escapeKey(this.prefix)}:{${escapeKey(this.tenant)}:${escapeKey(conv)}}:latest`;
      const v = await this.o.redis.hGet(key, "briefing");
      data = typeof v === "string" ? v : null;
    } else {
      const e = await this.kv!.get(`${b64(this.tenant)}.${b64(conv)}.latest`);
      data = e && e.operation === "PUT" && e.value.length > 0 ? e.value : null;
    }
    if (data === null) return null;
    try {
      return JSON.parse(typeof data === "string" ? data : Buffer.from(data).toString("utf8")) as Briefing;
    } catch (err) {
      throw new Error(`briefd: latest ${conv}: decode briefing: ${(err as Error).message}`, { cause: err });
    }
  }

  /**
   * prepare returns the history to send to the model this turn: history
   * spliced with the conversation's latest briefing when one applies, and
   * that briefing; otherwise history itself and null. A store that cannot
   * be reached is an error, never a silent "no briefing".
   */
  async prepare(conv: string, history: Message[]): Promise<{ messages: Message[]; briefing: Briefing | null }> {
    const b = await this.latest(conv);
    if (!b) return { messages: history, briefing: null };
    try {
      return { messages: splice(history, b), briefing: b };
    } catch (err) {
      if (err instanceof BoundaryMissingError || err instanceof NothingToSpliceError) return { messages: history, briefing: null };
      throw err;
    }
  }

  private async readBodies(conv: string, entries: Entry[], visit: (e: Entry, m: Message | null) => boolean): Promise<void> {
    for (let start = 0; start < entries.length; start += 8) {
      const batch = entries.slice(start, start + 8);
      const msgs = await Promise.all(
        batch.map(async (e) => {
          try {
            const m = JSON.parse(Buffer.from(await this.reader.body(this.tenant, conv, e.h)).toString("utf8")) as Message;
            if (m.id !== e.id) {
              this.log("warn", "briefd client: body is not the message the snapshot names", { conversation: conv, message: e.id });
              return null;
            }
            return m;
          } catch (err) {
            if (err instanceof BodyMissingError) return null;
            if (err instanceof MalformedError || err instanceof SyntaxError) {
              this.log("warn", "briefd client: unreadable body", { conversation: conv, message: e.id, err: String(err) });
              return null;
            }
            throw err;
          }
        }),
      );
      for (let k = 0; k < batch.length; k++) if (!visit(batch[k], msgs[k])) return;
    }
  }

  /**
   * expand returns the original messages of conv from fromId to toId
   * (inclusive; toId defaults to fromId; reversed ids are put in order),
   * read from the streams, within the expand limits. Throws
   * UnknownMessageError, or ExpiredError (carrying the readable messages)
   * when some bodies expired.
   */
  async expand(conv: string, fromId: string, toId = ""): Promise<Expansion> {
    this.checkConv(conv);
    if (!fromId) throw new Error(`briefd: expand ${conv}: empty from id`);
    toId ||= fromId;
    const entries = await this.reader.originals(this.tenant, conv);
    let i = entries.findIndex((e) => e.id === fromId);
    let j = entries.findIndex((e) => e.id === toId);
    const maxAge = this.pub.currentLimits().maxAgeMs;
    if (i < 0) throw new UnknownMessageError(conv, fromId, maxAge);
    if (j < 0) throw new UnknownMessageError(conv, toId, maxAge);
    if (i > j) [i, j] = [j, i];
    const ex: Expansion = { conversationId: conv, fromId: entries[i].id, toId: entries[j].id, messages: [], truncated: false, nextId: "", expired: [] };
    const lim = this.limits;
    let used = 0;
    await this.readBodies(conv, entries.slice(i, j + 1), (e, m) => {
      if (!m) {
        ex.expired.push(e.id);
        return true;
      }
      let size = messageSize(m);
      if (ex.messages.length === lim.maxMessages || (used + size > lim.maxBytes && ex.messages.length > 0)) {
        ex.truncated = true;
        ex.nextId = e.id;
        return false;
      }
      if (size > lim.maxBytes) {
        m = clipMessage(m, lim.maxBytes);
        ex.truncated = true;
        size = messageSize(m);
      }
      ex.messages.push(m);
      used += size;
      return true;
    });
    if (ex.expired.length > 0) throw new ExpiredError(conv, ex.expired, maxAge, ex);
    return ex;
  }

  /**
   * search looks for query in the compacted originals of conv (those before
   * the latest briefing's boundary; with all, every stored original): a
   * case-insensitive substring, or with regexp a JavaScript regular
   * expression (run with a time bound). Throws NoBriefingError (nothing
   * compacted yet; not with all) or InvalidQueryError.
   */
  async search(conv: string, query: string, opts: { regexp?: boolean; all?: boolean } = {}): Promise<SearchResult> {
    this.checkConv(conv);
    const matcher = compileQuery(conv, query, opts.regexp ?? false);
    let boundary = "";
    if (!opts.all) {
      const b = await this.latest(conv);
      if (!b) throw new NoBriefingError(conv);
      boundary = b.boundary_id;
    }
    let entries = await this.reader.originals(this.tenant, conv);
    const k = boundary ? entries.findIndex((e) => e.id === boundary) : -1;
    if (k >= 0) entries = entries.slice(0, k);
    const res: SearchResult = { conversationId: conv, query, regexp: opts.regexp ?? false, matches: [], truncated: false, searched: 0, expired: [] };
    const lim = this.limits;
    let used = 0;
    // Matched 64 messages at a time, so a long conversation is never held
    // whole; each batch runs within the regexp time bound.
    let found: { m: Message; text: string }[] = [];
    const match = () => {
      const hits = matcher.run(found.map((f) => f.text));
      for (let n = 0; n < found.length; n++) {
        if (hits[n].count === 0) continue;
        const snip = snippet(found[n].text, hits[n].first[0], hits[n].first[1]);
        const size = Buffer.byteLength(snip);
        if (res.matches.length === lim.maxMatches || (used + size > lim.maxBytes && res.matches.length > 0)) {
          res.truncated = true;
          continue;
        }
        used += size;
        res.matches.push({ id: found[n].m.id, role: found[n].m.role, snippet: snip, count: hits[n].count });
      }
      found = [];
    };
    await this.readBodies(conv, entries, (e, m) => {
      if (!m) {
        res.expired.push(e.id);
        return true;
      }
      res.searched++;
      found.push({ m, text: searchText(m) });
      if (found.length === 64) match();
      return true;
    });
    match();
    return res;
  }

  /**
   * handleExpandTool answers a call of the expand tool in conv: args is the
   * call's JSON arguments as the model produced them. It resolves with the
   * content of the tool message: always a JSON object, bounded, with
   * "error" when the call could not be answered. It rejects only when the
   * caller may want to act (NATS or the store unreachable, the client
   * closed); the error's `toolContent` then holds the answer for the model.
   */
  async handleExpandTool(conv: string, args: string): Promise<string> {
    const a = parseToolArgs(args);
    if (typeof a === "string") return toolError(a);
    const query = a.query ?? "";
    const from = a.from_id ?? "";
    const to = a.to_id ?? "";
    if (query && (from || to)) return toolError("give either from_id/to_id or query, not both");
    if (!query && !from && !to) return toolError("give from_id (and to_id) to read a range, or query to search");
    try {
      if (query) {
        const r = await this.search(conv, query, { regexp: a.regexp ?? false });
        return searchAnswer(conv, r, searchNote(r));
      }
      let ex: Expansion;
      try {
        ex = await this.expand(conv, from || to, to);
      } catch (err) {
        if (!(err instanceof ExpiredError)) throw err;
        ex = err.expansion;
      }
      return expandAnswer(conv, ex, expandNote(ex));
    } catch (err) {
      if (err instanceof NoBriefingError) return toolError("nothing in this conversation has been compacted yet");
      if (err instanceof UnknownMessageError || err instanceof InvalidQueryError) return toolError(err.toolText());
      if (err instanceof InvalidIDError) return toolError("the conversation id is not 1-128 characters of [A-Za-z0-9_-]");
      const e = err as Error & { toolContent?: string };
      e.toolContent = toolError(`the history could not be read: ${e.message}`);
      throw e;
    }
  }

  /** close flushes pending publishes (rejecting with flush's error) and closes the client; the NATS connection and Redis client stay open. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.flush();
  }
}

export { describeIDs };

/** mergeControl lays a publish's control fields over the client's. */
function mergeControl(base: Control | undefined, over: Control | undefined): Control | undefined {
  if (!base) return over;
  if (!over) return base;
  return {
    mode: over.mode ?? base.mode,
    triggerFraction: over.triggerFraction ?? base.triggerFraction,
    keepTokens: over.keepTokens ?? base.keepTokens,
    pin: over.pin ?? base.pin,
    focus: over.focus ?? base.focus,
  };
}
