// Tests of the SDK's pure parts: Go-identical JSON, splice and its
// wrapper, validation, the originals' order, zstd frame sizes, snippets,
// clipping, the tool's arguments and answers. Expected strings marked "Go"
// were printed by Go's encoding/json and the briefd package.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { repoRoot } from "./servers.js";
import { decompress } from "fzstd";
import {
  BoundaryMissingError,
  encodeControl,
  encodeMessage,
  escapeBriefing,
  expandFooter,
  expandTool,
  NothingToSpliceError,
  OriginalOrder,
  splice,
  unwrapBriefing,
  validate,
  ValidationError,
  wrapBriefing,
  zstdContentSize,
  bodyHash,
  decodeManifest,
  MalformedError,
  type Briefing,
  type Message,
} from "../src/index.js";
import { clipMessage, clipUTF8, compileQuery, InvalidQueryError, parseToolArgs, searchText, snippet } from "../src/expand.js";

const briefing = (boundary: string, text = "brief"): Briefing => ({
  conversation_id: "c",
  boundary_id: boundary,
  position: 3,
  text,
  tier: "deterministic",
  engine_version: "x",
  input_hash: "",
  depth: 0,
  compacted_ids: null,
  tokens_before: 0,
  tokens_after: 0,
  span_tokens: 0,
  briefing_tokens: 0,
  created_at: "2026-01-01T00:00:00Z",
});

describe("encodeMessage", () => {
  it("writes Go's json.Marshal bytes", () => {
    const m: Message = {
      id: "m<1>",
      role: "assistant",
      content: 'a<b>&c \u2028\u2029 \t\x01\x7f "q" \\ é 😀 \b\f',
      name: "n",
      tool_calls: [{ id: "c1", type: "function", function: { name: "bash", arguments: '{"cmd":"ls <x>"}' } }],
      metadata: { z: "1", a: "2", é: "3", B: "4" },
    };
    // Go
    const want =
      '{"id":"m\\u003c1\\u003e","role":"assistant","content":"a\\u003cb\\u003e\\u0026c \\u2028\\u2029 \\t\\u0001\x7f \\"q\\" \\\\ é 😀 \\b\\f","name":"n","tool_calls":[{"id":"c1","type":"function","function":{"name":"bash","arguments":"{\\"cmd\\":\\"ls \\u003cx\\u003e\\"}"}}],"metadata":{"B":"4","a":"2","z":"1","é":"3"}}';
    assert.equal(encodeMessage(m), want);
    const p: Message = {
      id: "p",
      role: "user",
      content: [{ type: "text", text: "hi" }, { type: "image_url", image_url: { url: "http://x/y.png", detail: "low" } }, { type: "input_audio" }],
      pinned: true,
    };
    assert.equal(encodeMessage(p), '{"id":"p","role":"user","content":[{"type":"text","text":"hi"},{"type":"image_url","image_url":{"url":"http://x/y.png","detail":"low"}},{"type":"input_audio"}],"pinned":true}');
    assert.equal(encodeMessage({ id: "n", role: "tool", content: null, tool_call_id: "c" }), '{"id":"n","role":"tool","content":"","tool_call_id":"c"}');
    // Fields outside the schema are not published.
    assert.equal(encodeMessage({ id: "x", role: "user", content: "hi", extra: 1 } as Message), '{"id":"x","role":"user","content":"hi"}');
  });
});

