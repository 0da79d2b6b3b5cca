// Reading the streams as docs/protocol.md "Reading the originals" says
// (Go: internal/queue Resolver.Originals and Resolver.Body): the
// conversation's snapshots in stream order, each manifest resolved into its
// list, the lists merged into the conversation's order; bodies by hash,
// chunks reassembled, zstd decoded within the declared size, the hash
// checked.

import { decompress } from "fzstd";
import type { StoredMsg } from "nats";
import { isBriefingID } from "./message.js";
import {
  bodyHash,
  decodeManifest,
  EncodingZstd,
  HeaderChunks,
  HeaderContentEncoding,
  HeaderSize,
  MalformedError,
  MaxBodyBytes,
  streamNames,
  Subjects,
  validHash,
} from "./protocol.js";
import type { Entry, Manifest } from "./types.js";

/** A body (or one of its chunks) is not in the body stream: it expired or was never stored. */
export class BodyMissingError extends Error {
  constructor(subject: string) {
    super(`briefd: body ${subject} is not in the stream`);
    this.name = "BodyMissingError";
  }
}

// A zstd frame without a declared content size may hold this much.
const unsizedLimit = 64 << 10;
// Conversations whose scan a reader keeps.
const maxScans = 64;

interface Scan {
  next: number;
  order: OriginalOrder;
  lists: Map<number, { seq: number; list: Entry[] }>;
  queue: Promise<unknown>;
}

// Bodies cached for repeated expand calls, in bytes.
const bodyCacheBytes = 8 << 20;

function isNotFound(err: unknown): boolean {
  const code = (err as { code?: string })?.code;
  return code === "404" || /no message found|message not found/i.test(String((err as Error)?.message ?? err));
}

/**
 * zstdContentSize returns the content size a zstd frame header declares,
 * or null when it declares none (RFC 8878, 3.1.1.1).
 */
export function zstdContentSize(b: Uint8Array): number | null {
  if (b.length < 6 || b[0] !== 0x28 || b[1] !== 0xb5 || b[2] !== 0x2f || b[3] !== 0xfd) {
    throw new Error("not a zstd frame");
  }
  const fhd = b[4];
  const fcsFlag = fhd >> 6;
  const single = (fhd >> 5) & 1;
  const dictFlag = fhd & 3;
  let at = 5 + (single ? 0 : 1) + [0, 1, 2, 4][dictFlag];
  const fcsSize = fcsFlag === 0 ? (single ? 1 : 0) : [0, 2, 4, 8][fcsFlag];
  if (fcsSize === 0) return null;
  if (b.length < at + fcsSize) throw new Error("truncated zstd frame header");
  const dv = new DataView(b.buffer, b.byteOffset + at, fcsSize);
  switch (fcsSize) {
    case 1:
      return dv.getUint8(0);
    case 2:
      return dv.getUint16(0, true) + 256;
    case 4:
      return dv.getUint32(0, true);
    default: {
      const n = dv.getBigUint64(0, true);
      return n > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(n);
    }
  }
}

/**
 * DirectGets is the part of nats.js's JetStreamManager a Reader uses: its
 * direct get API (jsm.direct, present at run time, not in the public type).
 */
export interface DirectGets {
  direct: {
    getMessage(stream: string, query: { seq: number; next_by_subj: string } | { seq: number } | { last_by_subj: string }): Promise<StoredMsg>;
  };
}

/** Reader reads one prefix's streams. */
export class Reader {
  private readonly subj: Subjects;
  private readonly names: { bodies: string; snapshots: string };
  private readonly cache = new Map<string, Uint8Array>(); // LRU by insertion
  private readonly scans = new Map<string, Scan>();
  private cached = 0;

  constructor(
    private readonly jsm: DirectGets,
    prefix: string,
  ) {
    this.subj = new Subjects(prefix);
    this.names = streamNames(prefix);
  }

