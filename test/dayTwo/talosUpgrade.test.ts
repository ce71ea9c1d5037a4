import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as path from "node:path";
import { runCli } from "../../automation/cli";
import { rollBatches as upgradeBatches } from "../../automation/dayTwo/batches";
import { ExitCode } from "../../automation/errors";
import { cleanupRepos } from "../automation/helpers";
import { FakeTalos } from "./fakeTalos";
import {
  NODES,
  SCHEMATIC,
  dayTwoFixture,
  foundationOutputs,
  readStack,
  stackWithRollout,
  stackYaml,
} from "./helpers";

const TARGET_IMAGE = `factory.talos.dev/nocloud-installer/${SCHEMATIC}:v1.14.1`;

/** The nodes upgraded, in order. */
function upgraded(talos: FakeTalos): string[] {
  return talos.callsOf("upgrade").map((line) => line.split(" ")[1]);
}

describe("upgrade talos: the rolling upgrade", () => {
  afterEach(cleanupRepos);

  it("upgrades control planes one at a time in stack-file order, then workers, each with its installer image on the target tag", async () => {
    const f = dayTwoFixture();
    const code = await runCli(["upgrade", "talos", "staging", "--to", "v1.14.1"], f.ctx);
    assert.equal(code, ExitCode.ok, f.ctx.stderr.text + f.ctx.stdout.text);
    assert.deepEqual(upgraded(f.talos), ["cp-1", "cp-2", "cp-3", "w-1", "w-2", "w-3"]);
    for (const line of f.talos.callsOf("upgrade"))
      assert.ok(line.endsWith(` ${TARGET_IMAGE}`), line);
    for (const node of f.talos.nodes) assert.equal(node.version, "v1.14.1");
  });

  it("takes an etcd snapshot before the first node is touched, under .pulumi-state with the cluster name and time, mode 0600", async () => {
    const f = dayTwoFixture();
    assert.equal(
      await runCli(["upgrade", "talos", "staging", "--to", "v1.14.1"], f.ctx),
      ExitCode.ok,
    );
    const snapshotAt = f.talos.log.findIndex((l) => l.startsWith("snapshot"));
    const firstUpgrade = f.talos.log.findIndex((l) => l.startsWith("upgrade"));
    assert.ok(snapshotAt >= 0 && snapshotAt < firstUpgrade, f.talos.log.join("\n"));
    const dir = path.join(f.root, ".pulumi-state", "etcd-snapshots", "staging");
    const files = fs.readdirSync(dir);
    assert.deepEqual(files, ["staging-20260130T101500Z.snapshot"]);
    assert.equal(fs.statSync(path.join(dir, files[0])).mode & 0o777, 0o600);
    assert.match(
      f.ctx.stdout.text,
      /etcd snapshot: \.pulumi-state\/etcd-snapshots\/staging\/staging-20260130T101500Z\.snapshot/,
    );
  });

  it("touches no node when no control plane can give a snapshot", async () => {
    const f = dayTwoFixture();
    for (const cp of ["cp-1", "cp-2", "cp-3"]) f.talos.snapshotFails.add(cp);
    assert.equal(
      await runCli(["upgrade", "talos", "staging", "--to", "v1.14.1"], f.ctx),
      ExitCode.failed,
    );
    assert.match(f.ctx.stderr.text, /etcd snapshot of staging: no control plane gave a snapshot/);
    assert.deepEqual(upgraded(f.talos), []);
    assert.match(readStack(f), /talosVersion: v1\.13\.9/);
  });

  it("runs the cluster health check after every node and checks etcd quorum before every control plane", async () => {
    const f = dayTwoFixture();
    assert.equal(
      await runCli(["upgrade", "talos", "staging", "--to", "v1.14.1"], f.ctx),
      ExitCode.ok,
    );
    const rollout = f.talos.log.slice(f.talos.log.findIndex((l) => l.startsWith("snapshot")));
    const steps = rollout
      .filter((l) => /^(upgrade|health|members)/.test(l))
      .map((l) => l.split(" ").slice(0, 2).join(" "));
    assert.deepEqual(steps, [
      "members via",
      "upgrade cp-1",
      "health via",
      "members via",
      "upgrade cp-2",
      "health via",
      "members via",
      "upgrade cp-3",
      "health via",
      "upgrade w-1",
      "health via",
      "upgrade w-2",
      "health via",
      "upgrade w-3",
      "health via",
    ]);
    // The quorum gate asks the other control planes, never the one about to go down.
    const gateForCp2 = rollout.slice(
      rollout.indexOf(`upgrade cp-1 ${TARGET_IMAGE}`) + 1,
      rollout.indexOf(`upgrade cp-2 ${TARGET_IMAGE}`),
    );
    assert.ok(
      gateForCp2.includes("service etcd cp-1") && gateForCp2.includes("service etcd cp-3"),
      gateForCp2.join("\n"),
    );
    assert.ok(!gateForCp2.includes("service etcd cp-2"));
  });

  it("upgrades workers in batches of --max-unavailable, with one health check per batch", async () => {
    const f = dayTwoFixture({ stack: stackWithRollout(2) });
    assert.equal(
      await runCli(
        ["upgrade", "talos", "staging", "--to", "v1.14.1", "--max-unavailable", "2"],
        f.ctx,
      ),
      ExitCode.ok,
    );
    const afterCps = f.talos.log.slice(f.talos.log.findIndex((l) => l.startsWith("upgrade w-1")));
    const steps = afterCps
      .filter((l) => /^(upgrade|health)/.test(l))
      .map((l) => l.split(" ").slice(0, 2).join(" "));
    assert.deepEqual(steps, [
      "upgrade w-1",
      "upgrade w-2",
      "health via",
      "upgrade w-3",
      "health via",
    ]);
  });

  it("never takes more workers down at once than cluster.rollout.maxUnavailableWorkers, and defaults to it", async () => {
    const refused = dayTwoFixture();
    assert.equal(
      await runCli(
        ["upgrade", "talos", "staging", "--to", "v1.14.1", "--max-unavailable", "2"],
        refused.ctx,
      ),
      ExitCode.usage,
    );
    assert.match(refused.ctx.stderr.text, /--max-unavailable: is more than the stack allows/);
    assert.deepEqual(refused.talos.callsOf("upgrade"), []);
    const f = dayTwoFixture({ stack: stackWithRollout(3) });
    assert.equal(
      await runCli(["upgrade", "talos", "staging", "--to", "v1.14.1"], f.ctx),
      ExitCode.ok,
    );
    const workers = f.talos.log.slice(f.talos.log.findIndex((l) => l.startsWith("upgrade w-1")));
    assert.deepEqual(
      workers
        .filter((l) => /^(upgrade|health)/.test(l))
        .map((l) => l.split(" ").slice(0, 2).join(" ")),
      ["upgrade w-1", "upgrade w-2", "upgrade w-3", "health via"],
    );
  });

  it("refuses while a config change waits for a reboot, which the upgrade would activate unannounced", async () => {
    const f = dayTwoFixture();
    f.talos.stage("w-2", "vm.swappiness: 1");
    assert.equal(
      await runCli(["upgrade", "talos", "staging", "--to", "v1.14.1"], f.ctx),
      ExitCode.refused,
    );
    assert.deepEqual(f.talos.callsOf("upgrade"), []);
    assert.match(
      f.ctx.stdout.text,
      /FAIL {2}nothing-staged +staged configs: a config change waits for a reboot on 1 node.*got w-2\. Roll it out first: npm run platform -- rollout staging/,
    );
  });

  it("stops at a node whose drain failed after the install, naming it installed, not booted and cordoned", async () => {
    const f = dayTwoFixture();
    f.talos.upgrades.set("cp-2", "drainFails");
    assert.equal(
      await runCli(
        ["upgrade", "talos", "staging", "--to", "v1.14.1", "--drain-timeout", "7m"],
        f.ctx,
      ),
      ExitCode.failed,
    );
    const out = f.ctx.stdout.text;
    assert.match(out, /stopped at cp-2 \(drain\); no further node was touched/);
    assert.match(
      out,
      /installed: {3}cp-2 has Talos v1\.14\.1 installed but still runs the old one: its next reboot boots v1\.14\.1/,
    );
    assert.match(out, /cordoned: {4}cp-2 \(left unschedulable; kubectl uncordon cp-2/);
    assert.match(
      f.ctx.stderr.text,
      /Fix what blocks the eviction .*then resume: npm run platform -- upgrade talos staging --to v1\.14\.1 --resume/,
    );
    assert.deepEqual(f.talos.drainTimeouts, [7 * 60_000, 7 * 60_000]);
    assert.deepEqual(
      f.talos.callsOf("upgrade").map((l) => l.split(" ")[1]),
      ["cp-1", "cp-2"],
    );
  });

  it("batches control planes one by one whatever --max-unavailable says", () => {
    const nodes = NODES.map((n) => ({ ...n }));
    assert.deepEqual(
      upgradeBatches(nodes, 5).map((b) => b.map((n) => n.name)),
      [["cp-1"], ["cp-2"], ["cp-3"], ["w-1", "w-2", "w-3"]],
    );
  });

  it("updates talosVersion in the stack file at the end, keeping comments and formatting", async () => {
    const f = dayTwoFixture();
    const before = readStack(f);
    assert.equal(
      await runCli(["upgrade", "talos", "staging", "--to", "v1.14.1"], f.ctx),
      ExitCode.ok,
    );
    assert.equal(
      readStack(f),
      before.replace("talosVersion: v1.13.9 # bumped", "talosVersion: v1.14.1 # bumped"),
    );
    assert.match(
      f.ctx.stdout.text,
      /updated Pulumi\.staging\.yaml:6: talosVersion: v1\.14\.1 # bumped by upgrade talos \(was v1\.13\.9\)/,
    );
  });

  it("with --no-write leaves the stack file alone and prints the line to commit", async () => {
    const f = dayTwoFixture();
    const before = readStack(f);
    assert.equal(
      await runCli(["upgrade", "talos", "staging", "--to", "v1.14.1", "--no-write"], f.ctx),
      ExitCode.ok,
    );
    assert.equal(readStack(f), before);
    assert.match(
      f.ctx.stdout.text,
      /--no-write: commit this line yourself \(now v1\.13\.9\):\n {2}Pulumi\.staging\.yaml:6: talosVersion: v1\.14\.1/,
    );
  });

  it("refuses to move an unpinned stack to Talos 1.14, whose config contract the generator does not know, before touching anything", async () => {
    const f = dayTwoFixture({
      stack: stackYaml().replace("    configContract: v1.13.9\n", ""),
    });
    assert.equal(
      await runCli(["upgrade", "talos", "staging", "--to", "v1.14.1"], f.ctx),
      ExitCode.refused,
    );
    assert.match(
      f.ctx.stderr.text,
      /Pulumi\.staging\.yaml cluster\.configContract: is not set, so moving talosVersion to v1\.14\.1 would move the config contract to 1\.14, which the Talos provider's config generator \(Talos machinery 1\.13\) does not know.*Pin cluster\.configContract/s,
    );
    assert.deepEqual(f.talos.log, []);
    assert.equal(f.ctx.workspaces.calls.length, 0);
  });

  it("refuses a jump over a minor with the path to take, before any snapshot or upgrade", async () => {
    const f = dayTwoFixture();
    for (const node of f.talos.nodes) node.version = "v1.12.4";
    const code = await runCli(["upgrade", "talos", "staging", "--to", "v1.14.1"], f.ctx);
    assert.equal(code, ExitCode.refused);
    assert.match(
      f.ctx.stderr.text,
      /Talos upgrade path: Talos upgrades go through each minor in turn \(the latest patch of each\); got v1\.12\.4 → v1\.14\.1\. Upgrade in steps, v1\.12 → v1\.13\.x → v1\.14\.1: first `npm run platform -- upgrade talos staging --to v1\.13\.<latest patch>`/,
    );
    assert.deepEqual(f.talos.callsOf("snapshot via"), []);
    assert.deepEqual(upgraded(f.talos), []);
  });

  it("stops and touches no further node when a node comes back on the old version (silent rollback)", async () => {
    const f = dayTwoFixture();
    f.talos.upgrades.set("cp-2", "rollback");
    const code = await runCli(["upgrade", "talos", "staging", "--to", "v1.14.1"], f.ctx);
    assert.equal(code, ExitCode.failed);
    assert.deepEqual(upgraded(f.talos), ["cp-1", "cp-2"]);
    assert.match(f.ctx.stdout.text, /stopped at cp-2 \(version\); no further node was touched/);
    assert.match(f.ctx.stdout.text, /upgraded: {4}cp-1\n/);
    assert.match(f.ctx.stdout.text, /not touched: cp-3, w-1, w-2, w-3/);
    assert.match(
      f.ctx.stderr.text,
      /upgrade talos staging: stopped at cp-2 \(version\); got "came back on v1\.13\.9, not v1\.14\.1: Talos rolled back/,
    );
    assert.match(
      f.ctx.stderr.text,
      /resume: npm run platform -- upgrade talos staging --to v1\.14\.1 --resume/,
    );
    assert.match(readStack(f), /talosVersion: v1\.13\.9/, "the stack file is not bumped");
  });

  it("stops and touches no further node when the upgrade command fails", async () => {
    const f = dayTwoFixture();
    f.talos.upgrades.set("cp-1", "fail");
    assert.equal(
      await runCli(["upgrade", "talos", "staging", "--to", "v1.14.1"], f.ctx),
      ExitCode.failed,
    );
    assert.deepEqual(upgraded(f.talos), ["cp-1"]);
    assert.match(f.ctx.stdout.text, /upgraded: {4}\(none\)/);
    assert.match(
      f.ctx.stderr.text,
      /stopped at cp-1 \(upgrade\); got "error during upgrade: failed to pull image"/,
    );
  });

  it("stops and touches no further node when a node does not come back in time", async () => {
    const f = dayTwoFixture();
    f.talos.upgrades.set("w-1", "down");
    assert.equal(
      await runCli(["upgrade", "talos", "staging", "--to", "v1.14.1"], f.ctx),
      ExitCode.failed,
    );
    assert.deepEqual(upgraded(f.talos), ["cp-1", "cp-2", "cp-3", "w-1"]);
    assert.match(
      f.ctx.stderr.text,
      /stopped at w-1 \(come back\); got "did not answer within 15m0s/,
    );
    assert.ok(f.talos.clock.slept >= 15 * 60_000, "it waited on the injected clock");
  });

  it("stops and touches no further node when the health check fails after a node", async () => {
    const f = dayTwoFixture();
    f.talos.healthFailsAfter = "cp-1";
    assert.equal(
      await runCli(["upgrade", "talos", "staging", "--to", "v1.14.1"], f.ctx),
      ExitCode.failed,
    );
    assert.deepEqual(upgraded(f.talos), ["cp-1"]);
    assert.match(
      f.ctx.stderr.text,
      /stopped at cp-1 \(health\); got "the cluster health check failed: healthcheck error/,
    );
  });

  it("stops before a control plane whose upgrade would lose etcd quorum, without touching it", async () => {
    const f = dayTwoFixture();
    // cp-3's etcd turns unhealthy after cp-1 is done: upgrading cp-2 would leave one healthy member.
    const original = f.talos.health.bind(f.talos);
    f.talos.health = async (check) => {
      await original(check);
      if (f.talos.byName("cp-1").version === "v1.14.1")
        f.talos.byName("cp-3").etcd = { state: "Running", health: "Fail" };
    };
    assert.equal(
      await runCli(["upgrade", "talos", "staging", "--to", "v1.14.1"], f.ctx),
      ExitCode.failed,
    );
    assert.deepEqual(upgraded(f.talos), ["cp-1"]);
    assert.match(
      f.ctx.stderr.text,
      /stopped at cp-2 \(quorum\); got "without cp-2, 1 healthy etcd members remain and quorum needs 2/,
    );
    assert.match(f.ctx.stdout.text, /not touched: cp-2, cp-3, w-1, w-2, w-3/);
  });

  it("in a batch that fails, reports every failed node and starts no later batch", async () => {
    const f = dayTwoFixture({ stack: stackWithRollout(2) });
    f.talos.upgrades.set("w-2", "rollback");
    const code = await runCli(
      ["upgrade", "talos", "staging", "--to", "v1.14.1", "--max-unavailable", "2"],
      f.ctx,
    );
    assert.equal(code, ExitCode.failed);
    assert.deepEqual(upgraded(f.talos), ["cp-1", "cp-2", "cp-3", "w-1", "w-2"]);
    assert.match(f.ctx.stdout.text, /upgraded: {4}cp-1, cp-2, cp-3, w-1\n/);
    assert.match(f.ctx.stdout.text, /not touched: w-3/);
  });

  it("on SIGTERM lets the node under way finish and touches no further node", async () => {
    const f = dayTwoFixture();
    const controller = new AbortController();
    const ctx = Object.assign(f.ctx, { signal: controller.signal });
    const original = f.talos.upgrade.bind(f.talos);
    f.talos.upgrade = async (node, image, timeout) => {
      controller.abort();
      await original(node, image, timeout);
    };
    assert.equal(
      await runCli(["upgrade", "talos", "staging", "--to", "v1.14.1"], ctx),
      ExitCode.failed,
    );
    assert.deepEqual(upgraded(f.talos), ["cp-1"]);
    assert.equal(f.talos.byName("cp-1").version, "v1.14.1");
    assert.match(f.ctx.stderr.text, /stopped at cp-2 \(interrupted\)/);
  });

  it("refuses to start on a partly upgraded cluster without --resume, and says how to resume", async () => {
    const f = dayTwoFixture();
    f.talos.byName("cp-1").version = "v1.14.1";
    assert.equal(
      await runCli(["upgrade", "talos", "staging", "--to", "v1.14.1"], f.ctx),
      ExitCode.refused,
    );
    assert.match(
      f.ctx.stderr.text,
      /Talos versions: the nodes run different versions \(a roll stopped partway\); got cp-1 v1\.14\.1, cp-2 v1\.13\.9/,
    );
    assert.match(
      f.ctx.stderr.text,
      /Resume it: npm run platform -- upgrade talos staging --to v1\.14\.1 --resume/,
    );
    assert.deepEqual(upgraded(f.talos), []);
  });

  it("--resume continues from the first node not on the target, after a new snapshot", async () => {
    const f = dayTwoFixture();
    f.talos.upgrades.set("cp-2", "rollback");
    assert.equal(
      await runCli(["upgrade", "talos", "staging", "--to", "v1.14.1"], f.ctx),
      ExitCode.failed,
    );
    f.talos.upgrades.delete("cp-2");
    f.talos.log.length = 0;
    f.clock.time += 3_600_000;
    assert.equal(
      await runCli(["upgrade", "talos", "staging", "--to", "v1.14.1", "--resume"], f.ctx),
      ExitCode.ok,
      f.ctx.stderr.text,
    );
    assert.deepEqual(upgraded(f.talos), ["cp-2", "cp-3", "w-1", "w-2", "w-3"]);
    assert.ok(
      f.talos.log.findIndex((l) => l.startsWith("snapshot")) <
        f.talos.log.findIndex((l) => l.startsWith("upgrade")),
    );
    assert.match(f.ctx.stdout.text, /already on v1\.14\.1: cp-1/);
    assert.match(readStack(f), /talosVersion: v1\.14\.1/);
    assert.equal(
      fs.readdirSync(path.join(f.root, ".pulumi-state", "etcd-snapshots", "staging")).length,
      2,
    );
  });

  it("refuses before any change when a node does not answer, naming it", async () => {
    const f = dayTwoFixture();
    f.talos.byName("w-3").up = false;
    assert.equal(
      await runCli(["upgrade", "talos", "staging", "--to", "v1.14.1"], f.ctx),
      ExitCode.refused,
    );
    assert.match(
      f.ctx.stderr.text,
      /nodes: 1 of 6 did not answer; got w-3 \(192\.0\.2\.23\): rpc error/,
    );
    assert.deepEqual(f.talos.callsOf("snapshot via"), []);
  });

  it("refuses a Talos version that does not support the Kubernetes version the cluster runs", async () => {
    const f = dayTwoFixture();
    for (const node of f.talos.nodes) {
      node.version = "v1.12.4";
      node.kubelet = "1.30.5";
    }
    assert.equal(
      await runCli(["upgrade", "talos", "staging", "--to", "v1.13.9"], f.ctx),
      ExitCode.refused,
    );
    assert.match(
      f.ctx.stderr.text,
      /Kubernetes support: Talos 1\.13 supports Kubernetes 1\.31 to 1\.36 only; got 1\.30\.5\. Upgrade Talos first to a release that supports both/,
    );
  });

  it("does nothing to nodes already on the target but still bumps the stack file", async () => {
    const f = dayTwoFixture();
    for (const node of f.talos.nodes) node.version = "v1.14.1";
    assert.equal(
      await runCli(["upgrade", "talos", "staging", "--to", "v1.14.1"], f.ctx),
      ExitCode.ok,
    );
    assert.deepEqual(upgraded(f.talos), []);
    assert.match(f.ctx.stdout.text, /every node already runs v1\.14\.1; nothing to upgrade/);
    assert.match(readStack(f), /talosVersion: v1\.14\.1/);
  });

  it("holds the foundation stack lock, so up cannot run meanwhile", async () => {
    const f = dayTwoFixture();
    let lockSeen = false;
    const original = f.talos.upgrade.bind(f.talos);
    f.talos.upgrade = async (node, image, timeout) => {
      lockSeen ||= fs.existsSync(
        path.join(f.root, ".pulumi-state", "locks", "talos-platform", "staging.lock"),
      );
      await original(node, image, timeout);
    };
    assert.equal(
      await runCli(["upgrade", "talos", "staging", "--to", "v1.14.1"], f.ctx),
      ExitCode.ok,
    );
    assert.ok(lockSeen);
    assert.ok(
      !fs.existsSync(path.join(f.root, ".pulumi-state", "locks", "talos-platform", "staging.lock")),
    );
  });

  it("refuses a malformed --to and --max-unavailable as usage errors", async () => {
    const f = dayTwoFixture();
    assert.equal(
      await runCli(["upgrade", "talos", "staging", "--to", "1.14"], f.ctx),
      ExitCode.usage,
    );
    assert.match(f.ctx.stderr.text, /--to: must be a Talos version like v1\.14\.1; got "1\.14"/);
    assert.equal(
      await runCli(
        ["upgrade", "talos", "staging", "--to", "v1.14.1", "--max-unavailable", "0"],
        f.ctx,
      ),
      ExitCode.usage,
    );
    assert.deepEqual(f.talos.log, []);
  });

  it("needs installer images in the outputs", async () => {
    const outputs = foundationOutputs();
    delete (outputs.installerImages.value as Record<string, string>)["w-2"];
    const f = dayTwoFixture({ outputs, stack: stackYaml() });
    assert.equal(
      await runCli(["upgrade", "talos", "staging", "--to", "v1.14.1"], f.ctx),
      ExitCode.refused,
    );
    assert.match(
      f.ctx.stderr.text,
      /installerImages output: nodes lack a tagged installer image; got w-2: null/,
    );
  });
});