describe("splice", () => {
  const h: Message[] = [
    { id: "m1", role: "system", content: "You are a coding agent." },
    { id: "m2", role: "user", content: "Fix the failing test." },
    { id: "m3", role: "assistant", content: null, tool_calls: [{ id: "c1", type: "function", function: { name: "bash", arguments: '{"command":"go test ./..."}' } }] },
    { id: "m4", role: "tool", tool_call_id: "c1", content: "FAIL: TestParse" },
    { id: "m5", role: "assistant", content: "The parser rejects empty input; fixing it." },
  ];
  it("keeps the pinned head, adds the briefing, keeps the tail", () => {
    const out = splice(h, briefing("m5", "Ran go test: <fails> & more"));
    assert.deepEqual(out.map((m) => m.id), ["m1", "m2", "briefing:m5", "m5"]);
    assert.deepEqual(out[2].metadata, { "briefd.kind": "briefing", "briefd.boundary": "m5", "briefd.position": "3" });
    assert.equal(unwrapBriefing(out[2].content as string), "Ran go test: <fails> & more");
    // Idempotent: splicing the spliced history again changes nothing.
    assert.deepEqual(splice(out, briefing("m5", "Ran go test: <fails> & more")), out);
    assert.throws(() => splice([h[0], h[1], h[4]], briefing("m5")), NothingToSpliceError);
    assert.throws(() => splice(h, briefing("gone")), BoundaryMissingError);
    assert.throws(() => splice(h, briefing("m4")), /tool result/);
    assert.equal(h.length, 5, "the history is not modified");
  });
  it("keeps the messages a briefing's pinned_ids name", () => {
    const h2: Message[] = [...h.slice(0, 4), { id: "note", role: "assistant", content: "Remember: the fixture is in testdata/." }, h[4]];
    const out = splice(h2, { ...briefing("m5"), pinned_ids: ["note"] });
    assert.deepEqual(out.map((m) => m.id), ["m1", "m2", "note", "briefing:m5", "m5"]);
  });
  it("wraps as Go's WrapBriefing", () => {
    // Go: briefd.WrapBriefing("a<b&c</compacted-history>")
    const w = wrapBriefing("a<b&c</compacted-history>");
    assert.ok(w.startsWith("The earlier part of this conversation was compacted into the briefing below, for you (the assistant)"));
    assert.ok(w.endsWith("\n<compacted-history>\na<b&c&lt;/compacted-history>\n</compacted-history>"));
    assert.equal(unwrapBriefing(w), "a<b&c</compacted-history>");
    // The cases of Go's TestEscapeBriefing.
    for (const [text, escaped] of [
      ["go test ./... && echo ok < in > out", "go test ./... && echo ok < in > out"],
      ['<ul class="errorlist"><li>', '<ul class="errorlist"><li>'],
      ["a</compacted-history>b", "a&lt;/compacted-history>b"],
      ["<Compacted-History>", "&lt;Compacted-History>"],
      ["&lt; and &amp;", "&amp;lt; and &amp;amp;"],
      ["&&lt;compacted-history", "&&amp;lt;compacted-history"],
      ["&amp;amp;lt;", "&amp;amp;amp;lt;"],
    ]) {
      assert.equal(escapeBriefing(text), escaped);
      assert.equal(unwrapBriefing(wrapBriefing(text)), text);
    }
    const legacy =
      "Earlier framing. &lt; is <, &amp; is &.\n<compacted-history>\na &amp;&amp; b &lt;ul> &amp;lt;\n</compacted-history>";
    assert.equal(unwrapBriefing(legacy), "a && b <ul> &lt;");
    assert.equal(unwrapBriefing("no wrapper"), null);
  });
  it("footer is Go's ExpandFooter", () => {
    assert.equal(expandFooter("m0002", "m0040"), "Compacted messages m0002 to m0040 verbatim: the expand_history tool (from_id, to_id, or a query).");
    assert.equal(expandFooter("m0002", "m0002"), "Compacted message m0002 verbatim: the expand_history tool (from_id).");
  });
});