  /**
   * originals returns the messages the conversation has published, as the
   * snapshots still in the snapshot stream name them, in conversation
   * order, each with its newest body's hash. One direct get per snapshot;
   * the reader keeps the scan of its last conversations, so a later call
   * reads only the snapshots stored since.
   */
  originals(tenant: string, conv: string): Promise<Entry[]> {
    const key = `${tenant}.${conv}`;
    let sc = this.scans.get(key);
    if (!sc) {
      sc = { next: 1, order: new OriginalOrder(), lists: new Map(), queue: Promise.resolve() };
      this.scans.set(key, sc);
      if (this.scans.size > maxScans) this.scans.delete(this.scans.keys().next().value as string);
    }
    const s = sc;
    const run = s.queue.then(() => this.update(tenant, conv, s));
    s.queue = run.catch(() => {});
    return run;
  }

  private async update(tenant: string, conv: string, sc: Scan): Promise<Entry[]> {
    const subject = this.subj.snapshot(tenant, conv);
    for (;;) {
      let raw: StoredMsg;
      try {
        raw = await this.jsm.direct.getMessage(this.names.snapshots, { seq: sc.next, next_by_subj: subject });
      } catch (err) {
        if (isNotFound(err)) break;
        throw new Error(`briefd: scan ${subject} from stream seq ${sc.next}: ${(err as Error).message}`, { cause: err });
      }
      const next = raw.seq + 1;
      let man: Manifest | null = null;
      try {
        man = decodeManifest(raw.data);
      } catch {
        // dead-lettered by the workers; names nothing usable
      }
      if (man && man.tenant === tenant && man.conversation_id === conv) {
        const list = await this.resolve(subject, man, sc.lists); // a transient error stops here; read again next time
        if (list) {
          sc.lists.set(raw.seq, { seq: man.seq, list });
          // A scan resolves each snapshot on a recent one: keep a few lists.
          if (sc.lists.size > 16) sc.lists.delete(sc.lists.keys().next().value as number);
          sc.order.merge(list);
        }
      }
      sc.next = next;
    }
    return sc.order.entries();
  }

  /** resolve returns a manifest's list, or null when its base chain cannot be resolved (expired, malformed). */
  private async resolve(subject: string, man: Manifest, lists: Map<number, { seq: number; list: Entry[] }>): Promise<Entry[] | null> {
    const chain: Manifest[] = [man];
    let base: Entry[] = [];
    for (let cur = man; cur.base !== 0; ) {
      if (chain.length > 1024) return null;
      const known = lists.get(cur.base_stream_seq!);
      if (known && known.seq === cur.base) {
        base = known.list;
        break;
      }
      let raw: StoredMsg;
      try {
        raw = await this.jsm.direct.getMessage(this.names.snapshots, { seq: cur.base_stream_seq! });
      } catch (err) {
        if (isNotFound(err)) return null;
        throw err;
      }
      if (raw.subject !== subject) return null;
      let bm: Manifest;
      try {
        bm = decodeManifest(raw.data);
      } catch {
        return null;
      }
      if (bm.seq !== cur.base) return null;
      chain.push(bm);
      cur = bm;
    }
    for (let i = chain.length - 1; i >= 0; i--) {
      const m = chain[i];
      if (m.keep > base.length) return null;
      base = base.slice(0, m.keep).concat(m.append.map((e) => ({ id: e.id, h: e.h })));
    }
    return base;
  }

