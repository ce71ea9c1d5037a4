// The stack lease: one run per stack, from one checkout or several, kept beside the stack's state
// (a file:// folder, a gs:// bucket) so operators on two machines never drive one stack at once.
import { spawn, spawnSync } from "node:child_process";
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as http from "node:http";
import type { AddressInfo } from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { runCli } from "../../automation/cli";
import { ExitCode, UserError } from "../../automation/errors";
import {
  LEASE_TTL_MS,
  type LeaseStore,
  type LockHolder,
  acquireLease,
  fileLeaseStore,
  gcsLeaseStore,
  leaseStoreFor,
  lockPath,
  locksDir,
  parseHolder,
} from "../../automation/lock";
import { gcsRequester } from "../../automation/gcs";
import { ROOT, cleanupRepos, makeRepo, memoryGcs, testContext } from "./helpers";

const NOW = new Date("2026-11-30T07:00:00Z");

function holder(overrides: Partial<LockHolder>): string {
  return JSON.stringify({
    pid: 1,
    host: "ws1",
    command: "up staging",
    startedAt: NOW.toISOString(),
    renewedAt: NOW.toISOString(),
    id: "other",
    ...overrides,
  });
}

function lease(store: LeaseStore, overrides: Partial<Parameters<typeof acquireLease>[0]> = {}) {
  return acquireLease({
    store,
    target: "foundation/staging",
    command: "up staging --layer foundation",
    host: "ws1",
    now: () => NOW,
    releaseOnExit: false,
    ...overrides,
  });
}

