// Signals through the real process chain: `npm run platform` (npm → sh, which execs → the CLI's bin)
// → talosctl, here a stand-in whose upgrade lasts until the test releases it, in a copy of the
// repository with a two-node cluster (test/fixtures/standins/). Each test signals one level while
// cp-1 is being upgraded, and waits a bounded time for what must follow.
import { strict as assert } from "node:assert";
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { ROOT } from "./harness";

import { foundationOutputs, NODES, stackYaml } from "./dayTwo/helpers";

// The build's own list of compiled sources (plain JS, no types), so the copy never misses one.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const build = require("../scripts/build.js") as { readonly SOURCES: readonly string[] };

const CLUSTER = NODES.filter((n) => n.name === "cp-1" || n.name === "w-1");
const STANDINS = path.join(ROOT, "test", "fixtures", "standins");
/** What the compiled CLI needs from the repository, copied so the run writes nothing here. */
const COPIED = [
  "package.json",
  ".nvmrc",
  "tsconfig.json",
  "Pulumi.yaml",
  ...build.SOURCES,
  "scripts",
  "bin",
  "dist",
];

/** A started chain: its top process and everything it printed. */
interface Run {
  readonly child: ChildProcess;
  readonly output: () => string;
  readonly exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  readonly exited: () => boolean;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Polls `check` every 50 ms until it holds; fails after `timeoutMs` saying what it waited for, or
 * at once if the run it watches has exited, with what the run printed.
 */
async function waitFor(
  what: string,
  check: () => boolean,
  run?: Run,
  timeoutMs = 60_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    const output = run ? `; output:\n${run.output()}` : "";
    if (run?.exited()) throw new Error(`the run exited while waiting for ${what}${output}`);
    if (Date.now() > deadline)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${output}`);
    await sleep(50);
  }
}

async function exitWithin(run: Run, timeoutMs: number) {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      run.child.kill("SIGKILL");
      reject(new Error(`still running after ${timeoutMs} ms; output:\n${run.output()}`));
    }, timeoutMs);
  });
  try {
    return await Promise.race([run.exit, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

describe("signals reach the process that acts (npm → CLI → talosctl)", function () {
  this.timeout(180_000);
  let repo: string;
  let talos: string;

  before(function () {
    this.timeout(180_000);
    const built = spawnSync(process.execPath, [path.join(ROOT, "scripts", "build.js")], {
      encoding: "utf8",
    });
    assert.equal(built.status, 0, built.stderr);
    repo = fs.mkdtempSync(path.join(os.tmpdir(), "platform-signals-"));
    for (const item of COPIED) {
      // The times too: the build takes a source whose time differs from its output's as changed.
      fs.cpSync(path.join(ROOT, item), path.join(repo, item), {
        recursive: true,
        preserveTimestamps: true,
      });
    }
    fs.symlinkSync(path.join(ROOT, "node_modules"), path.join(repo, "node_modules"));
    const check = spawnSync(process.execPath, [path.join(repo, "scripts", "build.js")], {
      encoding: "utf8",
    });
    assert.equal(check.stderr, "", "the copied build must be fresh");
  });

  after(() => fs.rmSync(repo, { recursive: true, force: true }));

  beforeEach(() => {
    fs.writeFileSync(
      path.join(repo, "Pulumi.staging.yaml"),
      stackYaml("v1.13.9", "1.36.3", CLUSTER),
    );
    fs.rmSync(path.join(repo, ".pulumi-state"), { recursive: true, force: true });
    talos = fs.mkdtempSync(path.join(os.tmpdir(), "platform-talos-state-"));
    for (const node of CLUSTER)
      fs.writeFileSync(path.join(talos, `${node.address}.version`), "v1.13.9\n");
    fs.writeFileSync(
      path.join(talos, "controlplanes"),
      CLUSTER.filter((n) => n.role === "controlplane")
        .map((n) => `${n.name} ${n.address}\n`)
        .join(""),
    );
    fs.writeFileSync(path.join(talos, "log"), "");
    const outputs = foundationOutputs(CLUSTER);
    const plain = Object.fromEntries(Object.entries(outputs).map(([k, o]) => [k, o.value]));
    const masked = Object.fromEntries(
      Object.entries(outputs).map(([k, o]) => [k, o.secret ? "[secret]" : o.value]),
    );
    fs.writeFileSync(path.join(talos, "outputs.plain.json"), JSON.stringify(plain));
    fs.writeFileSync(path.join(talos, "outputs.masked.json"), JSON.stringify(masked));
  });

  afterEach(() => fs.rmSync(talos, { recursive: true, force: true }));

  /** Starts the command in its own process group (as a shell starts a foreground job). */
  function start(command: string, args: string[]): Run {
    const child = spawn(command, args, {
      cwd: repo,
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
      env: {
        ...process.env,
        // The run is an operator's at a workstation: with CI set (as on a CI runner) the CLI
        // refuses the roll before it starts (checkDayTwoGuard).
        CI: undefined,
        PATH: `${STANDINS}${path.delimiter}${process.env.PATH}`,
        FAKE_TALOS_DIR: talos,
        FAKE_PULUMI_OUTPUTS: path.join(talos, "outputs"),
        PULUMI_CONFIG_PASSPHRASE: "signals-test",
        npm_config_update_notifier: "false",
      },
    });
    let output = "";
    child.stdout!.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.stderr!.on("data", (chunk: Buffer) => (output += chunk.toString()));
    let exited = false;
    const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      child.on("close", (code, signal) => {
        exited = true;
        resolve({ code, signal });
      }),
    );
    return { child, output: () => output, exit, exited: () => exited };
  }

  const roll = ["upgrade", "talos", "staging", "--to", "v1.14.1"];
  const viaNpm = () => start("npm", ["run", "--silent", "platform", "--", ...roll]);
  const direct = () => start(path.join(repo, "bin", "platform"), roll);

  /** The stand-in's log: `<pid> <pgid> <event>` lines. */
  const log = () =>
    fs
      .readFileSync(path.join(talos, "log"), "utf8")
      .split("\n")
      .filter((line) => line !== "")
      .map((line) => {
        const [pid, pgid, ...event] = line.split(" ");
        return { pid: Number(pid), pgid: Number(pgid), event: event.join(" ") };
      });
  const events = () => log().map((entry) => entry.event);
  const upgradeStarted = () => events().includes("upgrade-start 192.0.2.11");
  /** Lets the stand-in's upgrade finish. */
  const release = () => fs.writeFileSync(path.join(talos, "release"), "");

  /** After cp-1's upgrade: its version read again, then the cluster's health, and no other upgrade. */
  function assertFinishedAndVerified(): void {
    const seen = events();
    const done = seen.indexOf("upgrade-done 192.0.2.11");
    assert.ok(done >= 0, `cp-1's upgrade did not finish: ${seen.join(" | ")}`);
    assert.ok(!seen.some((e) => e.startsWith("killed")), "talosctl was killed");
    const after = seen.slice(done + 1);
    assert.ok(
      after.some((e) => e.startsWith("call version") && e.endsWith(" 192.0.2.11")),
      `no version check: ${after.join(" | ")}`,
    );
    assert.ok(
      after.some((e) => e.startsWith("call health")),
      `no health check: ${after.join(" | ")}`,
    );
    assert.ok(!seen.includes("upgrade-start 192.0.2.21"), "w-1 must not be touched");
    assert.equal(fs.readFileSync(path.join(talos, "192.0.2.11.version"), "utf8").trim(), "v1.14.1");
    assert.match(
      fs.readFileSync(path.join(repo, "Pulumi.staging.yaml"), "utf8"),
      /talosVersion: v1\.13\.9/,
    );
  }