  /**
   * body returns the canonical bytes of one body: chunks reassembled, zstd
   * decoded, the hash checked. Throws BodyMissingError when it is not in
   * the stream, MalformedError when it breaks the protocol.
   */
  async body(tenant: string, conv: string, hash: string): Promise<Uint8Array> {
    if (!validHash(hash)) throw new MalformedError(`invalid body hash ${JSON.stringify(hash)}`);
    const subject = this.subj.body(tenant, conv, hash);
    const hit = this.cache.get(subject);
    if (hit) {
      this.cache.delete(subject);
      this.cache.set(subject, hit);
      return hit;
    }
    const get = async (subj: string): Promise<StoredMsg> => {
      try {
        return await this.jsm.direct.getMessage(this.names.bodies, { last_by_subj: subj });
      } catch (err) {
        if (isNotFound(err)) throw new BodyMissingError(subj);
        throw new Error(`briefd: get body ${subj}: ${(err as Error).message}`, { cause: err });
      }
    };
    const raw = await get(subject);
    let payload = raw.data;
    const chunks = raw.header?.get(HeaderChunks);
    if (chunks) {
      const n = Number(chunks);
      const size = Number(raw.header.get(HeaderSize));
      if (!Number.isSafeInteger(n) || n <= 0 || !Number.isSafeInteger(size) || size < 0 || size > 2 * MaxBodyBytes) {
        throw new MalformedError(`body ${subject} has bad chunk headers ${HeaderChunks}=${chunks} ${HeaderSize}=${raw.header.get(HeaderSize)}`);
      }
      const buf = new Uint8Array(size);
      let at = 0;
      for (let i = 0; i < n; i++) {
        const c = await get(`${subject}.${i}`);
        if (at + c.data.length > size) throw new MalformedError(`body ${subject}: chunks hold more than the ${size} bytes ${HeaderSize} says`);
        buf.set(c.data, at);
        at += c.data.length;
      }
      if (at !== size) throw new MalformedError(`body ${subject}: chunks hold ${at} bytes, ${HeaderSize} says ${size}`);
      payload = buf;
    }
    const encoding = raw.header?.get(HeaderContentEncoding) ?? "";
    if (encoding === EncodingZstd) {
      let declared: number | null;
      try {
        declared = zstdContentSize(payload);
      } catch (err) {
        throw new MalformedError(`body ${subject}: zstd frame header: ${(err as Error).message}`);
      }
      if (declared !== null && declared > MaxBodyBytes) throw new MalformedError(`body ${subject} is ${declared} bytes, limit ${MaxBodyBytes}`);
      // Decode into a buffer of the declared size and no more.
      const out = new Uint8Array(declared ?? unsizedLimit);
      let d: Uint8Array;
      try {
        d = decompress(payload, out);
      } catch (err) {
        throw new MalformedError(`body ${subject}: zstd: ${(err as Error).message}`);
      }
      if (declared !== null && d.length !== declared) throw new MalformedError(`body ${subject}: zstd frame holds ${d.length} bytes, its header says ${declared}`);
      if (declared === null && d.length >= unsizedLimit) throw new MalformedError(`body ${subject}: zstd frame without a declared content size holds more than ${unsizedLimit} bytes`);
      payload = d;
    } else if (encoding !== "") {
      throw new MalformedError(`body ${subject}: unknown ${HeaderContentEncoding} ${JSON.stringify(encoding)}`);
    }
    if (payload.length > MaxBodyBytes) throw new MalformedError(`body ${subject} is ${payload.length} bytes, limit ${MaxBodyBytes}`);
    const got = bodyHash(payload);
    if (got !== hash) throw new MalformedError(`body ${subject} hashes to ${got}`);
    this.cache.set(subject, payload);
    this.cached += payload.length;
    while (this.cached > bodyCacheBytes && this.cache.size > 0) {
      const [k, v] = this.cache.entries().next().value as [string, Uint8Array];
      this.cache.delete(k);
      this.cached -= v.length;
    }
    return payload;
  }
}

/** OriginalOrder merges snapshot lists into one conversation order (docs/protocol.md, step 3). */
export class OriginalOrder {
  private head: Node | null = null;
  private readonly index = new Map<string, Node>();

  merge(list: Entry[]): void {
    let prev: Node | null = null;
    for (const e of list) {
      if (isBriefingID(e.id)) continue;
      const known = this.index.get(e.id);
      if (known) {
        known.e = { id: e.id, h: e.h }; // an edited message: its newest body
        prev = known;
        continue;
      }
      const n: Node = { e: { id: e.id, h: e.h }, next: null };
      if (prev === null) {
        n.next = this.head;
        this.head = n;
      } else {
        n.next = prev.next;
        prev.next = n;
      }
      this.index.set(e.id, n);
      prev = n;
    }
  }

  entries(): Entry[] {
    const out: Entry[] = [];
    for (let n = this.head; n; n = n.next) out.push(n.e);
    return out;
  }
}

interface Node {
  e: Entry;
  next: Node | null;
}