/** Polls `check` every 20 ms until it holds, at most `timeoutMs`. */
async function eventually(
  what: string,
  check: () => boolean | Promise<boolean>,
  timeoutMs = 10_000,
) {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe("stack lease in a file", () => {
  let file: string;
  let store: LeaseStore;
  beforeEach(() => {
    file = lockPath(path.join(makeRepo(), ".pulumi-state", "locks"), "talos-platform", "staging");
    store = fileLeaseStore(file);
  });
  afterEach(cleanupRepos);

  it("holds pid, host, command and times in one file per project and stack, removed on release", async () => {
    const held = await lease(store, { pid: 4242 });
    assert.equal(held.where, file);
    const written = JSON.parse(fs.readFileSync(file, "utf8"));
    assert.deepEqual(
      { ...written, id: typeof written.id },
      {
        pid: 4242,
        host: "ws1",
        command: "up staging --layer foundation",
        startedAt: "2026-11-30T07:00:00.000Z",
        renewedAt: "2026-11-30T07:00:00.000Z",
        id: "string",
      },
    );
    await held.release();
    assert.equal(fs.existsSync(file), false);
    await held.release(); // twice is harmless
  });

  it("refuses a second run on the same stack, naming who holds it (exit 4)", async () => {
    await lease(store, { pid: 100 });
    await assert.rejects(
      lease(store, { pid: 200, isAlive: () => true }),
      (error: UserError) =>
        error.exitCode === ExitCode.locked &&
        error.message ===
          `foundation/staging: another run of the platform CLI holds this stack; got pid 100 on ws1 running "up staging --layer foundation" since 2026-11-30T07:00:00.000Z. Wait for it to finish. A lease nobody renews is taken over after 3 minutes; if that run is gone for sure, delete ${file}`,
    );
    assert.equal(parseHolder(fs.readFileSync(file, "utf8")).pid, 100, "the holder's lease stays");
  });

  it("lets other stacks run at the same time", async () => {
    await lease(store);
    const dir = path.dirname(path.dirname(file));
    await lease(fileLeaseStore(lockPath(dir, "talos-platform", "prod")));
    await lease(fileLeaseStore(lockPath(dir, "talos-platform-app", "staging")));
  });

  it("takes over a lease left by a process of this host that no longer runs", async () => {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, holder({ pid: 999_999 }));
    const held = await lease(store, { pid: 300, isAlive: (pid) => pid !== 999_999 });
    assert.equal(parseHolder(fs.readFileSync(file, "utf8")).pid, 300);
    assert.deepEqual(fs.readdirSync(path.dirname(file)), ["staging.lock"], "nothing left aside");
    await held.release();
  });

  it("keeps another host's lease while it is renewed, and takes it over once it is not", async () => {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, holder({ host: "ws2" }));
    const within = new Date(NOW.getTime() + LEASE_TTL_MS - 1000);
    await assert.rejects(lease(store, { now: () => within, isAlive: () => false }), /pid 1 on ws2/);
    const after = new Date(NOW.getTime() + LEASE_TTL_MS + 1000);
    const held = await lease(store, { now: () => after });
    assert.equal(parseHolder(fs.readFileSync(file, "utf8")).host, "ws1");
    await held.release();
  });

  it("treats an unreadable lease as held, not stale", async () => {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, "{half a");
    await assert.rejects(lease(store, { isAlive: () => false }), /another run/);
    assert.equal(fs.readFileSync(file, "utf8"), "{half a");
  });

  it("does not remove a lease that is no longer its own", async () => {
    const held = await lease(store, { pid: 1 });
    fs.writeFileSync(file, holder({ pid: 2 }));
    await held.release();
    assert.equal(parseHolder(fs.readFileSync(file, "utf8")).pid, 2);
  });

  it("renews itself while held, and knows when another run took it over", async () => {
    let clock = NOW.getTime();
    const held = await lease(store, { now: () => new Date((clock += 1000)), renewEveryMs: 20 });
    const first = parseHolder(fs.readFileSync(file, "utf8")).renewedAt;
    await eventually(
      "a renewal",
      () => parseHolder(fs.readFileSync(file, "utf8")).renewedAt !== first,
    );
    assert.equal(held.lost(), false);
    fs.writeFileSync(file, holder({ host: "ws2", id: "thief" }));
    await eventually("the loss noticed", () => held.lost());
    await held.release();
    assert.equal(
      parseHolder(fs.readFileSync(file, "utf8")).id,
      "thief",
      "the new holder's lease stays",
    );
  });

  it("releases the lease when the process exits without releasing it", () => {
    const script = `
      const { acquireLease, fileLeaseStore } = require("./automation/lock");
      acquireLease({ store: fileLeaseStore(${JSON.stringify(file)}), target: "t", command: "up" })
        .then(() => process.exit(3));`;
    const result = spawnSync(
      process.execPath,
      ["-r", "ts-node/register/transpile-only", "-e", script],
      {
        cwd: ROOT,
        encoding: "utf8",
      },
    );
    assert.equal(result.status, 3, result.stderr);
    assert.equal(fs.existsSync(file), false);
  });

  it("takes over the lease of a run that was killed", async () => {
    const script = `
      const { acquireLease, fileLeaseStore } = require("./automation/lock");
      acquireLease({ store: fileLeaseStore(${JSON.stringify(file)}), target: "t", command: "up" })
        .then(() => process.stdout.write("locked\\n"));
      setInterval(() => {}, 1000);`;
    const child = spawn(process.execPath, ["-r", "ts-node/register/transpile-only", "-e", script], {
      cwd: ROOT,
      stdio: ["ignore", "pipe", "inherit"],
    });
    await new Promise<void>((resolve) => child.stdout.once("data", () => resolve()));
    assert.equal(parseHolder(fs.readFileSync(file, "utf8")).pid, child.pid);
    const thisHost = { host: os.hostname(), now: () => new Date() };
    await assert.rejects(lease(store, thisHost), /another run/);
    child.kill("SIGKILL");
    await new Promise((resolve) => child.once("exit", resolve));
    assert.equal(parseHolder(fs.readFileSync(file, "utf8")).pid, child.pid, "left behind");
    const held = await lease(store, thisHost);
    assert.equal(parseHolder(fs.readFileSync(file, "utf8")).pid, process.pid);
    await held.release();
  });
});

