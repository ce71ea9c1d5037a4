// The emulator against the real clients: five emulated nodes (3 control planes, 2 workers) on
// loopback, configured with the real talosctl in maintenance mode, then driven through the
// project's own talosctl client (automation/dayTwo/talosctl.ts, real talosctl underneath): versions,
// bootstrap, etcd members, health, resources, snapshot, an upgrade roll with injected faults, drift,
// the etcd disaster recovery and a reset. Run with `npm run test:emulator` (builds the tools once).
import { strict as assert } from "node:assert";
import { randomInt } from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { UserError } from "../../automation/errors";
import type { TalosClient } from "../../automation/dayTwo/talosClient";
import { TalosctlClient } from "../../automation/dayTwo/talosctl";
import { spawnRunner } from "../../automation/dayTwo/toolRunner";
import {
  buildEmulatorTools,
  type EmulatorTools,
  type RunningEmulator,
  startTalosEmulator,
  waitFor,
} from "./talosEmulator";

const TALOS = "v1.13.0";
const UPGRADE_IMAGE =
  "factory.talos.dev/metal-installer/376567988ad370138ad8b2698212367b8edcb69b5fd68c80be1f2ec7d603b4ba:v1.13.9";

describe("Talos emulator with talosctl and the project's talosctl client", function () {
  // Building talosctl from its module takes minutes on a cold cache; each step below is bounded.
  this.timeout(10 * 60_000);

  // A /24 of its own, away from the addresses other test tiers use, so runs on one machine do not collide.
  const subnet = `127.${randomInt(100, 200)}.${randomInt(0, 256)}`;
  const nodes = [
    { name: "cp1", address: `${subnet}.11`, role: "controlplane" },
    { name: "cp2", address: `${subnet}.12`, role: "controlplane" },
    { name: "cp3", address: `${subnet}.13`, role: "controlplane" },
    { name: "w1", address: `${subnet}.21`, role: "worker" },
    { name: "w2", address: `${subnet}.22`, role: "worker" },
  ] as const;
  const cps = nodes.filter((n) => n.role === "controlplane").map((n) => n.address);
  const workers = nodes.filter((n) => n.role === "worker").map((n) => n.address);
  const addressOf = (name: string) => nodes.find((n) => n.name === name)!.address;

  let tools: EmulatorTools;
  let emulator: RunningEmulator;
  let dir: string;
  let talos: TalosClient;
  const log: string[] = [];

  /** Runs talosctl directly (for what the project's client does not wrap: gen, apply, bootstrap, reset). */
  async function talosctl(args: string[], timeoutMs = 120_000) {
    const result = await spawnRunner(tools.talosctl, args, { timeoutMs });
    log.push(`$ talosctl ${args.join(" ")}\n${result.stdout}${result.stderr}`);
    return result;
  }

  const connection = () => ["--talosconfig", path.join(dir, "talosconfig"), "--endpoints", cps[0]];

  /** talosctl apply-config of the node's generated config with its hostname (and more patches). */
  async function applyConfig(name: string, flags: string[], ...patches: string[]) {
    const node = nodes.find((n) => n.name === name)!;
    const file = node.role === "controlplane" ? "controlplane.yaml" : "worker.yaml";
    const hostname = JSON.stringify({
      apiVersion: "v1alpha1",
      kind: "HostnameConfig",
      auto: "off",
      hostname: node.name,
    });
    const result = await talosctl([
      "apply-config",
      ...flags,
      "--nodes",
      node.address,
      "--file",
      path.join(dir, file),
      ...[hostname, ...patches].flatMap((patch) => ["--config-patch", patch]),
    ]);
    assert.equal(result.code, 0, `apply-config ${flags.join(" ")} ${name}: ${result.stderr}`);
  }

  const applyInsecure = (name: string) =>
    applyConfig(name, ["--insecure", "--endpoints", addressOf(name)]);

  async function running(name: string) {
    return waitFor(`${name} running`, async () => {
      const status = await emulator.node(name);
      if (status.phase !== "running") throw new Error(`phase ${status.phase}`);
      return status;
    });
  }

  before(async function () {
    this.timeout(50 * 60_000);
    tools = buildEmulatorTools();
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "talos-emulator-smoke-"));
    emulator = await startTalosEmulator({
      binary: tools.emulator,
      nodes,
      talosVersion: TALOS,
      timeoutMs: 30 * 60_000,
      log: (line) => log.push(line),
    });
    const gen = await talosctl([
      "gen",
      "config",
      "smoke",
      `https://${subnet}.10:6443`,
      "--install-disk",
      "/dev/sda",
      "--output-dir",
      dir,
    ]);
    assert.equal(gen.code, 0, gen.stderr);
    talos = new TalosctlClient({
      binary: tools.talosctl,
      connection: { talosconfig: path.join(dir, "talosconfig"), endpoints: cps },
      progress: (text) => log.push(text),
    });
  });

  after(async function () {
    await emulator?.stop();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  afterEach(function () {
    if (this.currentTest?.state === "failed") console.log(log.slice(-80).join("\n"));
  });

  async function maintenance(name: string) {
    await waitFor(`${name} in maintenance mode`, async () => {
      const status = await emulator.node(name);
      if (status.phase !== "maintenance") throw new Error(status.phase);
    });
  }

  it("takes each node's config in maintenance mode (talosctl apply-config --insecure)", async () => {
    for (const node of nodes) {
      await maintenance(node.name);
      await applyInsecure(node.name);
    }
    for (const node of nodes) {
      const status = await running(node.name);
      assert.equal(status.hostname, node.name);
      assert.equal(status.type, node.role);
    }
  });

  it("reports the client's and every node's version", async () => {
    assert.equal(await talos.clientVersion(), TALOS);
    for (const node of nodes) assert.equal(await talos.nodeVersion(node.address), TALOS);
  });

  it("bootstraps etcd once; a second bootstrap is refused", async () => {
    const first = await talosctl(["bootstrap", ...connection(), "--nodes", cps[0]]);
    assert.equal(first.code, 0, first.stderr);
    const members = await waitFor("three voting etcd members", async () => {
      const list = await talos.etcdMembers(cps[0]);
      if (list.length !== 3 || list.some((m) => m.learner)) throw new Error(JSON.stringify(list));
      return list;
    });
    assert.deepEqual(members.map((m) => m.hostname).sort(), ["cp1", "cp2", "cp3"]);
    assert.deepEqual(members.find((m) => m.hostname === "cp2")!.peerUrls, [
      `https://${cps[1]}:2380`,
    ]);
    assert.deepEqual(await talos.service(cps[1], "etcd"), { state: "Running", health: "OK" });
    const again = await talosctl(["bootstrap", ...connection(), "--nodes", cps[0]]);
    assert.notEqual(again.code, 0);
    assert.match(again.stderr, /AlreadyExists desc = etcd data directory is not empty/);
  });

  it("passes talosctl health (server side: Talos' checks, Kubernetes included)", async () => {
    await talos.health({ via: cps[0], controlPlanes: cps, workers, timeoutMs: 120_000 });
  });

  it("reads the kubelet version and the machine config (talosctl get)", async () => {
    assert.match(await talos.kubeletVersion(workers[0]), /^1\.\d+\.\d+$/);
    const config = await talos.machineConfig(cps[0]);
    assert.match(config, /kind: HostnameConfig/);
    assert.match(config, /hostname: cp1/);
    assert.match(config, /type: controlplane/);
  });

  it("streams an etcd snapshot into a 0600 file", async () => {
    const file = path.join(dir, "etcd.snapshot");
    await talos.etcdSnapshot(cps[0], file);
    const stat = fs.statSync(file);
    assert.equal(stat.mode & 0o777, 0o600);
    assert.equal(stat.size % 512, 32, "the SHA-256 trailer talosctl checks for");
  });

  it("stops an upgrade at the faulted control plane; the others are untouched until the fault is cleared", async () => {
    await emulator.setFaults("cp2", { upgradeFails: true });
    await talos.upgrade(cps[0], UPGRADE_IMAGE, 120_000);
    assert.equal(await talos.nodeVersion(cps[0]), "v1.13.9");

    await assert.rejects(talos.upgrade(cps[1], UPGRADE_IMAGE, 120_000), (error: unknown) => {
      assert.ok(error instanceof UserError);
      assert.match(error.message, /talosctl upgrade .* failed with exit code 1/);
      return true;
    });
    assert.equal(await talos.nodeVersion(cps[1]), TALOS);
    assert.equal(await talos.nodeVersion(cps[2]), TALOS);

    await emulator.setFaults("cp2", {});
    await talos.upgrade(cps[1], UPGRADE_IMAGE, 120_000);
    assert.equal(await talos.nodeVersion(cps[1]), "v1.13.9");
  });

  it("a rolled back upgrade looks successful to talosctl; only the node's version tells", async () => {
    await emulator.setFaults("cp3", { upgradeRollback: true });
    await talos.upgrade(cps[2], UPGRADE_IMAGE, 120_000);
    assert.equal(await talos.nodeVersion(cps[2]), TALOS);
    await emulator.setFaults("cp3", {});
  });

  it("fails health while a worker is unhealthy, passes once it recovers", async () => {
    await emulator.setFaults("w2", { unhealthy: true });
    // The client names the check talosctl last reported failing (parseHealthFailure).
    await assert.rejects(
      talos.health({ via: cps[0], controlPlanes: cps, workers, timeoutMs: 5_000 }),
      (error: unknown) => {
        assert.ok(error instanceof UserError);
        assert.match(error.message, /the check "no diagnostics" did not pass/);
        assert.match(error.message, /emulated fault: node unhealthy/);
        return true;
      },
    );
    await emulator.setFaults("w2", {});
    await talos.health({ via: cps[0], controlPlanes: cps, workers, timeoutMs: 120_000 });
  });

  it("shows a config changed behind the program's back (drift)", async () => {
    await emulator.patchConfig(
      "w1",
      "machine:\n  kubelet:\n    image: ghcr.io/siderolabs/kubelet:v1.35.2\n",
    );
    assert.equal(await talos.kubeletVersion(addressOf("w1")), "1.35.2");
    assert.match(await talos.machineConfig(addressOf("w1")), /kubelet:v1\.35\.2/);
  });

  it("stages a change that needs a reboot; the client sees it pending and reboots the node into it", async () => {
    const udev = 'machine:\n  udev:\n    rules:\n      - SUBSYSTEM=="drm", GROUP="44"\n';
    await applyConfig("w2", ["--mode", "staged", ...connection()], udev);
    assert.match((await talos.machineConfigs(addressOf("w2"))).persistent ?? "", /SUBSYSTEM==/);
    assert.doesNotMatch(await talos.machineConfig(addressOf("w2")), /SUBSYSTEM==/);
    await talos.reboot(addressOf("w2"), 120_000);
    assert.match(await talos.machineConfig(addressOf("w2")), /SUBSYSTEM==/);
  });

  it("recovers etcd from the snapshot after every control plane lost its data", async () => {
    await Promise.all(cps.map((cp) => talos.wipeVolumes(cp, ["EPHEMERAL"])));
    for (const cp of cps) {
      await waitFor(`etcd waiting for a bootstrap on ${cp}`, async () => {
        const etcd = await talos.service(cp, "etcd");
        if (etcd.state !== "Preparing") throw new Error(etcd.state);
      });
    }
    assert.equal((await emulator.clusters())[0].bootstrapped, false);

    await talos.bootstrapRecover(cps[0], path.join(dir, "etcd.snapshot"), false);
    await waitFor("three voting etcd members after the recovery", async () => {
      const list = await talos.etcdMembers(cps[0]);
      if (list.length !== 3 || list.some((m) => m.learner)) throw new Error(JSON.stringify(list));
    });
    await talos.health({ via: cps[0], controlPlanes: cps, workers, timeoutMs: 120_000 });
  });

  it("resets a worker to maintenance mode (talosctl reset); it takes a config again", async () => {
    const reset = await talosctl(
      ["reset", "--graceful=false", "--reboot", ...connection(), "--nodes", addressOf("w2")],
      180_000,
    );
    assert.equal(reset.code, 0, reset.stderr);
    await maintenance("w2");
    await applyInsecure("w2");
    await running("w2");
  });
});

