// The TypeScript publisher and reader against a real nats-server and worker
// (briefings in the JetStream key-value bucket): deltas carry only new
// messages, re-publishing nothing sends nothing, edits and spliced histories
// resolve, large bodies are chunked to the server's max_payload and read
// back by Go and TypeScript, expand and search are bounded, expired bodies
// are named.

import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { JetStreamManager, NatsConnection } from "nats";
import { BriefdClient, decodeManifest, ExpiredError, Publisher, splice, UnknownMessageError, type Briefing, type Message } from "../src/index.js";
import { connect } from "nats";
import { Cleanup, natsConnect, poll, publisherCLI, startNats, startWorker } from "./servers.js";

function conversation(n: number, long = 0): Message[] {
  const h: Message[] = [
    { id: "sys", role: "system", content: "system" },
    { id: "task", role: "user", content: "task" },
  ];
  for (let i = 0; i < n; i++) {
    h.push(
      { id: `a${i}`, role: "assistant", content: "step", tool_calls: [{ id: `c${i}`, type: "function", function: { name: "bash", arguments: '{"command":"ls"}' } }] },
      { id: `t${i}`, role: "tool", tool_call_id: `c${i}`, content: `output of step t${i}: ` + "all tests <pass> & more; ".repeat(long) },
    );
  }
  return h;
}

async function manifests(jsm: JetStreamManager, tenant: string, conv: string) {
  const out = [];
  for (let seq = 1; ; ) {
    try {
      const m = await jsm.streams.getMessage("BRIEFD_SNAPSHOTS", { seq, next_by_subj: `briefd.snap.${tenant}.${conv}` } as never);
      out.push(decodeManifest(m.data));
      seq = m.seq + 1;
    } catch {
      return out;
    }
  }
}

async function bodyCount(jsm: JetStreamManager, tenant: string, conv: string): Promise<number> {
  const info = await jsm.streams.info("BRIEFD_BODIES", { subjects_filter: `briefd.body.${tenant}.${conv}.>` });
  return Object.keys(info.state.subjects ?? {}).length;
}