/** Cloud Storage's JSON API on loopback, answered by the in-memory bucket (the real HTTP path). */
async function fakeGcs() {
  const bucket = memoryGcs();
  const server = http.createServer((req, res) => {
    let body = "";
    req.on("data", (chunk: Buffer) => (body += chunk.toString()));
    req.on("end", () => {
      const method = req.method as "GET" | "POST" | "DELETE";
      void bucket(method, `http://gcs${req.url}`, method === "POST" ? body : undefined).then(
        (answer) => {
          res.writeHead(
            answer.status,
            answer.generation && method === "GET" ? { "x-goog-generation": answer.generation } : {},
          );
          res.end(
            method === "POST" && answer.status === 200
              ? JSON.stringify({ generation: answer.generation })
              : answer.body,
          );
        },
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const host = `127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    objects: bucket.objects,
    host,
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

describe("stack lease in a gs:// bucket", () => {
  let gcs: Awaited<ReturnType<typeof fakeGcs>>;
  before(async () => {
    gcs = await fakeGcs();
  });
  after(() => gcs.close());
  beforeEach(() => gcs.objects.clear());
  afterEach(cleanupRepos);

  it("is an object beside the stack's state, written only if absent, changed only at its generation", async () => {
    const env = { STORAGE_EMULATOR_HOST: gcs.host };
    const { store, local } = leaseStoreFor(
      makeRepo(),
      { project: "talos-platform", env: "prod", backendUrl: "gs://example-state/platform" },
      env,
    );
    assert.equal(local, false);
    assert.equal(
      store.where,
      "gs://example-state/platform/.platform-locks/talos-platform/prod.lock",
    );
    assert.equal(await store.create("a"), true);
    assert.equal(await store.create("b"), false, "exists");
    const read = await store.read();
    assert.equal(read?.body, "a");
    assert.equal(await store.replace("c", "1"), false, "not at that generation");
    assert.equal(await store.replace("c", read!.version), true);
    assert.equal(await store.remove(read!.version), false, "the generation moved on");
    assert.equal(await store.remove((await store.read())!.version), true);
    assert.equal(await store.read(), undefined);
  });

  it("keeps two operators on two machines from holding one stack at once", async () => {
    const env = { STORAGE_EMULATOR_HOST: gcs.host };
    const store = () =>
      gcsLeaseStore(
        "example-state",
        "platform/.platform-locks/talos-platform/prod.lock",
        gcsRequester(env),
        env,
      );
    const first = await lease(store(), { host: "ws1", pid: 10 });
    await assert.rejects(lease(store(), { host: "ws2", pid: 10 }), /pid 10 on ws1/);
    await first.release();
    const second = await lease(store(), { host: "ws2", pid: 10 });
    await second.release();
    assert.equal(gcs.objects.size, 0);
  });
});

describe("stack lease around the engine", () => {
  afterEach(cleanupRepos);

  it("is held while the engine runs and released afterwards, also after a failure", async () => {
    const root = makeRepo();
    for (const error of [undefined, new Error("code: 255")]) {
      const ctx = testContext({ repoRoot: root });
      const file = lockPath(locksDir(root), "talos-platform", "staging");
      let held: LockHolder | undefined;
      ctx.workspaces.during = () => {
        held = parseHolder(fs.readFileSync(file, "utf8"));
      };
      ctx.workspaces.runs.up = error ? { error } : {};
      const code = await runCli(["up", "staging"], ctx);
      assert.equal(code, error ? ExitCode.failed : ExitCode.ok);
      assert.equal(held?.command, "up staging --layer foundation");
      assert.equal(held?.host, "test-host");
      assert.equal(fs.existsSync(file), false, "released");
    }
  });

  it("refuses a run while another holds the stack, without starting the engine", async () => {
    const root = makeRepo();
    const file = lockPath(locksDir(root), "talos-platform", "staging");
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(
      file,
      holder({ pid: 77, host: "test-host", command: "up staging --layer foundation" }),
    );
    const ctx = testContext({ repoRoot: root });
    assert.equal(await runCli(["preview", "staging"], ctx), ExitCode.locked);
    assert.match(
      ctx.stderr.text,
      /^foundation\/staging: another run of the platform CLI holds this stack; got pid 77 on test-host/m,
    );
    assert.equal(ctx.workspaces.callsOf("openStack").length, 0);
  });

  it("keeps two checkouts on two machines sharing one backend from running at once", async () => {
    const backend = fs.mkdtempSync(path.join(os.tmpdir(), "shared-backend-"));
    const env = { PULUMI_BACKEND_URL: `file://${backend}`, PULUMI_CONFIG_PASSPHRASE: "p" };
    const first = testContext({
      repoRoot: makeRepo(),
      env,
      host: { pid: 1, hostname: "ws1", isAlive: () => true },
    });
    const second = testContext({
      repoRoot: makeRepo(),
      env,
      host: { pid: 2, hostname: "ws2", isAlive: () => true },
    });
    let refused: number | undefined;
    first.workspaces.during = async () => {
      refused = await runCli(["up", "staging"], second);
    };
    assert.equal(await runCli(["up", "staging"], first), ExitCode.ok);
    assert.equal(refused, ExitCode.locked);
    assert.match(second.stderr.text, /holds this stack; got pid 1 on ws1/);
    assert.match(
      second.stderr.text,
      new RegExp(`${backend}/\\.platform-locks/talos-platform/staging\\.lock`),
    );
    assert.equal(second.workspaces.callsOf("openStack").length, 0);
    fs.rmSync(backend, { recursive: true, force: true });
  });
});
