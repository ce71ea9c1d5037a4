// Records the real talosctl for every call the project's TalosctlClient makes, against the Talos
// emulator running a cluster shaped like the day-two fixture (test/dayTwo/helpers.ts NODES: cp-1..3
// at .11-.13, w-1..3 at .21-.23, on 127.0.2.0/24 so addresses have the fixture's widths): the
// client itself builds every command line, through a runner that keeps what talosctl printed.
// A normal run compares the fresh recordings with test/fixtures/talosctl/ in shape (ids, times and
// sizes aside), so a talosctl whose output changed fails here; TALOSCTL_RECORD=1 writes them
// there instead. Run with `npm run test:talosctl-recordings` (also part of `npm run test:emulator`).
import { strict as assert } from "node:assert";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { TalosctlClient } from "../../automation/dayTwo/talosctl";
import { parseHealthFailure } from "../../automation/dayTwo/talosctlOutput";
import {
  type CommandResult,
  type CommandRunner,
  spawnRunner,
} from "../../automation/dayTwo/toolRunner";
import { NODES, SCHEMATIC } from "../dayTwo/helpers";
import {
  EMULATED_NET,
  FIXTURE_NET,
  assertSameShape,
  refuseSecrets,
  scrub,
  secretsOf,
  writeRecording,
} from "./talosctlRecorder";
import {
  RECORDINGS_DIR,
  type StoredRecording,
  hasRecording,
  recordingNames,
  toStored,
} from "./talosctlRecordings";
import {
  type EmulatorTools,
  type RunningEmulator,
  repoRoot,
  startTalosEmulator,
  waitFor,
} from "./talosEmulator";

const RECORD = process.env.TALOSCTL_RECORD === "1";
const UPGRADE_IMAGE = `factory.talos.dev/nocloud-installer/${SCHEMATIC}:v1.13.9`;
/** A failing health check waits this long; retried when the machine was too slow to reach the check. */
const FAILING_HEALTH_WAIT = 20_000;

/** The fixture's nodes at their emulated addresses. */
const nodes = NODES.map((n) => ({ ...n, address: n.address.replace(FIXTURE_NET, EMULATED_NET) }));
const at = (name: string) => nodes.find((n) => n.name === name)!.address;
const cps = nodes.filter((n) => n.role === "controlplane").map((n) => n.address);
const workers = nodes.filter((n) => n.role === "worker").map((n) => n.address);

/**
 * test/emulator/talos-emulator/build.sh's tools (cached in .engine-tools/bin; ENGINE_BIN names
 * another folder). Not talosEmulator.ts' buildEmulatorTools: it still runs the script from the
 * folder it lived in before it moved (engine/talos-emulator).
 */
function emulatorTools(): EmulatorTools {
  const script = path.join(repoRoot, "test", "emulator", "talos-emulator", "build.sh");
  const result = spawnSync("bash", [script], {
    cwd: repoRoot,
    encoding: "utf8",
    timeout: 45 * 60_000,
    stdio: ["ignore", "pipe", "inherit"],
  });
  if (result.error) throw result.error;
  if (result.status !== 0) throw new Error(`${script} failed with exit code ${result.status}`);
  const value = (key: string) => {
    const line = result.stdout.split("\n").find((l) => l.startsWith(`${key}=`));
    if (!line) throw new Error(`build.sh printed no ${key}= line`);
    return line.slice(key.length + 1);
  };
  return { talosctl: value("TALOSCTL"), emulator: value("TALOS_EMULATOR") };
}

