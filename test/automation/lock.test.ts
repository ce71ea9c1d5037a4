import { spawn, spawnSync } from "node:child_process";
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as path from "node:path";
import { runCli } from "../../automation/cli";

import { ExitCode, UserError } from "../../automation/errors";
import {
  type LockHolder,
  acquireStackLock,
  lockPath,
  locksDir,
  readHolder,
} from "../../automation/lock";
import { ROOT, cleanupRepos, makeRepo, testContext } from "./helpers";

const base = (dir: string) => ({
  dir,
  layer: "foundation",
  env: "staging",
  command: "up staging --layer foundation",
  host: "ws1",
  releaseOnExit: false,
});

function writeHolder(file: string, holder: LockHolder): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, JSON.stringify(holder));
}

describe("stack lock", () => {
  let dir: string;
  beforeEach(() => {
    dir = path.join(makeRepo(), ".pulumi-state", "locks");
  });
  afterEach(cleanupRepos);

  it("holds pid, host, command and start time in a per-layer-and-stack file, removed on release", () => {
    const lock = acquireStackLock({
      ...base(dir),
      pid: 4242,
      now: () => new Date("2026-11-30T07:00:00Z"),
    });
    assert.equal(lock.path, path.join(dir, "foundation.staging.lock"));
    assert.deepEqual(JSON.parse(fs.readFileSync(lock.path, "utf8")), {
      pid: 4242,
      host: "ws1",
      command: "up staging --layer foundation",
      startedAt: "2026-11-30T07:00:00.000Z",
    });
    lock.release();
    assert.equal(fs.existsSync(lock.path), false);
    lock.release(); // twice is harmless
  });

  it("refuses a second run on the same stack, naming who holds it", () => {
    const first = acquireStackLock({
      ...base(dir),
      pid: 100,
      now: () => new Date("2026-11-30T07:00:00Z"),
    });
    assert.throws(
      () => acquireStackLock({ ...base(dir), pid: 200, isAlive: () => true }),
      (error: UserError) =>
        error.exitCode === ExitCode.locked &&
        error.message ===
          `foundation/staging: another run of the platform CLI holds this stack; got pid 100 on ws1 running "up staging --layer foundation" since 2026-11-30T07:00:00.000Z. Wait for it to finish. If that run is gone (e.g. its machine crashed), delete ${first.path}`,
    );
    assert.equal(readHolder(first.path)?.pid, 100, "the holder's lock is untouched");
  });

  it("lets other stacks and layers run at the same time", () => {
    acquireStackLock(base(dir));
    assert.doesNotThrow(() => acquireStackLock({ ...base(dir), env: "prod" }));
    assert.doesNotThrow(() => acquireStackLock({ ...base(dir), layer: "app" }));
  });

  it("takes over a stale lock left by a process of this host that no longer runs", () => {
    const file = lockPath(dir, "foundation", "staging");
    writeHolder(file, {
      pid: 999_999,
      host: "ws1",
      command: "up staging",
      startedAt: "2026-01-01T00:00:00Z",
    });
    const lock = acquireStackLock({ ...base(dir), pid: 300, isAlive: (pid) => pid !== 999_999 });
    assert.equal(readHolder(file)?.pid, 300);
    assert.deepEqual(
      fs.readdirSync(dir).filter((f) => f.includes("stale")),
      [],
      "nothing left aside",
    );
    lock.release();
  });

  it("never judges a lock of another host stale", () => {
    const file = lockPath(dir, "foundation", "staging");
    writeHolder(file, { pid: 1, host: "other-host", command: "up staging", startedAt: "x" });
    assert.throws(
      () => acquireStackLock({ ...base(dir), isAlive: () => false }),
      /pid 1 on other-host/,
    );
  });

  it("treats an unreadable lock file as held, not stale", () => {
    const file = lockPath(dir, "foundation", "staging");
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(file, "{half a");
    assert.throws(() => acquireStackLock({ ...base(dir), isAlive: () => false }), /another run/);
    assert.equal(fs.readFileSync(file, "utf8"), "{half a");
  });

  it("does not remove a lock that is no longer its own", () => {
    const lock = acquireStackLock({ ...base(dir), pid: 1 });
    writeHolder(lock.path, { pid: 2, host: "ws1", command: "x", startedAt: "y" });
    lock.release();
    assert.equal(readHolder(lock.path)?.pid, 2);
  });

  it("releases the lock when the process exits without releasing it", () => {
    const script = `
      const { acquireStackLock } = require("./automation/lock");
      acquireStackLock({ dir: ${JSON.stringify(dir)}, layer: "foundation", env: "staging", command: "up" });
      process.exit(3);`;
    const result = spawnSync(
      process.execPath,
      ["-r", "ts-node/register/transpile-only", "-e", script],
      {
        cwd: ROOT,
        encoding: "utf8",
      },
    );
    assert.equal(result.status, 3, result.stderr);
    assert.equal(fs.existsSync(lockPath(dir, "foundation", "staging")), false);
  });

  it("detects the lock of a killed run as stale and takes it over", async () => {
    const script = `
      const { acquireStackLock } = require("./automation/lock");
      acquireStackLock({ dir: ${JSON.stringify(dir)}, layer: "foundation", env: "staging", command: "up" });
      process.stdout.write("locked\\n");
      setInterval(() => {}, 1000);`;
    const child = spawn(process.execPath, ["-r", "ts-node/register/transpile-only", "-e", script], {
      cwd: ROOT,
      stdio: ["ignore", "pipe", "inherit"],
    });
    await new Promise<void>((resolve) => child.stdout.once("data", () => resolve()));
    const file = lockPath(dir, "foundation", "staging");
    assert.equal(readHolder(file)?.pid, child.pid);
    assert.throws(() => acquireStackLock({ ...base(dir), host: undefined }), /another run/);
    child.kill("SIGKILL");
    await new Promise((resolve) => child.once("exit", resolve));
    assert.equal(readHolder(file)?.pid, child.pid, "a killed run leaves its lock behind");
    const lock = acquireStackLock({ ...base(dir), host: undefined });
    assert.equal(readHolder(file)?.pid, process.pid);
    lock.release();
  });

  it("holds the lock while the engine runs and releases it afterwards, also after a failure", async () => {
    const root = makeRepo();
    for (const error of [undefined, new Error("code: 255")]) {
      const ctx = testContext({ repoRoot: root });
      const file = lockPath(locksDir(root), "foundation", "staging");
      let held: LockHolder | undefined;
      ctx.workspaces.during = () => {
        held = readHolder(file);
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
    const file = lockPath(locksDir(root), "foundation", "staging");
    writeHolder(file, {
      pid: 77,
      host: "test-host",
      command: "up staging --layer foundation",
      startedAt: "t",
    });
    const ctx = testContext({ repoRoot: root });
    assert.equal(await runCli(["preview", "staging"], ctx), ExitCode.locked);
    assert.match(
      ctx.stderr.text,
      /^foundation\/staging: another run of the platform CLI holds this stack; got pid 77 on test-host/m,
    );
    assert.equal(ctx.workspaces.callsOf("openStack").length, 0);
    assert.equal(readHolder(file)?.pid, 77);
  });
});
