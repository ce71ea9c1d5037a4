// What a killed or force-stopped run leaves behind, as an operator meets it: the CLI starts as a
// process (bin/platform) with a fake `pulumi` on PATH that hangs like an engine mid-update, with a
// secret in a temp file and a plugin in a process group of its own that has a child of its own.
import { type ChildProcess, spawn } from "node:child_process";
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { listEnvironments, resolveLayer } from "../../automation/layers";
import { PULUMI_SDK_VERSION } from "../../automation/pulumiCli";
import { FakePulumi } from "./fakePulumi";
import { ROOT } from "./helpers";
import { EVERY_CREDENTIAL, cleanupTemp, runCliProcess, tempDir } from "./process";

const ENV = listEnvironments(resolveLayer(ROOT, "foundation"))[0] ?? "staging";

/** What the hanging fake engine reports once its tree is up. */
interface EngineTree {
  readonly engine: number;
  readonly plugin: number;
  readonly grandchild: number;
  readonly secret: string;
  /** The engine's `--event-log` argument. */
  readonly eventLog: string;
}

/** Whether a process runs (a zombie waiting for a parent that does not reap it does not). */
function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[0] !== "Z";
  } catch {
    return true; // no /proc: kill(0) said it exists
  }
}

async function until(what: string, check: () => boolean, ms = 60_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe("a killed or force-stopped run leaves no secrets and no processes", function () {
  this.timeout(240_000);
  let fake: FakePulumi;
  let base: string;
  let env: Record<string, string>;
  const started: number[] = [];

  before(function () {
    if (process.platform !== "linux") this.skip();
    fake = new FakePulumi();
    fake.addStack(ENV);
    base = tempDir("tmpdir-");
    env = {
      ...EVERY_CREDENTIAL,
      PATH: `${path.join(fake.dir, "bin")}:/usr/bin:/bin`,
      HOME: tempDir("home-"),
      TMPDIR: base,
      PULUMI_BACKEND_URL: `file://${tempDir("state-")}`,
      FAKE_PULUMI_VERSION: `v${PULUMI_SDK_VERSION}`,
    };
  });
  after(() => {
    for (const pid of started) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // gone
      }
    }
    fake?.remove();
    cleanupTemp();
  });

  /** Starts `preview` with the hanging engine; resolves once its whole tree is up. */
  async function startHung(): Promise<{
    cli: ChildProcess;
    tree: EngineTree;
    output: () => string;
  }> {
    const marker = path.join(tempDir("marker-"), "tree.json");
    const cli = spawn(process.execPath, [path.join(ROOT, "bin", "platform"), "preview", ENV], {
      cwd: ROOT,
      env: { ...env, FAKE_PULUMI_HANG: marker },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    cli.stdout!.on("data", (chunk: Buffer) => (output += chunk.toString()));
    cli.stderr!.on("data", (chunk: Buffer) => (output += chunk.toString()));
    await until(`the engine's tree (${output})`, () => fs.existsSync(marker));
    const tree = JSON.parse(fs.readFileSync(marker, "utf8")) as EngineTree;
    started.push(cli.pid!, tree.engine, tree.plugin, tree.grandchild);
    return { cli, tree, output: () => output };
  }

  const runFolder = (pid: number) =>
    path.join(base, `platform-${process.getuid!()}`, `run-${pid}@${os.hostname()}`);

  it("a SIGKILLed run's temp files are under its private folder, and the next start removes them", async () => {
    const { cli, tree } = await startHung();
    // The engine's temp file is in the run's folder (TMPDIR handed down), the folders 0700.
    assert.equal(path.dirname(tree.secret), runFolder(cli.pid!));
    assert.equal(fs.statSync(path.dirname(tree.secret)).mode & 0o777, 0o700);
    assert.equal(fs.statSync(path.dirname(path.dirname(tree.secret))).mode & 0o777, 0o700);
    // The events stream to the Automation API over loopback gRPC (a CLI newer than 3.205, which the
    // CLI requires), never through an event-log file that a kill would leave behind.
    assert.match(tree.eventLog, /^tcp:\/\/127\.0\.0\.1:\d+$/);
    const closed = new Promise((resolve) => cli.on("close", resolve));
    cli.kill("SIGKILL");
    await closed;
    for (const pid of [tree.engine, tree.plugin, tree.grandchild]) process.kill(pid, "SIGKILL");
    assert.ok(fs.existsSync(tree.secret), "SIGKILL leaves the file (nothing can run on it)");
    const next = runCliProcess(["--help"], env);
    assert.equal(next.status, 0, next.stderr);
    assert.ok(!fs.existsSync(runFolder(cli.pid!)), "the next start removed the dead run's folder");
    assert.deepEqual(fs.readdirSync(path.join(base, `platform-${process.getuid!()}`)), []);
  });

  it("a second SIGTERM stops the engine, its plugin in its own group and the plugin's child, and removes the temp files", async () => {
    const { cli, tree, output } = await startHung();
    const closed = new Promise<number | null>((resolve) => cli.on("close", resolve));
    cli.kill("SIGTERM");
    await until("the first interrupt's message", () => /send it again/.test(output()));
    // A repeat within a second is one interrupt (npm's forwarded copy): wait it out.
    await new Promise((resolve) => setTimeout(resolve, 1_200));
    cli.kill("SIGTERM");
    assert.equal(await closed, 130, output());
    // Deaf to SIGTERM, all three needed the SIGKILL after the grace.
    await until(
      "the engine's tree to end",
      () => [tree.engine, tree.plugin, tree.grandchild].every((pid) => !running(pid)),
      5_000,
    );
    assert.ok(!fs.existsSync(runFolder(cli.pid!)), "the run removed its folder on exit");
    assert.match(output(), /SIGTERM again: stopping now/);
  });
});
