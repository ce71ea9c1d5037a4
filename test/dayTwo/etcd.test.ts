import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as path from "node:path";
import { runCli } from "../../automation/cli";
import { listSnapshots, pruneSnapshots, timestamp } from "../../automation/dayTwo/snapshots";
import { snapshotHasHash } from "../../automation/dayTwo/etcd";
import { ExitCode } from "../../automation/errors";
import { cleanupRepos } from "../automation/helpers";
import { FakeTalos } from "./fakeTalos";
import { dayTwoFixture } from "./helpers";

/**
 * A cluster whose wiped control plane does what Talos' etcd service does when it boots with an
 * empty data folder (addMember): while the members that still hold their data form a quorum, it
 * rejoins them as a new member (Running) instead of waiting for a bootstrap (Preparing).
 */
class RejoiningTalos extends FakeTalos {
  private readonly wiping = new Set<string>();
  readonly failWipe = new Set<string>();

  async wipeVolumes(node: string, labels: readonly string[]): Promise<void> {
    const n = this.node(node);
    this.log.push(`wipe ${n.name}`);
    this.wiped.set(n.name, labels);
    this.wiping.add(n.name);
    // The reset and reboot take a while: the call returns once the node is back.
    await new Promise((resolve) => setImmediate(resolve));
    this.wiping.delete(n.name);
    if (this.failWipe.has(n.name)) throw new Error(`rpc error: reset failed on ${n.name}`);
    // A wipe that missed etcd's volume leaves its data: it comes back as it was.
    const before = n.etcd;
    if (!this.wipeEtcdData(n, labels)) {
      n.etcd = before ?? { state: "Running", health: "Fail" };
      return;
    }
    const cps = this.nodes.filter((x) => x.role === "controlplane");
    const holding = cps.filter(
      (x) => x !== n && !this.wiping.has(x.name) && x.etcd?.state !== "Preparing",
    );
    n.etcd =
      holding.length >= Math.floor(cps.length / 2) + 1
        ? { state: "Running", health: "OK" }
        : { state: "Preparing", health: "?" };
  }
}

const store = (root: string) => path.join(root, ".pulumi-state", "etcd-snapshots", "staging");

describe("etcd snapshot", () => {
  afterEach(cleanupRepos);

  it("writes a 0600 snapshot named after the cluster and the time into the git-ignored store and prints only its path", async () => {
    const f = dayTwoFixture();
    assert.equal(
      await runCli(["etcd", "snapshot", "staging"], f.ctx),
      ExitCode.ok,
      f.ctx.stderr.text,
    );
    const file = path.join(store(f.root), "staging-20260130T101500Z.snapshot");
    assert.equal(f.ctx.stdout.text, `${file}\n`);
    assert.equal(fs.statSync(file).mode & 0o777, 0o600);
    assert.equal(fs.statSync(store(f.root)).mode & 0o777, 0o700);
    assert.match(f.ctx.stderr.text, /from cp-1: 1056 bytes, mode 0600/);
    const gitignore = fs.readFileSync(path.join(__dirname, "..", "..", ".gitignore"), "utf8");
    assert.match(gitignore, /^\.pulumi-state\/$/m, "the store is inside a git-ignored folder");
  });

  it("takes it from the next control plane when the first cannot give one", async () => {
    const f = dayTwoFixture();
    f.talos.snapshotFails.add("cp-1");
    assert.equal(await runCli(["etcd", "snapshot", "staging"], f.ctx), ExitCode.ok);
    assert.deepEqual(f.talos.callsOf("snapshot via"), ["snapshot via cp-1", "snapshot via cp-2"]);
  });

  it("fails naming every control plane when none can give one", async () => {
    const f = dayTwoFixture();
    for (const cp of ["cp-1", "cp-2", "cp-3"]) f.talos.snapshotFails.add(cp);
    assert.equal(await runCli(["etcd", "snapshot", "staging"], f.ctx), ExitCode.failed);
    assert.match(
      f.ctx.stderr.text,
      /etcd snapshot of staging: no control plane gave a snapshot; got cp-1: etcdserver: not healthy; cp-2: .*; cp-3: /,
    );
  });

  it("keeps only the newest --keep-snapshots of this cluster, never other files", async () => {
    const f = dayTwoFixture();
    for (let i = 0; i < 4; i++) {
      assert.equal(
        await runCli(["etcd", "snapshot", "staging", "--keep-snapshots", "2"], f.ctx),
        ExitCode.ok,
      );
      f.clock.time += 60_000;
    }
    fs.writeFileSync(path.join(store(f.root), "operator-notes.txt"), "keep me");
    assert.deepEqual(fs.readdirSync(store(f.root)).sort(), [
      "operator-notes.txt",
      "staging-20260130T101700Z.snapshot",
      "staging-20260130T101800Z.snapshot",
    ]);
    assert.deepEqual(pruneSnapshots(store(f.root), "staging", 1), [
      path.join(store(f.root), "staging-20260130T101700Z.snapshot"),
    ]);
    assert.deepEqual(listSnapshots(store(f.root), "prod"), []);
  });

  it("never overwrites a snapshot taken in the same second", async () => {
    const f = dayTwoFixture();
    await runCli(["etcd", "snapshot", "staging"], f.ctx);
    await runCli(["etcd", "snapshot", "staging"], f.ctx);
    assert.deepEqual(fs.readdirSync(store(f.root)).sort(), [
      "staging-20260130T101500Z-1.snapshot",
      "staging-20260130T101500Z.snapshot",
    ]);
  });

  it("refuses --keep-snapshots 0", async () => {
    const f = dayTwoFixture();
    assert.equal(
      await runCli(["etcd", "snapshot", "staging", "--keep-snapshots", "0"], f.ctx),
      ExitCode.usage,
    );
    assert.match(
      f.ctx.stderr.text,
      /--keep-snapshots: must be a whole number of at least 1; got "0"/,
    );
  });

  it("names snapshots by UTC time that sorts", () => {
    assert.equal(timestamp(Date.UTC(2026, 0, 30, 10, 15, 0)), "20260130T101500Z");
  });
});