describe("talosctl recordings (test/fixtures/talosctl)", function () {
  this.timeout(10 * 60_000);

  let tools: EmulatorTools;
  let emulator: RunningEmulator;
  let sandbox: string;
  let secrets: Map<string, string>;
  let client: TalosctlClient;
  const log: string[] = [];
  const runs: { args: readonly string[]; result: CommandResult }[] = [];
  const fresh = new Map<string, StoredRecording>();

  /** The client's runner: the real talosctl, every run kept. */
  const run: CommandRunner = async (command, args, options) => {
    const result = await spawnRunner(command, args, options);
    runs.push({ args, result });
    log.push(`$ talosctl ${args.join(" ")}\n${result.stdout}${result.stderr}`);
    return result;
  };

  /** Runs talosctl directly, for what the client does not wrap (gen, apply-config, bootstrap). */
  async function talosctl(args: string[]) {
    const result = await spawnRunner(tools.talosctl, args, { timeoutMs: 180_000 });
    log.push(`$ talosctl ${args.join(" ")}\n${result.stdout}${result.stderr}`);
    assert.equal(result.code, 0, `talosctl ${args.join(" ")}: ${result.stderr}`);
    return result;
  }
  const connection = () => [
    "--talosconfig",
    path.join(sandbox, "talosconfig"),
    "--endpoints",
    cps.join(","),
  ];

  /**
   * Makes one client call and keeps the one talosctl run it made as recording `name`: arguments,
   * output and exit code with the sandbox, the secrets and the emulated addresses replaced.
   */
  async function record(
    name: string,
    scenario: string,
    call: () => Promise<unknown>,
    options: { fails?: boolean; emulator?: () => Promise<StoredRecording["emulator"]> } = {},
  ): Promise<StoredRecording> {
    const from = runs.length;
    let failure: unknown;
    await call().catch((error: unknown) => (failure = error ?? new Error("rejected")));
    const made = runs.slice(from);
    assert.equal(made.length, 1, `${name}: the client made ${made.length} talosctl runs`);
    if (options.fails) assert.ok(failure, `${name}: expected the call to fail`);
    else if (failure) throw failure;
    const [{ args, result }] = made;
    assert.equal(result.timedOut, false, `${name}: talosctl timed out`);
    const clean = (text: string) => scrub(text, sandbox, secrets);
    const target = args[args.indexOf("--nodes") + 1];
    const node = args.includes("--nodes") ? nodes.find((n) => n.address === target) : undefined;
    const extra = await options.emulator?.();
    const stored = toStored({
      scenario,
      ...(node ? { node: { name: node.name, address: clean(node.address) } } : {}),
      args: args.map(clean),
      exitCode: result.code,
      stdout: clean(result.stdout),
      stderr: clean(result.stderr),
      ...(extra ? { emulator: JSON.parse(clean(JSON.stringify(extra))) } : {}),
    });
    refuseSecrets(name, stored, secrets);
    fresh.set(name, stored);
    await writeRecording(path.join(sandbox, "recordings"), name, stored);
    return stored;
  }

  const check = (timeoutMs: number, via = cps[0]) => ({
    via,
    controlPlanes: cps,
    workers,
    timeoutMs,
  });

  /** Waits for the cluster to pass talosctl health (not recorded). */
  const healthy = () =>
    waitFor("a passing talosctl health", () => client.health(check(120_000)), 300_000, 1000);

  async function phase(name: string, wanted: string) {
    await waitFor(
      `${name} ${wanted}`,
      async () => {
        const status = await emulator.node(name);
        if (status.phase !== wanted) throw new Error(`phase ${status.phase}`);
      },
      180_000,
    );
  }

  /** Records a health check failing; repeats it while talosctl did not get as far as `checkName`. */
  async function recordHealthFailure(name: string, scenario: string, checkName: string) {
    for (let attempt = 1; ; attempt++) {
      const stored = await record(name, scenario, () => client.health(check(FAILING_HEALTH_WAIT)), {
        fails: true,
      });
      const failure = parseHealthFailure(stored.stderr.join("\n"));
      if (failure?.check === checkName) return failure;
      if (attempt === 3) {
        assert.fail(
          `${name}: talosctl health never failed at "${checkName}": ${stored.stderr.join("\n")}`,
        );
      }
    }
  }

  before(async function () {
    this.timeout(50 * 60_000);
    tools = emulatorTools();
    sandbox = fs.mkdtempSync(path.join(os.tmpdir(), "talosctl-recording-"));
    emulator = await startTalosEmulator({
      binary: tools.emulator,
      nodes,
      timeoutMs: 30 * 60_000,
      log: (line) => log.push(line),
    });
    client = new TalosctlClient({
      binary: tools.talosctl,
      connection: { talosconfig: path.join(sandbox, "talosconfig"), endpoints: cps },
      run,
      progress: (text) => log.push(text),
    });
  });

  after(async function () {
    await emulator?.stop();
    if (sandbox) fs.rmSync(sandbox, { recursive: true, force: true });
  });

  afterEach(function () {
    if (this.currentTest?.state === "failed") console.log(log.slice(-80).join("\n"));
  });

  it("configures the fixture's six nodes in maintenance mode and bootstraps etcd", async () => {
    const secretsFile = path.join(sandbox, "secrets.yaml");
    await talosctl(["gen", "secrets", "--output-file", secretsFile]);
    await talosctl([
      ...["gen", "config", "staging", `https://${EMULATED_NET}10:6443`],
      ...["--with-secrets", secretsFile, "--install-disk", "/dev/sda", "--output-dir", sandbox],
    ]);
    secrets = secretsOf([secretsFile, path.join(sandbox, "talosconfig")]);
    for (const node of nodes) {
      await phase(node.name, "maintenance");
      await talosctl([
        ...["apply-config", "--insecure", "--nodes", node.address, "--endpoints", node.address],
        ...["--file", path.join(sandbox, `${node.role}.yaml`), "--config-patch"],
        JSON.stringify({
          apiVersion: "v1alpha1",
          kind: "HostnameConfig",
          auto: "off",
          hostname: node.name,
        }),
      ]);
    }
    for (const node of nodes) await phase(node.name, "running");
    await talosctl(["bootstrap", ...connection(), "--nodes", cps[0]]);
    await waitFor("three voting etcd members", async () => {
      const [cluster] = await emulator.clusters();
      if (cluster.members.length !== 3 || cluster.members.some((m) => m.learner))
        throw new Error(JSON.stringify(cluster.members));
    });
    await healthy();
  });

  it("records a passing health check, the client's version, a kubelet, etcd and its service", async () => {
    for (let attempt = 1; ; attempt++) {
      const stored = await record("health", "every node healthy", () =>
        client.health(check(120_000)),
      );
      // A check that failed for a moment before it passed would make the recording timing's.
      const statuses = stored.stderr.filter((line) => line.startsWith("waiting for "));
      if (statuses.every((line) => / (\.\.\.|OK)$/.test(line))) break;
      assert.ok(attempt < 3, `health never passed without a retry: ${stored.stderr.join("\n")}`);
    }
    await record("version-client", "local", () => client.clientVersion());
    await record("get-kubeletspec", "w-1 running", () => client.kubeletVersion(at("w-1")));
    await record("etcd-members", "three voting members", () => client.etcdMembers(cps[0]), {
      emulator: async () => ({ etcdMembers: (await emulator.clusters())[0].members }),
    });
    await record("service-etcd", "cp-2 joined etcd", () => client.service(at("cp-2"), "etcd"));
  });

  it("records the running and the staged machine config, and the reboot into it", async () => {
    const sysctl = 'machine:\n  sysctls:\n    net.core.somaxconn: "65535"\n';
    await talosctl([
      ...["apply-config", "--mode", "staged", ...connection(), "--nodes", at("w-1")],
      ...["--file", path.join(sandbox, "worker.yaml"), "--config-patch"],
      JSON.stringify({
        apiVersion: "v1alpha1",
        kind: "HostnameConfig",
        auto: "off",
        hostname: "w-1",
      }),
      ...["--config-patch", sysctl],
    ]);
    const staged = "w-1 has a sysctl staged for its next reboot";
    await record("get-machineconfig-v1alpha1", staged, () => client.machineConfig(at("w-1")));
    await record("get-machineconfig", staged, () => client.machineConfigs(at("w-1")));
    await record("reboot", "w-1 reboots into its staged config", () =>
      client.reboot(at("w-1"), 120_000),
    );
    assert.match(await client.machineConfig(at("w-1")), /somaxconn/);
    await healthy();
  });

  it("records an etcd snapshot, and one that fails", async () => {
    await record("etcd-snapshot", "three voting members", () =>
      client.etcdSnapshot(cps[0], path.join(sandbox, "etcd.snapshot")),
    );
    await emulator.setFaults("cp-1", { snapshotFails: true });
    await record(
      "etcd-snapshot-failed",
      "cp-1 has the emulator's snapshotFails fault",
      () => client.etcdSnapshot(cps[0], path.join(sandbox, "failed.snapshot")),
      { fails: true },
    );
    await emulator.setFaults("cp-1", {});
  });

  it("records an upgrade, the node's version after it, and an upgrade that fails", async () => {
    await record("upgrade", "w-1 on v1.13.0", () =>
      client.upgrade(at("w-1"), UPGRADE_IMAGE, 120_000),
    );
    await record("version", "w-1 upgraded to v1.13.9", () => client.nodeVersion(at("w-1")));
    await record("get-extensions", "w-1 booted a Factory image (its schematic extension)", () =>
      client.schematic(at("w-1")),
    );
    await emulator.setFaults("w-3", { upgradeFails: true });
    await record(
      "upgrade-failed",
      "w-3 has the emulator's upgradeFails fault",
      () => client.upgrade(at("w-3"), UPGRADE_IMAGE, 120_000),
      { fails: true },
    );
    await emulator.setFaults("w-3", {});
    await healthy();
  });

  it("records health failing at the check talosctl names: an unhealthy worker", async () => {
    await emulator.setFaults("w-2", { unhealthy: true });
    const failure = await recordHealthFailure(
      "health-failed",
      "w-2 has the emulator's unhealthy fault",
      "no diagnostics",
    );
    assert.match(failure.reason, /emulated fault: node unhealthy/);
    await emulator.setFaults("w-2", {});
    await healthy();
  });

  it("records every node call failing on a worker that is down, and health naming it", async () => {
    const down = "w-3 is down (the emulator's down fault)";
    await emulator.setFaults("w-3", { down: true });
    await recordHealthFailure("health-worker-down", down, "apid to be ready");
    const w3 = at("w-3");
    const unreachable: [string, () => Promise<unknown>][] = [
      ["version", () => client.nodeVersion(w3)],
      ["get-kubeletspec", () => client.kubeletVersion(w3)],
      ["get-machineconfig-v1alpha1", () => client.machineConfig(w3)],
      ["get-machineconfig", () => client.machineConfigs(w3)],
      ["service-etcd", () => client.service(w3, "etcd")],
      ["get-extensions", () => client.schematic(w3)],
      ["upgrade", () => client.upgrade(w3, UPGRADE_IMAGE, 60_000)],
      ["reboot", () => client.reboot(w3, 60_000)],
      ["reset", () => client.wipeVolumes(w3, ["EPHEMERAL"])],
    ];
    for (const [name, call] of unreachable)
      await record(`${name}-unreachable`, down, call, { fails: true });
    await emulator.setFaults("w-3", {});
    await phase("w-3", "running");
    await healthy();
  });

  it("records every etcd call failing on a control plane that is down, and health naming it", async () => {
    const down = "cp-3 is down (the emulator's down fault)";
    await emulator.setFaults("cp-3", { down: true });
    await recordHealthFailure("health-controlplane-down", down, "etcd to be healthy");
    const cp3 = at("cp-3");
    const [member] = await client.etcdMembers(cps[0]);
    const unreachable: [string, () => Promise<unknown>][] = [
      ["health", () => client.health(check(60_000, cp3))],
      ["etcd-members", () => client.etcdMembers(cp3)],
      ["etcd-snapshot", () => client.etcdSnapshot(cp3, path.join(sandbox, "down.snapshot"))],
      ["etcd-forfeit-leadership", () => client.etcdForfeitLeadership(cp3)],
      ["etcd-leave", () => client.etcdLeave(cp3)],
      ["etcd-remove-member", () => client.etcdRemoveMember(cp3, member.id)],
      [
        "bootstrap-recover",
        () => client.bootstrapRecover(cp3, path.join(sandbox, "etcd.snapshot"), false),
      ],
    ];
    for (const [name, call] of unreachable)
      await record(`${name}-unreachable`, down, call, { fails: true });
    await emulator.setFaults("cp-3", {});
    await phase("cp-3", "running");
    await healthy();
  });

  it("records etcd forfeit-leadership, leave and remove-member, the wipe of every control plane and the recovery", async () => {
    await record(
      "etcd-forfeit-leadership",
      "cp-3 hands etcd leadership over before it leaves",
      () => client.etcdForfeitLeadership(at("cp-3")),
    );
    await record("etcd-leave", "cp-3 leaves etcd", () => client.etcdLeave(at("cp-3")));
    const cp2 = (await client.etcdMembers(cps[0])).find((m) => m.hostname === "cp-2")!;
    await record("etcd-remove-member", "cp-2's member removed through cp-1", () =>
      client.etcdRemoveMember(cps[0], cp2.id),
    );
    await record("reset", "cp-1's EPHEMERAL wiped", () =>
      client.wipeVolumes(cps[0], ["EPHEMERAL"]),
    );
    await Promise.all(cps.slice(1).map((cp) => client.wipeVolumes(cp, ["EPHEMERAL"])));
    await waitFor("etcd on cp-1 waiting for a bootstrap", async () => {
      if ((await client.service(cps[0], "etcd")).state !== "Preparing") throw new Error("not yet");
    });
    await record("service-etcd-preparing", "every control plane's etcd data wiped", () =>
      client.service(cps[0], "etcd"),
    );
    await record("bootstrap-recover", "every control plane's etcd data wiped", () =>
      client.bootstrapRecover(cps[0], path.join(sandbox, "etcd.snapshot"), false),
    );
    await waitFor("three voting etcd members after the recovery", async () => {
      const list = await client.etcdMembers(cps[0]);
      if (list.length !== 3 || list.some((m) => m.learner)) throw new Error(JSON.stringify(list));
    });
    await healthy();
  });

  it(
    RECORD
      ? "writes the recordings into test/fixtures/talosctl (TALOSCTL_RECORD=1)"
      : "matches the committed recordings in shape",
    async () => {
      const names = [...fresh.keys()].sort();
      if (RECORD) {
        for (const stale of recordingNames().filter((name) => !fresh.has(name)))
          fs.rmSync(path.join(RECORDINGS_DIR, `${stale}.json`));
        for (const name of names) await writeRecording(RECORDINGS_DIR, name, fresh.get(name)!);
        return;
      }
      assert.deepEqual(recordingNames(), names, "committed recordings that were not recorded now");
      for (const name of names) {
        const file = path.join(RECORDINGS_DIR, `${name}.json`);
        const committed = hasRecording(name)
          ? (JSON.parse(fs.readFileSync(file, "utf8")) as StoredRecording)
          : undefined;
        assertSameShape(name, committed, fresh.get(name)!);
      }
    },
  );
});