describe("validate", () => {
  const call = (id: string) => ({ id, type: "function", function: { name: "f", arguments: "{}" } });
  const cases: [string, Message[], RegExp | null][] = [
    ["valid", [{ id: "a", role: "user", content: "x" }, { id: "b", role: "assistant", tool_calls: [call("c")] }, { id: "c", role: "tool", tool_call_id: "c", content: "" }], null],
    ["open call in the last turn", [{ id: "a", role: "user", content: "x" }, { id: "b", role: "assistant", tool_calls: [call("c")] }], null],
    ["duplicate id", [{ id: "a", role: "user" }, { id: "a", role: "user" }], /duplicate id \(first at #0\)/],
    ["empty id", [{ id: "", role: "user" }], /empty id/],
    ["unknown role", [{ id: "a", role: "robot" as "user" }], /unknown role "robot"/],
    ["orphan result", [{ id: "a", role: "tool", tool_call_id: "x" }], /which no assistant message makes/],
    ["unanswered", [{ id: "b", role: "assistant", tool_calls: [call("c")] }, { id: "u", role: "user" }], /tool call "c" is never answered/],
    ["lone surrogate", [{ id: "a", role: "user", content: "\ud800" }], /content is not valid UTF-8/],
    ["pinned tool", [{ id: "b", role: "assistant", tool_calls: [call("c")] }, { id: "c", role: "tool", tool_call_id: "c", pinned: true }], /cannot be pinned/],
  ];
  for (const [name, msgs, want] of cases) {
    it(name, () => {
      if (want === null) validate(msgs);
      else assert.throws(() => validate(msgs), (e: Error) => e instanceof ValidationError && want.test(e.message));
    });
  }
});

describe("protocol", () => {
  it("hashes bodies", () => {
    assert.equal(bodyHash("{}").length, 22);
    assert.equal(bodyHash(Buffer.from("{}")), bodyHash("{}"));
  });
  it("decodes manifests as the workers do", () => {
    const ok = decodeManifest(Buffer.from('{"v":1,"tenant":"t","conversation_id":"c","seq":2,"base":1,"base_stream_seq":5,"keep":1,"append":[],"created_at":"x"}'));
    assert.equal(ok.keep, 1);
    for (const bad of ['{"v":2}', '{"v":1,"tenant":"a.b"}', '{"v":1,"tenant":"t","conversation_id":"c","seq":2,"base":1,"keep":0,"append":[]}', "nope"]) {
      assert.throws(() => decodeManifest(Buffer.from(bad)), MalformedError, bad);
    }
  });
  it("encodes a snapshot's control as Go's briefd.Control and checks it", () => {
    // Go: json.Marshal(briefd.Control{Mode: "now", TriggerFraction: 0.5, KeepTokens: 2000, Pin: []string{"m0001"}, Focus: "x <y>"})
    const go = '{"mode":"now","trigger_fraction":0.5,"keep_tokens":2000,"pin":["m0001"],"focus":"x \\u003cy\\u003e"}';
    assert.equal(encodeControl({ mode: "now", triggerFraction: 0.5, keepTokens: 2000, pin: ["m0001"], focus: "x <y>" }), go);
    assert.equal(encodeControl({ mode: "auto" }), "");
    assert.equal(encodeControl(undefined), "");
    assert.throws(() => encodeControl({ mode: "later" as "now" }), RangeError);
    assert.throws(() => encodeControl({ triggerFraction: 1.5 }), RangeError);
    assert.throws(() => encodeControl({ keepTokens: -1 }), RangeError);
  });
  it("reads a zstd frame's declared size (a frame from klauspost/compress)", () => {
    const frame = Buffer.from("KLUv/WSIErUAAGhhYmNkZWZnaGlqa2xtAVQNBDB4AwE181ZR", "base64"); // Go: 5000 bytes
    assert.equal(zstdContentSize(frame), 5000);
    assert.equal(decompress(frame, new Uint8Array(5000)).length, 5000);
    assert.throws(() => zstdContentSize(Buffer.from("not zstd")));
  });
});

describe("originals order", () => {
  const e = (id: string) => ({ id, h: "h-" + id });
  it("merges full and spliced lists into the conversation's order", () => {
    const o = new OriginalOrder();
    o.merge(["s", "u", "a1", "t1", "a2"].map(e));
    o.merge(["s", "u", "briefing:a2", "a2", "t2", "a3"].map(e)); // spliced
    o.merge(["s", "u", "briefing:a3", "a3", "t3"].map(e)); // chained
    o.merge([{ id: "t3", h: "edited" }]);
    const got = o.entries();
    assert.deepEqual(got.map((x) => x.id), ["s", "u", "a1", "t1", "a2", "t2", "a3", "t3"]);
    assert.equal(got[7].h, "edited");
  });
});

describe("search and clip helpers", () => {
  it("snippets count code points", () => {
    const text = "😀".repeat(100) + "NEEDLE" + "é".repeat(100);
    const s = snippet(text, 200, 206);
    assert.equal(s, "…" + "😀".repeat(80) + "NEEDLE" + "é".repeat(80) + "…");
    assert.equal(snippet("short needle here", 6, 12), "short needle here");
    const long = "x".repeat(300);
    assert.equal(snippet(long, 0, 300), "x".repeat(120) + "…");
  });
  it("clips at character boundaries", () => {
    assert.equal(clipUTF8("éé", 3), "é");
    assert.equal(clipUTF8("abc", 0), "");
    const m = clipMessage({ id: "a", role: "assistant", content: "x".repeat(50), tool_calls: [{ id: "c", type: "function", function: { name: "fn", arguments: "y".repeat(50) } }] }, 30);
    assert.equal(m.content, "x".repeat(28) + "\n[… clipped by briefd: 22 more bytes]");
    assert.equal(m.tool_calls![0].function.arguments, "\n[… clipped by briefd: 50 more bytes]");
  });
  it("matches substrings case-insensitively and bounds regexps in time", () => {
    const texts = ["Found parser.go here", "nothing", "PARSER.GO and parser.go"];
    const r = compileQuery("c", "parser.go", false).run(texts);
    assert.deepEqual(r.map((x) => x.count), [1, 0, 2]);
    assert.deepEqual(r[0].first, [6, 15]);
    assert.throws(() => compileQuery("c", "(", true), InvalidQueryError);
    assert.throws(() => compileQuery("c", "", false), InvalidQueryError);
    // "…" stands for what a briefing cut, as in the Go client.
    const cut = ["Found the bug in parser.go: an off-by-one.", "key 0123abcd00112233445566778899AABB89abcdef\nnext"];
    const q = (s: string) => compileQuery("c", s, false).run(cut).map((x) => x.count);
    assert.deepEqual(q("Found the…off-by-one"), [1, 0]);
    assert.deepEqual(q("found THE bug … parser.go:  …"), [1, 0]);
    assert.deepEqual(q("0123ABCD…89ABCDEF (24 hex digits)"), [0, 1]);
    assert.deepEqual(q("key…next"), [0, 1]);
    assert.deepEqual(q("0123ABCD…ffff"), [0, 0]);
    assert.throws(() => compileQuery("c", " … …", false), (err: Error) => err instanceof InvalidQueryError && (err.message.match(/invalid search query/g) ?? []).length === 1);
    // The briefing collapses whitespace and marks line breaks and tabs; a query without its marks is a plain substring.
    const code = ["def f():\n\treturn  compute(x,\n        y)"];
    const c = (s: string) => compileQuery("c", s, false).run(code)[0].count;
    assert.equal(c("return compute(x, y)…"), 1);
    assert.equal(c("def f(): ⏎ ⇥ return compute(x, ⏎ y)"), 1);
    assert.equal(c("return compute(x, y)"), 0);
    // A space other than ASCII's is text, as in Go.
    assert.equal(compileQuery("c", "at 3:04:05\u202fPM…", false).run(["y) # at 3:04:05\u202fPM"])[0].count, 1);
    assert.equal(compileQuery("c", "at 3:04:05 PM…", false).run(["y) # at 3:04:05\u202fPM"])[0].count, 0);
    // Matched part after part, in linear time: one expression with "[\s\S]*?" between the parts
    // backtracked past the 2-second bound on a long message.
    const long = [Array.from({ length: 40_000 }, (_, i) => ["self", "return", "value"][i % 3]).join(" ")];
    assert.equal(compileQuery("c", "self…return…HAT052", false).run(long)[0].count, 0);
    const t0 = Date.now();
    assert.throws(() => compileQuery("c", "(a+)+$", true).run(["a".repeat(40) + "b"]), /ran longer than/);
    assert.ok(Date.now() - t0 < 10_000);
  });
  it("searches tool calls as name(arguments)", () => {
    assert.equal(searchText({ id: "a", role: "assistant", content: "hi", tool_calls: [{ id: "c", type: "function", function: { name: "bash", arguments: "{}" } }] }), "hi\nbash({})");
  });
  it("reads tool arguments strictly", () => {
    assert.deepEqual(parseToolArgs('{"from_id":"a"}'), { from_id: "a" });
    assert.match(parseToolArgs('{"from":"a"}') as string, /unknown field "from"/);
    assert.match(parseToolArgs("[]") as string, /not a JSON object/);
    assert.match(parseToolArgs('{"regexp":"yes"}') as string, /regexp must be a boolean/);
  });
  it("defines the tool as docs/schema/expand-answer.v1.json does", () => {
    assert.equal(expandTool.function.name, "expand_history");
    const schema = JSON.parse(readFileSync(join(repoRoot, "docs", "schema", "expand-answer.v1.json"), "utf8"));
    assert.deepEqual(expandTool.function.parameters, schema.$defs.arguments);
  });
});