describe("publisher and reader", () => {
  const c = new Cleanup();
  let nc: NatsConnection;
  let jsm: JetStreamManager;
  let natsURL = "";

  before(async () => {
    // A small max_payload so that a 20 KB body is chunked.
    natsURL = (await startNats(c, { maxPayload: 8192 })).url;
    await startWorker(c, natsURL, null, ["--context-window", "100000"]);
    nc = await natsConnect(c, natsURL);
    jsm = await nc.jetstreamManager();
  });
  after(() => c.run());

  it("sends only new messages, in deltas on the last stored snapshot", async () => {
    const client = await BriefdClient.connect(nc, { tenant: "p1" });
    const h = conversation(4);
    await client.publish("conv", h.slice(0, 4));
    await client.flush();
    await client.publish("conv", h.slice(0, 6));
    await client.flush();
    await client.publish("conv", h.slice(0, 6)); // unchanged: nothing is sent
    await client.flush();
    const edited = h.slice(0, 8).map((m) => (m.id === "t1" ? { ...m, content: "edited" } : m));
    await client.publish("conv", edited);
    await client.flush();
    const ms = await manifests(jsm, "p1", "conv");
    assert.equal(ms.length, 3);
    assert.deepEqual([ms[0].base, ms[0].keep, ms[0].append.length], [0, 0, 4]);
    assert.deepEqual([ms[1].base, ms[1].keep, ms[1].append.length], [ms[0].seq, 4, 2]);
    assert.ok(ms[1].base_stream_seq! > 0);
    assert.deepEqual([ms[2].base, ms[2].keep, ms[2].append.map((e) => e.id)], [ms[1].seq, 5, ["t1", "a2", "t2"]]);
    // Each distinct body once: 6 messages, the edited t1, a2 and t2.
    assert.equal(await bodyCount(jsm, "p1", "conv"), 9);
    assert.deepEqual(client.stats(), { pending: 0, stored: 4, failed: 0, superseded: 0, refused: 0 });
    const ex = await client.expand("conv", "task", "t2");
    assert.equal(ex.messages.find((m) => m.id === "t1")!.content, "edited");
    assert.equal(ex.messages.length, 7);
  });

  it("chunks bodies over max_payload; Go and TypeScript read them back", async () => {
    const client = await BriefdClient.connect(nc, { tenant: "p2" });
    const h = conversation(2);
    h[3] = { ...h[3], content: "big body ".repeat(2500) }; // 22.5 KB > 8 KB
    await client.publish("conv", h);
    await client.flush();
    const info = await jsm.streams.info("BRIEFD_BODIES", { subjects_filter: "briefd.body.p2.conv.>" });
    assert.ok(Object.keys(info.state.subjects!).some((s) => s.endsWith(".2")), "chunk subjects exist");
    const ex = await client.expand("conv", "t0");
    assert.equal(ex.messages[0].content, h[3].content);
    const { stdout } = await publisherCLI(["expand", "--nats-url", natsURL, "--tenant", "p2", "--conversation", "conv", "--from", "t0", "--format", "json"]);
    assert.equal((JSON.parse(stdout) as Message[])[0].content, h[3].content);
  });

  it("reads the originals behind spliced, chained histories", async () => {
    const client = await BriefdClient.connect(nc, { tenant: "p3" });
    const h = conversation(10);
    await client.publish("conv", h.slice(0, 12));
    const b = (boundary: string, position: number): Briefing =>
      ({ conversation_id: "conv", boundary_id: boundary, position, text: `brief ${boundary}` }) as Briefing;
    let cur = splice(h.slice(0, 12), b("a4", 8));
    for (let k = 12; k < 18; k += 2) {
      cur = [...cur, h[k], h[k + 1]];
      await client.publish("conv", cur);
    }
    cur = [...splice(cur, b("a6", 12)), h[18], h[19]];
    await client.publish("conv", cur);
    await client.flush();
    const ex = await client.expand("conv", "sys", "t8");
    assert.deepEqual(
      ex.messages.map((m) => m.id),
      h.slice(0, 20).map((m) => m.id),
    );
    await assert.rejects(client.expand("conv", "nope"), UnknownMessageError);
  });

  it("bounds expand and search; names expired bodies", async () => {
    const client = await BriefdClient.connect(nc, { tenant: "p4", expandLimits: { maxMessages: 3, maxBytes: 2000, maxMatches: 2 } });
    const h = conversation(6, 40); // tool results of about 1 KB
    await client.publish("conv", h);
    await client.flush();
    let ex = await client.expand("conv", "task", "t5");
    assert.deepEqual([ex.messages.map((m) => m.id), ex.truncated, ex.nextId], [["task", "a0", "t0"], true, "a1"]);
    ex = await client.expand("conv", "t0", "t5");
    assert.deepEqual([ex.messages.map((m) => m.id), ex.nextId], [["t0", "a1"], "t1"]);

    const all = await client.search("conv", "OUTPUT OF STEP", { all: true });
    assert.deepEqual([all.matches.map((m) => m.id), all.truncated, all.searched], [["t0", "t1"], true, 14]);
    assert.ok(all.matches[0].snippet.startsWith("output of step t0: all tests <pass>"));
    const answer = JSON.parse(await client.handleExpandTool("conv", '{"query":"step"}'));
    assert.equal(answer.error, "nothing in this conversation has been compacted yet");

    // t1 and t2 leave the body stream, as MaxAge would drop them.
    const { bodyHash, encodeMessage } = await import("../src/index.js");
    for (const m of [h[5], h[7]]) {
      await jsm.streams.purge("BRIEFD_BODIES", { filter: `briefd.body.p4.conv.${bodyHash(encodeMessage(m))}` });
    }
    // A client that has not read them yet (bodies read once are cached).
    const fresh = await BriefdClient.connect(nc, { tenant: "p4" });
    const err = await fresh.expand("conv", "a1", "a3").catch((e: unknown) => e);
    assert.ok(err instanceof ExpiredError, String(err));
    assert.deepEqual(err.ids, ["t1", "t2"]);
    assert.match(err.message, /2 messages from t1 to t2 expired from the body stream/);
    assert.deepEqual(err.expansion.messages.map((m) => m.id), ["a1", "a2", "a3"]);
    const tool = JSON.parse(await fresh.handleExpandTool("conv", '{"from_id":"a1","to_id":"a3"}'));
    assert.deepEqual(tool.expired_ids, ["t1", "t2"]);
    assert.match(tool.note, /2 messages from t1 to t2 expired and cannot be read/);
    const s = await fresh.search("conv", "step", { all: true });
    assert.deepEqual(s.expired, ["t1", "t2"]);
  });

  it("refuses bad ids and oversized bodies before sending anything", async () => {
    const client = await BriefdClient.connect(nc, { tenant: "p5" });
    await assert.rejects(client.publish("a.b", conversation(1)), /id must be 1-128 characters/);
    await assert.rejects(client.publish("conv", [{ id: "x", role: "user", content: "x".repeat(17 << 20) }]), /message body too large/);
    await assert.rejects(BriefdClient.connect(nc, { tenant: "bad tenant" }), /id must be/);
    const pub = new Publisher(nc, jsm, {});
    const p = await pub.publish("p5", "conv", conversation(1));
    const r = await p.wait();
    assert.ok(r.streamSeq > 0 && r.full && r.bodies === 4);
    const d = await (await pub.publish("p5", "conv", conversation(1))).wait();
    assert.ok(d.duplicate && d.bodies === 0 && d.seq === r.seq);
  });

  it("a worker compacts a TypeScript snapshot; latest reads the KV bucket", async () => {
    const client = await BriefdClient.connect(nc, { tenant: "p6", contextWindow: 3000 });
    const h = conversation(30, 10);
    await client.publish("conv", h);
    await client.flush();
    const b = await poll("briefing", () => client.latest("conv"));
    assert.ok(b.tokens_after < b.tokens_before);
    const { messages, briefing } = await client.prepare("conv", h);
    assert.equal(briefing?.boundary_id, b.boundary_id);
    assert.ok(messages.length < h.length);
    assert.equal(messages[2].id, `briefing:${b.boundary_id}`);
  });

  it("re-sends what a NATS outage lost; the next snapshot resolves", async () => {
    const c2 = new Cleanup();
    try {
      const srv = await startNats(c2);
      await startWorker(c2, srv.url, null, ["--context-window", "100000"]);
      const nc2 = await connect({ servers: srv.url, maxReconnectAttempts: -1, reconnectTimeWait: 100 });
      c2.add(() => nc2.close());
      const errors: Error[] = [];
      const client = await BriefdClient.connect(nc2, {
        tenant: "p7",
        onError: (e) => errors.push(e),
        publisher: { ackTimeoutMs: 500, publishRetries: 1, publishRetryWaitMs: 50 },
      });
      const h = conversation(6);
      await client.publish("conv", h.slice(0, 6));
      await client.flush();
      await srv.stop();
      // Handed to a connection that is down: the acks never come.
      await client.publish("conv", h.slice(0, 10));
      await assert.rejects(client.flush(), /timeout|TIMEOUT|disconnect|closed/i);
      assert.equal(client.stats().failed, 1);
      await srv.start();
      await poll("reconnect", async () => (nc2.isClosed() ? null : (await nc2.flush().then(() => true).catch(() => null))));
      // The next snapshot sends the bodies still missing and extends only a stored base.
      await client.publish("conv", h);
      await client.flush();
      const fresh = await BriefdClient.connect(nc2, { tenant: "p7" });
      const ex = await fresh.expand("conv", "sys", "t5");
      assert.deepEqual(ex.messages.map((m) => m.id), h.map((m) => m.id));
      const ms = await manifests(await nc2.jetstreamManager(), "p7", "conv");
      assert.equal(ms[ms.length - 1].base === 0 || ms[ms.length - 1].base === ms[0].seq, true, "a delta only on the stored snapshot");
      assert.ok(errors.length >= 1);
    } finally {
      await c2.run();
    }
  });
});