describe("talosctl 1.13 upgrade without a reachable Kubernetes API", function () {
  this.timeout(10 * 60_000);

  let tools: EmulatorTools;
  let emulator: RunningEmulator | undefined;
  let dir: string;
  const address = `127.${randomInt(100, 200)}.${randomInt(0, 256)}.31`;

  before(() => {
    tools = buildEmulatorTools();
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "talos-emulator-drain-"));
  });

  after(async () => {
    await emulator?.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it("fails at the drain, after the new version is installed (it runs from the next reboot)", async () => {
    emulator = await startTalosEmulator({
      binary: tools.emulator,
      nodes: [{ name: "cp", address }],
    });
    const run = (args: string[]) => spawnRunner(tools.talosctl, args, { timeoutMs: 180_000 });
    // The cluster endpoint is a documentation address nothing answers on.
    const gen = await run([
      "gen",
      "config",
      "far",
      "https://192.0.2.10:6443",
      "--install-disk",
      "/dev/sda",
      "--output-dir",
      dir,
    ]);
    assert.equal(gen.code, 0, gen.stderr);
    await waitFor("maintenance mode", async () => {
      if ((await emulator!.node("cp")).phase !== "maintenance") throw new Error("not yet");
    });
    const apply = await run([
      "apply-config",
      "--insecure",
      "-n",
      address,
      "-e",
      address,
      "-f",
      path.join(dir, "controlplane.yaml"),
    ]);
    assert.equal(apply.code, 0, apply.stderr);
    const connection = [
      "--talosconfig",
      path.join(dir, "talosconfig"),
      "-e",
      address,
      "-n",
      address,
    ];
    await waitFor("bootstrap", async () => {
      const result = await run(["bootstrap", ...connection]);
      if (result.code !== 0) throw new Error(result.stderr);
    });

    const upgrade = await run([
      "upgrade",
      "--image",
      UPGRADE_IMAGE,
      "--wait",
      "--timeout",
      "2m",
      ...connection,
    ]);
    assert.notEqual(upgrade.code, 0);
    assert.match(
      `${upgrade.stdout}${upgrade.stderr}`,
      /upgrade completed[\s\S]*192\.0\.2\.10:6443/,
    );
    const node = await emulator.node("cp");
    assert.equal(node.version, "v1.13.0", "not rebooted");
    await emulator.reboot("cp");
    await waitFor("the node back on the installed version", async () => {
      const status = await emulator!.node("cp");
      if (status.phase !== "running" || status.version !== "v1.13.9")
        throw new Error(`${status.phase} ${status.version}`);
    });
  });
});
