// An agent loop with briefd and the expand tool, in TypeScript.
//
// The agent publishes its history after each turn (never waiting for the
// workers) and prepares it before each model call; once a worker has
// compacted the conversation, the model - scripted here, no LLM runs -
// calls expand_history on the range the briefing names and gets the
// original messages back, verbatim.
//
//   BRIEFD_NATS_URL=nats://127.0.0.1:4222 [BRIEFD_REDIS_URL=redis://...] \
//     node dist/examples/agent-loop.js [history.json]
//
// A worker must run against the same NATS (and Redis), with a window small
// enough for the history to compact, e.g. `worker run --context-window 10000`.

import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { connect } from "nats";
import { createClient } from "redis";
import { BriefdClient, encodeMessage, expandTool, ExpandToolName, isBriefing, unwrapBriefing, type Message } from "../src/index.js";

const footerRange = /Compacted messages? (\S+?)(?: to (\S+?))? verbatim:/;
const citedID = /\[([A-Za-z_-]*[0-9][A-Za-z0-9_.:-]*)\]/g;

/** The model: replays a recorded run, and on its first turn after a compaction calls the expand tool on the range the briefing names. */
class ScriptedModel {
  expanded = false;

  reply(msgs: Message[], recorded: Message, turn: number): Message {
    for (const m of msgs) {
      if (!isBriefing(m) || this.expanded) continue;
      const text = unwrapBriefing(m.content as string) ?? "";
      let from = "";
      let to = "";
      const f = footerRange.exec(text);
      if (f) {
        from = f[1];
        to = f[2] ?? "";
      } else {
        const ids = [...text.matchAll(citedID)];
        if (ids.length >= 2) [from, to] = [ids[0][1], ids[1][1]];
      }
      if (!from) continue;
      this.expanded = true;
      const args = JSON.stringify(to ? { from_id: from, to_id: to } : { from_id: from });
      return { id: `expand-${turn}`, role: "assistant", content: "", tool_calls: [{ id: `expand-call-${turn}`, type: "function", function: { name: ExpandToolName, arguments: args } }] };
    }
    return recorded;
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function main(): Promise<void> {
  const here = dirname(fileURLToPath(import.meta.url));
  const file = process.argv[2] ?? join(here, "../../../../examples/histories/openhands-2.json");
  const recorded = (JSON.parse(readFileSync(file, "utf8")) as { messages: Message[] }).messages;
  const original = new Map(recorded.map((m) => [m.id, m]));

  const nc = await connect({ servers: process.env.BRIEFD_NATS_URL ?? "nats://127.0.0.1:4222" });
  const redis = process.env.BRIEFD_REDIS_URL ? createClient({ url: process.env.BRIEFD_REDIS_URL }) : null;
  await redis?.connect();
  const client = await BriefdClient.connect(nc, { tenant: process.env.BRIEFD_TENANT ?? "default", redis: redis ?? undefined, contextWindow: 10000 });
  const conv = process.env.BRIEFD_CONVERSATION ?? `ts-loop-${Date.now()}`;
  const tools = [expandTool]; // sent to the model with each call
  void tools;

  const model = new ScriptedModel();
  let answer = "";
  const history: Message[] = recorded.slice(0, 2); // system prompt and task
  let next = 2;
  const turn = async (k: number) => {
    const { messages } = await client.prepare(conv, history); // before the model call
    const reply = model.reply(messages, recorded[next], k);
    history.push(reply);
    const call = reply.tool_calls?.[0];
    if (call?.function.name === ExpandToolName) {
      answer = await client.handleExpandTool(conv, call.function.arguments);
      history.push({ id: `${reply.id}-result`, role: "tool", tool_call_id: call.id, content: answer });
    } else {
      // The environment: the recorded tool results and user turns up to
      // the next assistant message.
      for (next++; next < recorded.length && recorded[next].role !== "assistant"; next++) history.push(recorded[next]);
    }
    await client.publish(conv, history); // after the turn; returns at once
  };
  for (let k = 0; next < recorded.length; k++) await turn(k);
  // The worker compacts off the hot path: if the run ended before a
  // briefing arrived, go on until the model has seen one.
  const deadline = Date.now() + 30_000;
  for (let n = 0; !model.expanded; n++) {
    if (Date.now() > deadline) throw new Error("no briefing within 30 s: is a worker running with a small --context-window?");
    recorded.push({ id: `wait-${n}`, role: "assistant", content: "Waiting for the tests." });
    await turn(recorded.length);
    await sleep(50);
  }
  await client.close();
  await redis?.quit();
  await nc.close();

  const got = (JSON.parse(answer) as { messages?: Message[] }).messages ?? [];
  const verbatim = got.length > 0 && got.every((m) => encodeMessage(m) === encodeMessage(original.get(m.id)!));
  console.log(`the model called ${ExpandToolName}: ${model.expanded}`);
  console.log(`it got the original messages back, verbatim: ${verbatim}`);
  if (!verbatim) process.exitCode = 1;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  main().catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
