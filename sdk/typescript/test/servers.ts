// Real servers for the tests, each on a free loopback port with its data in
// a fresh temporary folder: nats-server (the installed binary), redis-server,
// and briefd's own worker and publisher built from the repository with
// `go build`. Every process is stopped when the test ends.

import { type ChildProcess, execFile, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { connect, type NatsConnection } from "nats";

const run = promisify(execFile);

/** The repository's root: sdk/typescript/dist/test/ is four levels down. */
export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "../../../..");

export async function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const srv = createServer();
    srv.unref();
    srv.on("error", rej);
    srv.listen(0, "127.0.0.1", () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => res(port));
    });
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface Proc {
  child: ChildProcess;
  output: () => string;
  stop: () => Promise<void>;
}

export function start(cmd: string, args: string[], env: NodeJS.ProcessEnv = {}): Proc {
  const child = spawn(cmd, args, { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  child.stdout!.on("data", (d) => (out += d));
  child.stderr!.on("data", (d) => (out += d));
  return {
    child,
    output: () => out,
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((r) => child.once("exit", r));
      child.kill("SIGTERM");
      const t = setTimeout(() => child.kill("SIGKILL"), 10_000);
      await exited;
      clearTimeout(t);
    },
  };
}

async function waitFor(what: string, p: Proc, ok: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (p.child.exitCode !== null) throw new Error(`${what} exited ${p.child.exitCode}:\n${p.output()}`);
    if (await ok().catch(() => false)) return;
    if (Date.now() > deadline) throw new Error(`${what} not ready after ${timeoutMs} ms:\n${p.output()}`);
    await sleep(50); // polling a process we started
  }
}

/** A test context's cleanup list, run in reverse order. */
export class Cleanup {
  private fns: (() => Promise<void> | void)[] = [];
  add(fn: () => Promise<void> | void): void {
    this.fns.push(fn);
  }
  async run(): Promise<void> {
    for (const fn of this.fns.reverse()) {
      try {
        await fn();
      } catch {
        // best effort: the other processes still stop
      }
    }
    this.fns = [];
  }
}

export interface NatsServer {
  url: string;
  proc: Proc;
  /** stop stops the server; start starts it again on the same port and store. */
  stop: () => Promise<void>;
  start: () => Promise<void>;
}

/** startNats runs nats-server with JetStream; maxPayload sets max_payload. */
export async function startNats(c: Cleanup, opts: { maxPayload?: number } = {}): Promise<NatsServer> {
  const dir = mkdtempSync(join(tmpdir(), "briefd-nats-"));
  c.add(() => rmSync(dir, { recursive: true, force: true }));
  const port = await freePort();
  const conf = join(dir, "nats.conf");
  writeFileSync(
    conf,
    `listen: 127.0.0.1:${port}\njetstream { store_dir: "${join(dir, "js")}" }\n` + (opts.maxPayload ? `max_payload: ${opts.maxPayload}\n` : ""),
  );
  const bin = await natsServerBinary();
  const url = `nats://127.0.0.1:${port}`;
  const srv: NatsServer = {
    url,
    proc: start(bin, ["-c", conf]),
    stop: () => srv.proc.stop(),
    start: async () => {
      srv.proc = start(bin, ["-c", conf]);
      await ready();
    },
  };
  const ready = () =>
    waitFor("nats-server", srv.proc, async () => {
      const nc = await connect({ servers: url, reconnect: false });
      await nc.close();
      return true;
    });
  c.add(() => srv.proc.stop());
  await ready();
  return srv;
}

/** startRedis runs redis-server without persistence. */
export async function startRedis(c: Cleanup): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), "briefd-redis-"));
  c.add(() => rmSync(dir, { recursive: true, force: true }));
  const port = await freePort();
  const proc = start(process.env.REDIS_SERVER ?? "redis-server", ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir]);
  c.add(proc.stop);
  await waitFor("redis-server", proc, async () => proc.output().includes("Ready to accept connections"));
  return `redis://127.0.0.1:${port}/0`;
}

let natsBin: Promise<string> | null = null;

/**
 * natsServerBinary is $NATS_SERVER, else the installed nats-server, else
 * the server go.mod pins, built once from the module cache.
 */
function natsServerBinary(): Promise<string> {
  natsBin ??= (async () => {
    if (process.env.NATS_SERVER) return process.env.NATS_SERVER;
    try {
      await run("nats-server", ["--version"]);
      return "nats-server";
    } catch {
      const dir = mkdtempSync(join(tmpdir(), "briefd-nats-bin-"));
      process.on("exit", () => rmSync(dir, { recursive: true, force: true }));
      await run("go", ["build", "-o", join(dir, "nats-server"), "github.com/nats-io/nats-server/v2"], { cwd: repoRoot, maxBuffer: 1 << 24 });
      return join(dir, "nats-server");
    }
  })();
  return natsBin;
}

let built: Promise<string> | null = null;

/** goBinaries builds cmd/worker and cmd/publisher once per test process. */
export function goBinaries(): Promise<string> {
  built ??= (async () => {
    const dir = mkdtempSync(join(tmpdir(), "briefd-bin-"));
    process.on("exit", () => rmSync(dir, { recursive: true, force: true }));
    await run("go", ["build", "-o", dir, "./cmd/worker", "./cmd/publisher"], { cwd: repoRoot, maxBuffer: 1 << 24 });
    return dir;
  })();
  return built;
}

/** startWorker runs a real briefd worker against nats (and redis, when given) and waits for the streams. */
export async function startWorker(c: Cleanup, natsURL: string, redisURL: string | null, extra: string[] = []): Promise<Proc> {
  const bin = await goBinaries();
  const args = ["run", "--nats-url", natsURL, "--http-addr", "", "--log-level", "warn", "--context-window", "10000", ...extra];
  if (redisURL) args.push("--redis-url", redisURL);
  const proc = start(join(bin, "worker"), args);
  c.add(proc.stop);
  const nc = await connect({ servers: natsURL });
  try {
    const jsm = await nc.jetstreamManager();
    await waitFor("worker", proc, async () => {
      await jsm.consumers.info("BRIEFD_SNAPSHOTS", "briefd-workers");
      return true;
    });
  } finally {
    await nc.close();
  }
  return proc;
}

/** publisherCLI runs the Go publisher command and returns its stdout. */
export async function publisherCLI(args: string[]): Promise<{ stdout: string; stderr: string }> {
  const bin = await goBinaries();
  return run(join(bin, "publisher"), args, { maxBuffer: 1 << 26 });
}

/** natsConnect connects and closes the connection at cleanup. */
export async function natsConnect(c: Cleanup, url: string): Promise<NatsConnection> {
  const nc = await connect({ servers: url });
  c.add(() => nc.close());
  return nc;
}

/** poll calls f until it returns a value other than null/undefined, or fails after timeoutMs. */
export async function poll<T>(what: string, f: () => Promise<T | null | undefined>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await f();
    if (v !== null && v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await sleep(50); // polling external state (a worker's output)
  }
}
