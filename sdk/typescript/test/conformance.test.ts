// Cross-language conformance: the same history published from TypeScript
// and from Go (the publisher command, i.e. the Go client) to a real worker
// gives the same briefing; the same messages have the same body hashes;
// splice, the tool's definition and its answers are byte-identical.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { createClient } from "redis";
import { BriefdClient, encodeMessage, expandTool, Reader, splice, type Briefing, type Message } from "../src/index.js";
import { Cleanup, natsConnect, poll, publisherCLI, repoRoot, startNats, startRedis, startWorker } from "./servers.js";

/** steps are the prefix lengths at which an agent publishes: before each assistant message, and the whole history. */
export function steps(msgs: Message[]): number[] {
  const out: number[] = [];
  for (let k = 1; k < msgs.length; k++) if (msgs[k].role === "assistant") out.push(k);
  out.push(msgs.length);
  return out;
}

export function loadHistory(name: string): { file: string; messages: Message[] } {
  const file = join(repoRoot, "examples", "histories", `${name}.json`);
  return { file, messages: (JSON.parse(readFileSync(file, "utf8")) as { messages: Message[] }).messages };
}

describe("conformance with the Go client and worker", () => {
  const c = new Cleanup();
  let natsURL = "";
  let redisURL = "";
  let client: BriefdClient;
  let redis: ReturnType<typeof createClient>;
  let reader: Reader;

  before(async () => {
    natsURL = (await startNats(c)).url;
    redisURL = await startRedis(c);
    await startWorker(c, natsURL, redisURL);
    redis = createClient({ url: redisURL });
    await redis.connect();
    c.add(async () => {
      await redis.quit();
    });
    const nc = await natsConnect(c, natsURL);
    client = await BriefdClient.connect(nc, { tenant: "conf", redis, contextWindow: 10000 });
    reader = new Reader((await nc.jetstreamManager()) as never, "briefd");
  });
  after(() => c.run());

  // The briefing of a conversation's newest snapshot.
  async function finalBriefing(conv: string, lastStreamSeq: () => Promise<number>): Promise<Briefing> {
    return poll(`briefing of ${conv}'s last snapshot`, async () => {
      const b = await client.latest(conv);
      return b && b.snapshot_seq === (await lastStreamSeq()) ? b : null;
    });
  }

  for (const name of ["tau-bench-2", "swe-agent-8"]) {
    it(`${name}: a snapshot published from TypeScript and one from Go give the same briefing`, async () => {
      const { file, messages } = loadHistory(name);
      const ts = `ts-${name}`;
      const go = `go-${name}`;
      for (const k of steps(messages)) await client.publish(ts, messages.slice(0, k));
      await client.flush();
      await publisherCLI(["publish", "--nats-url", natsURL, "--redis-url", redisURL, "--tenant", "conf", "--conversation", go, "--context-window", "10000", file]);

      const nc = await natsConnect(c, natsURL);
      const jsm = await nc.jetstreamManager();
      const last = (conv: string) => async () => (await jsm.streams.getMessage("BRIEFD_SNAPSHOTS", { last_by_subj: `briefd.snap.conf.${conv}` })).seq;
      const [bt, bg] = await Promise.all([finalBriefing(ts, last(ts)), finalBriefing(go, last(go))]);

      for (const f of ["text", "boundary_id", "position", "compacted_ids", "tokens_before", "tokens_after", "span_tokens", "briefing_tokens", "input_hash", "depth", "tier"] as const) {
        assert.deepEqual(bt[f], bg[f], `briefing field ${f} differs`);
      }
      assert.ok(bt.compacted_ids && bt.compacted_ids.length > 0, "the history was compacted");

      // One message, one body: the TypeScript bodies are Go's bytes.
      const [ot, og] = await Promise.all([reader.originals("conf", ts), reader.originals("conf", go)]);
      assert.deepEqual(ot, og);
      assert.equal(ot.length, messages.length);

      // Splice: byte-identical to Go's briefd.Splice (publisher splice).
      const { stdout } = await publisherCLI(["splice", "--nats-url", natsURL, "--redis-url", redisURL, "--tenant", "conf", "--conversation", go, file]);
      const goSpliced = (JSON.parse(stdout) as { messages: Message[] }).messages;
      const tsSpliced = splice(messages, bt);
      assert.deepEqual(tsSpliced.map((m) => encodeMessage(m)), goSpliced.map((m) => encodeMessage(m)));
      const prepared = await client.prepare(ts, messages);
      assert.deepEqual(prepared.messages, tsSpliced);

      // The tool's answers: the same bytes from either SDK.
      const ids = bt.compacted_ids!.filter((id) => !id.startsWith("briefing:"));
      const word = (messages.find((m) => m.id === ids[1])!.content as string).split(/\s+/).find((w) => /^[A-Za-z]{4,}$/.test(w)) ?? "the";
      for (const args of [
        { from_id: ids[0], to_id: ids[ids.length - 1] },
        { from_id: ids[2] },
        { query: word },
        { query: "[A-Z]{3}[0-9]+", regexp: true },
        { from_id: "nope" },
        { from_id: ids[0], query: "x" },
      ]) {
        const a = JSON.stringify(args);
        const tsOut = await client.handleExpandTool(ts, a);
        const goOut = (await publisherCLI(["tool", "--nats-url", natsURL, "--redis-url", redisURL, "--tenant", "conf", "--conversation", go, a])).stdout.trimEnd();
        assert.equal(tsOut, goOut.replaceAll(go, ts), `tool answer to ${a}`);
      }
    });
  }

  it("TypeScript reads the bodies Go published (zstd-compressed ones included)", async () => {
    const { file, messages } = loadHistory("openhands-2");
    await publisherCLI(["publish", "--nats-url", natsURL, "--redis-url", redisURL, "--tenant", "conf", "--conversation", "go-read", "--turn-by-turn=false", file]);
    const nc = await natsConnect(c, natsURL);
    const jsm = await nc.jetstreamManager();
    const info = await jsm.streams.info("BRIEFD_BODIES", { subjects_filter: "briefd.body.conf.go-read.>" });
    let zstd = 0;
    for (const subj of Object.keys(info.state.subjects ?? {})) {
      const m = await jsm.streams.getMessage("BRIEFD_BODIES", { last_by_subj: subj });
      if (m.header?.get("Content-Encoding") === "zstd") zstd++;
    }
    assert.ok(zstd > 10, `${zstd} compressed bodies`);
    const all = await BriefdClient.connect(nc, { tenant: "conf", redis, expandLimits: { maxMessages: 1000, maxBytes: 1 << 24 } });
    const ex = await all.expand("go-read", messages[0].id, messages[messages.length - 1].id);
    assert.deepEqual(ex.messages.map((m) => encodeMessage(m)), messages.map((m) => encodeMessage(m)));
  });

  it("the tool definition is Go's", async () => {
    const { stdout } = await publisherCLI(["tool", "--definition"]);
    assert.deepEqual(expandTool, JSON.parse(stdout));
  });
});
