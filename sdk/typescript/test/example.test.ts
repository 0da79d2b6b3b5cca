// The TypeScript agent loop example, run as a user runs it: a process
// against nats-server, redis-server and a real worker.

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { after, before, describe, it } from "node:test";
import { Cleanup, repoRoot, startNats, startRedis, startWorker } from "./servers.js";

describe("examples/agent-loop", () => {
  const c = new Cleanup();
  let natsURL = "";
  let redisURL = "";
  before(async () => {
    natsURL = (await startNats(c)).url;
    redisURL = await startRedis(c);
    await startWorker(c, natsURL, redisURL);
  });
  after(() => c.run());

  it("the model expands a compacted range and gets the originals back", async () => {
    const script = join(repoRoot, "sdk", "typescript", "dist", "examples", "agent-loop.js");
    const { stdout } = await promisify(execFile)(process.execPath, [script], {
      env: { ...process.env, BRIEFD_NATS_URL: natsURL, BRIEFD_REDIS_URL: redisURL, BRIEFD_TENANT: "ex" },
      timeout: 120_000,
    });
    assert.equal(stdout, "the model called expand_history: true\nit got the original messages back, verbatim: true\n");
  });
});