  it("SIGTERM to npm (a CI runner, kill): npm forwards it, the CLI finishes and verifies cp-1, then stops", async () => {
    const run = viaNpm();
    await waitFor("cp-1's upgrade to start", upgradeStarted, run);
    process.kill(run.child.pid!, "SIGTERM");
    await waitFor("the CLI to take the SIGTERM", () => /SIGTERM: stopping/.test(run.output()), run);
    release();
    const { code } = await exitWithin(run, 60_000);
    assertFinishedAndVerified();
    assert.match(
      run.output(),
      /SIGTERM: stopping once the step under way has finished \(cp-1 is being upgraded/,
    );
    assert.match(run.output(), /stopped at w-1 \(interrupted\)/);
    assert.equal(code, 130, run.output());
  });

  it("Ctrl-C to the whole process group: talosctl, in its own group, is not hit; npm's copy counts once", async () => {
    const run = viaNpm();
    await waitFor("cp-1's upgrade to start", upgradeStarted, run);
    const upgrade = log().find((entry) => entry.event === "upgrade-start 192.0.2.11")!;
    assert.notEqual(upgrade.pgid, run.child.pid, "talosctl must lead a process group of its own");
    process.kill(-run.child.pid!, "SIGINT");
    await waitFor("the CLI to take the SIGINT", () => /SIGINT: stopping/.test(run.output()), run);
    await sleep(1_200); // npm's forwarded copy has arrived by now; talosctl is still upgrading
    release();
    const { code } = await exitWithin(run, 60_000);
    assertFinishedAndVerified();
    assert.doesNotMatch(run.output(), /stopping now/);
    assert.match(run.output(), /stopped at w-1 \(interrupted\)/);
    assert.equal(code, 130, run.output());
  });

  it("SIGTERM twice to the CLI run directly: it stops at once and says cp-1 is mid-upgrade and unverified", async () => {
    const run = direct();
    await waitFor("cp-1's upgrade to start", upgradeStarted, run);
    process.kill(run.child.pid!, "SIGTERM");
    await waitFor("the CLI to take the SIGTERM", () => /SIGTERM: stopping/.test(run.output()), run);
    await sleep(1_100); // past the second in which a repeat counts as the same interrupt
    process.kill(run.child.pid!, "SIGTERM");
    const { code } = await exitWithin(run, 20_000);
    assert.equal(code, 130, run.output());
    assert.match(run.output(), /SIGTERM again: stopping now/);
    assert.match(
      run.output(),
      /stopped at once while cp-1 was being upgraded to v1\.14\.1\n {2}upgraded: {4}\(none\)\n {2}unverified: {2}cp-1 \(192\.0\.2\.11\): mid-upgrade/,
    );
    assert.match(run.output(), /not touched: w-1/);
    assert.match(run.output(), /talosctl -n 192\.0\.2\.11 version/);
    // Its process group was stopped on the way out, not left running unsupervised.
    await waitFor(
      "the stand-in to report it was stopped",
      () => events().includes("killed 192.0.2.11"),
      undefined,
      10_000,
    );
    assert.equal(events().includes("upgrade-done 192.0.2.11"), false);
  });

  it("talosctl killed under the CLI: the roll stops at cp-1 and says it may still be upgrading", async () => {
    const run = direct();
    await waitFor("cp-1's upgrade to start", upgradeStarted, run);
    const upgrade = log().find((entry) => entry.event === "upgrade-start 192.0.2.11")!;
    process.kill(upgrade.pid, "SIGTERM");
    const { code } = await exitWithin(run, 60_000);
    assert.equal(code, 1, run.output());
    assert.match(run.output(), /stopped at cp-1 \(upgrade\)/);
    assert.match(run.output(), /was killed \(SIGTERM\)|failed with exit code 143/);
    assert.match(run.output(), /cp-1 may still be upgrading on its own/);
    assert.ok(!events().includes("upgrade-start 192.0.2.21"));
  });
});
