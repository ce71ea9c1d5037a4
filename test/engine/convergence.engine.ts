// A change merged into the stack file reaching a running cluster through `platform up`, against the
// real engine, the Talos provider stand-in and the real talosctl, on emulated Talos nodes
// (test/emulator/talos-emulator: cp-1..cp-3 and worker-1 on 127.15.40.0/24, cp-4 and cp-5 waiting
// in maintenance mode). Steps, in order (each builds on the one before; the tier bails at the first
// failure):
//   1. up: the cluster, three control planes and a worker;
//   2. a Kubernetes bump: the preview lists the disruption and changes no config; a bare
//      `pulumi up` keeps every node's kubelet on the running version and says what waits; the CLI's
//      `up` runs talosctl upgrade-k8s before its engine run, as far as the emulator serves it;
//   3. control planes 3 → 5: one engine run each, every new one a voting member before the next;
//   4. control planes 5 → 3: the preview lists the leaves before the engine run; `up` takes each
//      out of etcd, unprotects its resources, and the engine run resets its machine.
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as path from "node:path";
import { parseKubeletVersion } from "../../automation/dayTwo/talosctlOutput";
import { spawnRunner } from "../../automation/dayTwo/toolRunner";
import { ExitCode } from "../../automation/errors";
import {
  type EmulatorTools,
  type RunningEmulator,
  buildEmulatorTools,
  startTalosEmulator,
  waitForMaintenance,
  waitFor,
} from "../emulator/talosEmulator";
import { type CliRun, EngineSandbox, engineTools } from "./harness";

const STACK = "convergence";
const SUBNET = "127.15.40";
const CONTROL_PLANES = ["cp-1", "cp-2", "cp-3", "cp-4", "cp-5"] as const;
const NODES = [
  ...CONTROL_PLANES.map((name, i) => ({ name, address: `${SUBNET}.${11 + i}` })),
  { name: "worker-1", address: `${SUBNET}.21` },
];
const FROM_KUBERNETES = "1.35.6";
const TO_KUBERNETES = "1.36.3";
const CONFIG_APPLY = "talos:machine/configurationApply:ConfigurationApply";

function explain(run: CliRun | { code: number; stdout: string; stderr: string }): string {
  return `exit ${run.code}\n--- stdout\n${run.stdout}\n--- stderr\n${run.stderr}`;
}

/** The stack file's node entry of a control plane, as the shipped ones are written. */
function controlPlaneEntry(name: string, address: string): string {
  return [
    `    - name: ${name}`,
    "      role: controlplane",
    "      platform: baremetal",
    `      network: { interface: eth0, addresses: [${address}/24], gateway: ${SUBNET}.1 }`,
    `      baremetal: { address: ${address} }`,
    "",
  ].join("\n");
}

/** The steps of an engine run on ConfigurationApply resources: `create cp-4`, `update cp-1`, … */
function configSteps(run: CliRun): string[] {
  return run.events.flatMap((e) => {
    const metadata = e.resOutputsEvent?.metadata;
    if (!metadata || metadata.type !== CONFIG_APPLY || metadata.op === "same") return [];
    const name = metadata.urn.split("::").at(-1)!;
    if (!name.endsWith("-config")) return [];
    return [`${metadata.op} ${name.slice(`${STACK}-`.length, -"-config".length)}`];
  });
}

/** The engine runs (summary events) of one CLI run. */
function engineRuns(run: CliRun): number {
  return run.events.filter((e) => e.summaryEvent !== undefined).length;
}