describe("etcd restore", () => {
  afterEach(cleanupRepos);

  /** A cluster that lost quorum: two of three control planes' etcd is down. */
  function lostQuorum() {
    const f = dayTwoFixture();
    f.talos.byName("cp-2").etcd = { state: "Running", health: "Fail" };
    f.talos.byName("cp-3").etcd = { state: "Finished", health: "" };
    const snapshot = path.join(f.root, "db.snapshot");
    fs.writeFileSync(snapshot, Buffer.alloc(2048 + 32));
    return { f, snapshot };
  }

  it("follows the recovery procedure in order: wipe EPHEMERAL, wait for Preparing, bootstrap the first control plane, wait for members, health", async () => {
    const { f, snapshot } = lostQuorum();
    const code = await runCli(["etcd", "restore", "staging", "--from", "db.snapshot"], f.ctx);
    assert.equal(code, ExitCode.ok, f.ctx.stderr.text);
    const steps = f.talos.log.filter((l) => /^(wipe|bootstrap|health|members)/.test(l));
    assert.deepEqual(steps, [
      "wipe cp-1",
      "wipe cp-2",
      "wipe cp-3",
      `bootstrap cp-1 --recover-from=${snapshot}`,
      "members via cp-1",
      "members via cp-1",
      "health via cp-1",
    ]);
    const wipedAt = f.talos.log.indexOf("wipe cp-3");
    const bootstrapAt = f.talos.log.findIndex((l) => l.startsWith("bootstrap"));
    const between = f.talos.log.slice(wipedAt + 1, bootstrapAt);
    assert.deepEqual(
      between,
      ["service etcd cp-1", "service etcd cp-2", "service etcd cp-3"],
      "Preparing checked on all",
    );
    assert.equal(f.questions.length, 2, "asked before the wipe and before the bootstrap");
    assert.match(
      f.questions[0],
      /^Step 1 of 3: wipe the EPHEMERAL partition \(etcd data\) of cp-1, cp-2, cp-3/,
    );
    assert.match(
      f.questions[1],
      /^Step 3 of 3: bootstrap etcd on cp-1 \(192\.0\.2\.11\) from db\.snapshot\?/,
    );
    assert.equal(
      f.ctx.workspaces.callsOf("operation").length,
      0,
      "never runs the engine: the Secrets resource is untouched",
    );
  });

  it("wipes the dedicated ETCD volume too where a Talos 1.14 node keeps etcd on a partition of its own, which wiping EPHEMERAL leaves intact", async () => {
    const { f } = lostQuorum();
    f.talos.byName("cp-2").etcdVolume = "partition";
    const code = await runCli(["etcd", "restore", "staging", "--from", "db.snapshot"], f.ctx);
    assert.equal(code, ExitCode.ok, f.ctx.stderr.text + f.ctx.stdout.text);
    assert.deepEqual(Object.fromEntries(f.talos.wiped), {
      "cp-1": ["EPHEMERAL"],
      "cp-2": ["EPHEMERAL", "ETCD"],
      "cp-3": ["EPHEMERAL"],
    });
    assert.match(
      f.questions[0],
      /^Step 1 of 3: wipe the EPHEMERAL partition \(etcd data\) of cp-1, cp-2, cp-3 and the dedicated ETCD volume of cp-2 and reboot them\?/,
    );
    assert.match(
      f.ctx.stdout.text,
      /cp-2: talosctl reset --graceful=false --reboot --system-labels-to-wipe=EPHEMERAL,ETCD\n/,
    );
    // Every node says where its etcd data is before anything is wiped.
    const firstWipe = f.talos.log.indexOf("wipe cp-1");
    for (const cp of ["cp-1", "cp-2", "cp-3"]) {
      assert.ok(f.talos.log.indexOf(`volume ETCD ${cp}`) < firstWipe, cp);
    }
  });

  it("would never get a dedicated ETCD volume's member to Preparing by wiping EPHEMERAL alone", async () => {
    // The fake's reset keeps etcd's data unless its volume was wiped, as Talos' does: the rule the
    // restore relies on, shown on its own.
    const { f } = lostQuorum();
    const node = f.talos.byName("cp-2");
    node.etcdVolume = "partition";
    await f.talos.wipeVolumes(node.address, ["EPHEMERAL"]);
    assert.notEqual(node.etcd?.state, "Preparing");
    await f.talos.wipeVolumes(node.address, ["EPHEMERAL", "ETCD"]);
    assert.equal(node.etcd?.state, "Preparing");
  });

  it("stops at a no and changes nothing further", async () => {
    const { f } = lostQuorum();
    f.answers.push(false);
    assert.equal(
      await runCli(["etcd", "restore", "staging", "--from", "db.snapshot"], f.ctx),
      ExitCode.refused,
    );
    assert.deepEqual(
      f.talos.log.filter((l) => /^(wipe|bootstrap)/.test(l)),
      [],
    );
    assert.match(f.ctx.stderr.text, /etcd restore staging: stopped at your answer/);
  });

  it("with --yes asks nothing", async () => {
    const { f } = lostQuorum();
    assert.equal(
      await runCli(["etcd", "restore", "staging", "--from", "db.snapshot", "--yes"], f.ctx),
      ExitCode.ok,
    );
    assert.deepEqual(f.questions, []);
    assert.match(f.ctx.stdout.text, /Step 1 of 3: .* yes \(--yes\)/);
  });

  it("does not wipe control planes already waiting for a bootstrap", async () => {
    const { f } = lostQuorum();
    f.talos.byName("cp-1").etcd = { state: "Preparing", health: "?" };
    assert.equal(
      await runCli(["etcd", "restore", "staging", "--from", "db.snapshot", "--yes"], f.ctx),
      ExitCode.ok,
    );
    assert.deepEqual(
      f.talos.log.filter((l) => l.startsWith("wipe")),
      ["wipe cp-2", "wipe cp-3"],
    );
  });

  it("restores a raw database copy with --recover-skip-hash-check", async () => {
    const { f } = lostQuorum();
    fs.writeFileSync(path.join(f.root, "db"), Buffer.alloc(4096));
    assert.equal(
      await runCli(["etcd", "restore", "staging", "--from", "db", "--yes"], f.ctx),
      ExitCode.ok,
    );
    assert.ok(
      f.talos.log.some(
        (l) => l.startsWith("bootstrap cp-1") && l.endsWith("--recover-skip-hash-check"),
      ),
    );
    assert.ok(snapshotHasHash(1024 + 32) && !snapshotHasHash(4096));
  });

  it("refuses while etcd still has quorum, unless --allow-healthy (a drill)", async () => {
    const f = dayTwoFixture();
    fs.writeFileSync(path.join(f.root, "db.snapshot"), Buffer.alloc(544));
    assert.equal(
      await runCli(["etcd", "restore", "staging", "--from", "db.snapshot", "--yes"], f.ctx),
      ExitCode.failed,
    );
    assert.match(
      f.ctx.stderr.text,
      /etcd still has quorum; a restore would throw away everything written since the snapshot; got 3 of 3 members healthy/,
    );
    assert.deepEqual(
      f.talos.log.filter((l) => /^(wipe|bootstrap)/.test(l)),
      [],
    );
    assert.equal(
      await runCli(
        ["etcd", "restore", "staging", "--from", "db.snapshot", "--yes", "--allow-healthy"],
        f.ctx,
      ),
      ExitCode.ok,
    );
  });

  it("wipes the control planes all at once, so a drill on a healthy cluster reaches Preparing everywhere (one at a time, each would rejoin the others)", async () => {
    let talos!: RejoiningTalos;
    const f = dayTwoFixture({
      fake: (nodes, clock) => (talos = new RejoiningTalos(nodes, clock)),
    });
    fs.writeFileSync(path.join(f.root, "db.snapshot"), Buffer.alloc(544));
    assert.equal(
      await runCli(
        ["etcd", "restore", "staging", "--from", "db.snapshot", "--yes", "--allow-healthy"],
        f.ctx,
      ),
      ExitCode.ok,
      f.ctx.stderr.text,
    );
    assert.deepEqual(
      talos.log.filter((l) => /^(wipe|bootstrap)/.test(l)),
      [
        "wipe cp-1",
        "wipe cp-2",
        "wipe cp-3",
        "bootstrap cp-1 --recover-from=" + path.join(f.root, "db.snapshot"),
      ],
    );
  });

  it("names every control plane whose wipe failed and those wiped, bootstrapping nothing", async () => {
    let talos!: RejoiningTalos;
    const f = dayTwoFixture({
      fake: (nodes, clock) => (talos = new RejoiningTalos(nodes, clock)),
    });
    talos.failWipe.add("cp-2");
    fs.writeFileSync(path.join(f.root, "db.snapshot"), Buffer.alloc(544));
    assert.equal(
      await runCli(
        ["etcd", "restore", "staging", "--from", "db.snapshot", "--yes", "--allow-healthy"],
        f.ctx,
      ),
      ExitCode.failed,
    );
    assert.match(
      f.ctx.stderr.text,
      /wiping cp-2 failed; got "cp-2: rpc error: reset failed on cp-2"\. Wiped: cp-1, cp-3\./,
    );
    assert.ok(!talos.log.some((l) => l.startsWith("bootstrap")));
  });

  it("refuses when a control plane does not answer (recreate it first), touching nothing", async () => {
    const { f } = lostQuorum();
    f.talos.byName("cp-3").up = false;
    assert.equal(
      await runCli(["etcd", "restore", "staging", "--from", "db.snapshot", "--yes"], f.ctx),
      ExitCode.failed,
    );
    assert.match(f.ctx.stderr.text, /every control plane must be up to restore; got cp-3/);
    assert.deepEqual(
      f.talos.log.filter((l) => /^(wipe|bootstrap)/.test(l)),
      [],
    );
  });

  it("refuses a missing or empty snapshot file before reading the stack", async () => {
    const f = dayTwoFixture();
    assert.equal(
      await runCli(["etcd", "restore", "staging", "--from", "nope.snapshot"], f.ctx),
      ExitCode.usage,
    );
    assert.match(f.ctx.stderr.text, /--from: must be a non-empty etcd snapshot file/);
    assert.equal(f.ctx.workspaces.calls.length, 0);
  });

  it("gives up on waiting for Preparing after its time-out, on the injected clock", async () => {
    const { f } = lostQuorum();
    f.talos.wipeVolumes = async (node) => {
      f.talos.log.push(`wipe ${f.talos.node(node).name}`);
      // The node never gets to Preparing.
    };
    assert.equal(
      await runCli(["etcd", "restore", "staging", "--from", "db.snapshot", "--yes"], f.ctx),
      ExitCode.failed,
    );
    assert.match(
      f.ctx.stderr.text,
      /etcd did not reach Preparing within 20m0s; got cp-1 Running\/OK, cp-2 Running\/Fail, cp-3 Finished/,
    );
    assert.ok(!f.talos.log.some((l) => l.startsWith("bootstrap")));
  });

  it("waits --wait-timeout instead, and documents its default", async () => {
    const { f } = lostQuorum();
    f.talos.wipeVolumes = async (node) => {
      f.talos.log.push(`wipe ${f.talos.node(node).name}`);
    };
    const argv = ["etcd", "restore", "staging", "--from", "db.snapshot", "--yes"];
    assert.equal(await runCli([...argv, "--wait-timeout", "90s"], f.ctx), ExitCode.failed);
    assert.match(f.ctx.stderr.text, /etcd did not reach Preparing within 1m30s; got /);
    const help = dayTwoFixture();
    assert.equal(await runCli(["etcd", "restore", "--help"], help.ctx), ExitCode.ok);
    assert.match(
      help.ctx.stdout.text.replace(/\s+/g, " "),
      /--wait-timeout <duration> .*\(default: 20m0s\)/,
    );
  });
});