describe("the engine tier: a running cluster converged by up", function () {
  this.timeout(10 * 60_000);
  const tools = engineTools();
  let emulatorTools: EmulatorTools;
  let emulator: RunningEmulator;
  let sandbox: EngineSandbox;
  let stackFile: string;
  let talosconfig: string;
  const log: string[] = [];
  let started = Date.now();

  before(async function () {
    this.timeout(50 * 60_000);
    emulatorTools = buildEmulatorTools();
    started = Date.now();
    emulator = await startTalosEmulator({
      binary: emulatorTools.emulator,
      nodes: NODES,
      talosVersion: "v1.13.0",
      timeoutMs: 40 * 60_000,
      log: (line) => log.push(line),
    });
    sandbox = new EngineSandbox(tools);
    stackFile = sandbox.writeFixtureStack(STACK);
    talosconfig = path.join(sandbox.dir, `${STACK}.talosconfig`);
    await waitForMaintenance(
      emulator,
      NODES.map((n) => n.name),
    );
  });

  after(async () => {
    await emulator?.stop();
    if (sandbox && process.env.ENGINE_KEEP_SANDBOX === undefined) sandbox.remove();
    process.stdout.write(
      `      (convergence wall time ${Math.round((Date.now() - started) / 1000)} s)\n`,
    );
  });

  afterEach(function () {
    if (this.currentTest?.state === "failed") console.log(log.slice(-60).join("\n"));
  });

  const cli = (argv: string[]) =>
    sandbox.cli(argv, {
      TALOSCTL: emulatorTools.talosctl,
      TALOS_STANDIN_RETRY_WINDOW: "60s",
    });
  const editStack = (edit: (text: string) => string) =>
    fs.writeFileSync(stackFile, edit(fs.readFileSync(stackFile, "utf8")));
  /** etcd's members as the emulator holds them: `cp-1`, … (`cp-4 (learner)` while it is one). */
  const members = async () =>
    (await emulator.clusters())[0].members
      .map((m) => `${m.hostname}${m.learner ? " (learner)" : ""}`)
      .sort();
  /** The kubelet version each running node's KubeletSpec shows (what its applied config asks for). */
  const kubelets = async (names: readonly string[]) => {
    const found: Record<string, string> = {};
    for (const name of names) {
      const address = NODES.find((n) => n.name === name)!.address;
      const run = await spawnRunner(
        emulatorTools.talosctl,
        [
          ...["--talosconfig", talosconfig, "--endpoints", `${SUBNET}.11`, "--nodes", address],
          ...["get", "kubeletspec", "--output", "yaml"],
        ],
        { timeoutMs: 60_000 },
      );
      assert.equal(run.code, 0, run.stderr);
      found[name] = parseKubeletVersion(run.stdout);
    }
    return found;
  };
  const running = ["cp-1", "cp-2", "cp-3", "worker-1"];
  const on = (version: string, names = running) =>
    Object.fromEntries(names.map((name) => [name, version]));

  describe("1. up", () => {
    it("creates the cluster: three voting control planes and a worker", async () => {
      const run = await cli(["up", STACK]);
      assert.equal(run.code, ExitCode.ok, explain(run));
      assert.deepEqual(await members(), ["cp-1", "cp-2", "cp-3"]);
      const exported = await cli(["talosconfig", STACK, "--out", talosconfig]);
      assert.equal(exported.code, ExitCode.ok, explain(exported));
      assert.deepEqual(await kubelets(running), on(FROM_KUBERNETES));
    });
  });

  describe("2. a Kubernetes bump", () => {
    before(() => {
      editStack((text) =>
        text.replace(
          `kubernetesVersion: ${FROM_KUBERNETES}`,
          `kubernetesVersion: ${TO_KUBERNETES}`,
        ),
      );
    });

    it("the preview lists what up will do, in order, and pushes no config", async () => {
      const run = await cli(["preview", STACK]);
      assert.equal(run.code, ExitCode.ok, explain(run));
      assert.match(
        run.stdout,
        new RegExp(
          `up foundation/${STACK} would, in order \\(versions as the state records them; up asks the nodes first\\):\\n  1\\. Kubernetes ${FROM_KUBERNETES.replace(/\./g, "\\.")} → ${TO_KUBERNETES.replace(/\./g, "\\.")} \\(talosctl upgrade-k8s\\): an etcd snapshot; kube-apiserver, kube-controller-manager and kube-scheduler restarted on cp-1, cp-2, cp-3 one node at a time, then kube-proxy, then the kubelet of each of the 4 nodes one at a time; no node reboots\\n`,
        ),
      );
      const planned = run.events.flatMap((e) => {
        const metadata = e.resourcePreEvent?.metadata;
        return metadata?.type === CONFIG_APPLY && metadata.op !== "same" ? [metadata.op] : [];
      });
      assert.deepEqual(planned, [], "no config changes in the preview");
    });

    it("a bare pulumi up keeps every kubelet on the running version and names the command that upgrades it", async () => {
      const run = sandbox.pulumi(["up", "--yes", "--skip-preview", "--stack", STACK]);
      assert.equal(run.code, 0, explain(run));
      assert.match(
        run.stdout + run.stderr,
        new RegExp(
          `cluster\\.kubernetesVersion: the stack file asks for ${TO_KUBERNETES.replace(/\./g, "\\.")}; the cluster runs ${FROM_KUBERNETES.replace(/\./g, "\\.")}, which every config keeps\\. \`npm run platform -- up ${STACK}\` upgrades it`,
        ),
      );
      assert.deepEqual(await kubelets(running), on(FROM_KUBERNETES));
    });

    it("the CLI's up runs upgrade-k8s before its engine run: no config carries the new version first", async () => {
      const run = await cli(["up", STACK]);
      const upgradeK8s = /talosctl upgrade-k8s|upgrade-k8s/;
      assert.match(run.stdout + run.stderr, upgradeK8s, explain(run));
      if (run.code === ExitCode.ok) {
        assert.deepEqual(await kubelets(running), on(TO_KUBERNETES));
        return;
      }
      // The emulator does not serve all of upgrade-k8s: the step stops, gated, before the engine
      // ran, and no node was handed the new version.
      assert.equal(run.code, ExitCode.failed, explain(run));
      assert.equal(engineRuns(run), 0, "the engine never ran");
      assert.deepEqual(await kubelets(running), on(FROM_KUBERNETES));
      const reason = run.stderr.split("\n").find((line) => /problem|error|failed/i.test(line));
      console.log(`      (upgrade-k8s against the emulator: ${reason ?? run.stderr.trim()})`);
      editStack((text) =>
        text.replace(
          `kubernetesVersion: ${TO_KUBERNETES}`,
          `kubernetesVersion: ${FROM_KUBERNETES}`,
        ),
      );
    });
  });

  describe("3. control planes 3 → 5", () => {
    it("up adds cp-4 in one engine run and cp-5 in the next, once cp-4 votes", async () => {
      editStack((text) =>
        text.replace(
          "    - name: worker-1\n",
          `${controlPlaneEntry("cp-4", `${SUBNET}.14`)}${controlPlaneEntry("cp-5", `${SUBNET}.15`)}    - name: worker-1\n`,
        ),
      );
      const run = await cli(["up", STACK]);
      assert.equal(run.code, ExitCode.ok, explain(run));
      assert.equal(engineRuns(run), 2, explain(run));
      assert.deepEqual(configSteps(run), ["create cp-4", "create cp-5"]);
      assert.match(run.stdout, /etcd: cp-1, cp-2, cp-3, cp-4 voting members; cluster healthy/);
      await waitFor("five voting members", async () => {
        const now = await members();
        if (now.join() !== "cp-1,cp-2,cp-3,cp-4,cp-5") throw new Error(now.join());
      });
    });
  });

  describe("4. control planes 5 → 3", () => {
    before(() => {
      editStack((text) =>
        text
          .replace(controlPlaneEntry("cp-4", `${SUBNET}.14`), "")
          .replace(controlPlaneEntry("cp-5", `${SUBNET}.15`), ""),
      );
    });

    it("the preview lists both leaves before the engine run that deletes them", async () => {
      const run = await cli(["preview", STACK]);
      assert.equal(run.code, ExitCode.ok, explain(run));
      assert.match(
        run.stdout,
        /\n {2}1\. drain: cp-4, cp-5 cordoned and drained \(kubectl; [^\n]*\)\n {2}2\. etcd: cp-4, cp-5 leave one after the other \(an etcd snapshot first; quorum without each checked, leadership handed over\)\n {2}3\. the engine run: deletes cp-4, cp-5 \(machine and config\)\n {2}4\. kubernetes: the Node objects of cp-4, cp-5 deleted, then the cluster's health checked/,
      );
    });

    it("up takes each out of etcd, then the engine run resets their machines", async () => {
      const run = await cli(["up", STACK]);
      assert.equal(run.code, ExitCode.ok, explain(run));
      assert.match(run.stdout, /kubernetes: draining cp-4/);
      assert.match(run.stdout, /etcd: cp-4 handed leadership over and left/);
      assert.match(run.stdout, /etcd: cp-5 handed leadership over and left/);
      assert.match(run.stdout, /cp-4, cp-5 left etcd; the engine run removes their machines/);
      assert.deepEqual(configSteps(run).sort(), ["delete cp-4", "delete cp-5"]);
      assert.match(run.stdout, /kubernetes: deleted the Node objects of cp-4, cp-5/);
      assert.match(run.stdout, /up foundation\/convergence: cp-4, cp-5 removed; cluster healthy/);
      assert.deepEqual(await members(), ["cp-1", "cp-2", "cp-3"]);
      for (const name of ["cp-4", "cp-5"]) {
        await waitFor(`${name} reset to maintenance mode`, async () => {
          const status = await emulator.node(name);
          if (status.phase !== "maintenance") throw new Error(status.phase);
        });
      }
    });
  });
});
