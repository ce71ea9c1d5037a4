// `rotate-ca --talos`, then `rotate-ca --kubernetes`, end to end against the real engine, the Talos
// provider plugin, the real talosctl and kubectl (KUBECTL, else PATH), on two emulated nodes (a
// control plane and a worker; the emulator's apid issues its certificate from the applied
// machine.ca and trusts machine.ca plus machine.acceptedCAs, as Talos' does, and its Kubernetes API
// on the cluster endpoint does the same with the control plane's cluster.ca and cluster.acceptedCAs
// at each handshake). For each CA: the credential exported before the rotation works until the new
// CA issues (every step is gated through the one the step exported) and is refused at the end; the
// one exported after it works; every step's record is in the stack file; the new Talos CA's key is
// a secret in the state.
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as path from "node:path";
import { parse } from "yaml";
import { spawnRunner } from "../../automation/dayTwo/toolRunner";
import { ExitCode } from "../../automation/errors";
import {
  buildEmulatorTools,
  type EmulatorTools,
  type RunningEmulator,
  startTalosEmulator,
  waitForMaintenance,
} from "../emulator/talosEmulator";
import { type CliRun, EngineSandbox, engineTools } from "./harness";
import { type Kubeconfig, kubeGet } from "./kube";

const STACK = "rotateca";
const PROJECT = "talos-platform";
const NODES = [
  { name: "cp-1", address: "127.15.80.11", role: "controlplane" },
  { name: "worker-1", address: "127.15.80.21", role: "worker" },
] as const;

function explain(run: CliRun): string {
  return `exit ${run.code}\n--- stdout\n${run.stdout}\n--- stderr\n${run.stderr}`;
}

/** The Talos CA certificate (PEM) a talosconfig's current context trusts. */
function talosconfigCa(text: string): string {
  const config = parse(text) as { context: string; contexts: Record<string, { ca: string }> };
  return Buffer.from(config.contexts[config.context].ca, "base64").toString("utf8");
}

/** The Kubernetes CA certificates (PEM) a kubeconfig trusts for the API server. */
function kubeconfigCa(text: string): string {
  const config = parse(text) as Kubeconfig;
  return Buffer.from(config.clusters[0].cluster["certificate-authority-data"], "base64").toString(
    "utf8",
  );
}

/** The names of the Nodes the API server lists through a kubeconfig file. */
async function nodeNames(file: string): Promise<string[]> {
  const list = (await kubeGet(
    parse(fs.readFileSync(file, "utf8")) as Kubeconfig,
    "/api/v1/nodes",
  )) as {
    items: { metadata: { name: string } }[];
  };
  return list.items.map((n) => n.metadata.name).sort();
}

/** The stack file's cluster.caRotation. */
function rotationRecords(stackFile: string): unknown {
  return (
    parse(fs.readFileSync(stackFile, "utf8")) as {
      config: Record<string, { caRotation?: unknown }>;
    }
  ).config[`${PROJECT}:cluster`].caRotation;
}

describe("the engine tier: rotate-ca --talos, then --kubernetes", function () {
  this.timeout(20 * 60_000);
  const tools = engineTools();
  let emulatorTools: EmulatorTools;
  let emulator: RunningEmulator;
  let sandbox: EngineSandbox;
  let stackFile: string;
  const log: string[] = [];
  let env: Record<string, string>;
  const oldTalosconfig = () => path.join(sandbox.dir, "old.talosconfig");
  const newTalosconfig = () => path.join(sandbox.dir, "new.talosconfig");

  const talosctl = (file: string) =>
    spawnRunner(
      emulatorTools.talosctl,
      ["--talosconfig", file, "--nodes", NODES.map((n) => n.address).join(","), "version"],
      { timeoutMs: 60_000 },
    );

  before(async function () {
    this.timeout(50 * 60_000);
    emulatorTools = buildEmulatorTools();
    emulator = await startTalosEmulator({
      binary: emulatorTools.emulator,
      nodes: NODES.map((n) => ({ name: n.name, address: n.address })),
      timeoutMs: 20 * 60_000,
      log: (line) => log.push(line),
    });
    sandbox = new EngineSandbox(tools);
    stackFile = sandbox.writeFixtureStack(STACK);
    await waitForMaintenance(
      emulator,
      NODES.map((n) => n.name),
    );
    env = { TALOSCTL: emulatorTools.talosctl, TALOS_STANDIN_RETRY_WINDOW: "60s" };
    const up = await sandbox.cli(["up", STACK], env);
    assert.equal(up.code, ExitCode.ok, explain(up));
    const exported = await sandbox.cli(["talosconfig", STACK, "--out", oldTalosconfig()], env);
    assert.equal(exported.code, ExitCode.ok, explain(exported));
  });

  after(async () => {
    await emulator?.stop();
    if (sandbox && process.env.ENGINE_KEEP_SANDBOX === undefined) sandbox.remove();
  });

  afterEach(function () {
    if (this.currentTest?.state === "failed") console.log(log.slice(-80).join("\n"));
  });

  it("the talosconfig from before works against both nodes", async () => {
    const run = await talosctl(oldTalosconfig());
    assert.equal(run.code, 0, run.stderr);
  });

  let rotation: CliRun;
  it("rotate-ca --talos runs every step through up, each gated on health, and records the end", async () => {
    rotation = await sandbox.cli(["rotate-ca", STACK, "--talos", "--health-timeout", "1m"], env);
    assert.equal(rotation.code, ExitCode.ok, explain(rotation));
    // generated once, then accepted, issuing and removed on cp-1, then on worker-1.
    const steps = rotation.stdout.match(/step \d+\/7: generation 1: [^\n]+/g) ?? [];
    assert.deepEqual(
      steps.map((s) => s.replace(/^step (\d+)\/7: generation 1: /, "$1 ")),
      [
        "1 new CA generated (no node changes)",
        "2 new CA accepted beside the old one on cp-1",
        "3 new CA accepted beside the old one on worker-1 (every node now)",
        "4 new CA issuing, old one still accepted on cp-1",
        "5 new CA issuing, old one still accepted on worker-1 (every node now)",
        "6 old CA removed on cp-1",
        "7 old CA removed on worker-1 (every node now)",
      ],
    );
    assert.equal(
      rotation.stdout.match(/every node answers through the exported talosconfig/g)?.length,
      7,
    );
    assert.match(
      rotation.stdout,
      /the talosconfig from before the rotation is refused by all 2 nodes/,
    );
    assert.deepEqual(rotationRecords(stackFile), { talos: { generation: 1, phase: "removed" } });
  });

  it("the talosconfig from before is refused by both nodes", async () => {
    const run = await talosctl(oldTalosconfig());
    assert.notEqual(run.code, 0, run.stdout);
  });

  it("the talosconfig exported now works against both nodes, with a new CA", async () => {
    const exported = await sandbox.cli(["talosconfig", STACK, "--out", newTalosconfig()], env);
    assert.equal(exported.code, ExitCode.ok, explain(exported));
    const run = await talosctl(newTalosconfig());
    assert.equal(run.code, 0, run.stderr);
    for (const node of NODES) {
      assert.match(run.stdout, new RegExp(`NODE:\\s+${node.address.replace(/\./g, "\\.")}`));
    }
    assert.notEqual(
      talosconfigCa(fs.readFileSync(newTalosconfig(), "utf8")),
      talosconfigCa(fs.readFileSync(oldTalosconfig(), "utf8")),
    );
  });

  it("keeps the new CA's key a secret in the state, as the cluster's own are", () => {
    const state = fs.readFileSync(sandbox.stateFile(PROJECT, STACK), "utf8");
    const checkpoint = JSON.parse(state) as {
      checkpoint: {
        latest: { resources: { urn: string; type: string; outputs?: Record<string, unknown> }[] };
      };
    };
    const generated = checkpoint.checkpoint.latest.resources.find((r) =>
      r.urn.endsWith("::rotateca-talos-ca-1"),
    );
    assert.ok(generated, "the generation-1 machine secrets are in the state");
    assert.equal(
      (generated.outputs?.machineSecrets as { [k: string]: unknown } | undefined)?.[
        "4dabf18193072939515e22adb298388d"
      ],
      "1b47061264138c4ac30d75fd1eb44270",
    );
  });
  describe("rotate-ca --kubernetes", () => {
    const oldKubeconfig = () => path.join(sandbox.dir, "old.kubeconfig");
    const newKubeconfig = () => path.join(sandbox.dir, "new.kubeconfig");
    const names = NODES.map((n) => n.name).sort();

    it("the kubeconfig from before lists both nodes", async () => {
      const exported = await sandbox.cli(["kubeconfig", STACK, "--out", oldKubeconfig()], env);
      assert.equal(exported.code, ExitCode.ok, explain(exported));
      assert.deepEqual(await nodeNames(oldKubeconfig()), names);
    });

    let run: CliRun;
    it("runs every step through up, each gated on the API server through the exported kubeconfig", async () => {
      run = await sandbox.cli(["rotate-ca", STACK, "--kubernetes", "--health-timeout", "1m"], env);
      assert.equal(run.code, ExitCode.ok, explain(run));
      const steps = run.stdout.match(/step \d+\/7: generation 1: [^\n]+/g) ?? [];
      assert.equal(steps.length, 7, run.stdout);
      // Each step's gate: Talos through the talosconfig, Kubernetes through the kubeconfig the step
      // exported: the one from before (its old CA) until the new CA issues on cp-1 (step 4), then
      // the one fetched anew, from the new CA.
      const gates = run.stdout.match(
        /the API server lists all 2 nodes Ready through the exported kubeconfig \([^)]+\)/g,
      );
      assert.deepEqual(
        gates?.map((line) => line.replace(/.*\((.+)\)$/, "$1")),
        [
          ...Array<string>(3).fill("the one from before this run"),
          ...Array<string>(4).fill("fetched anew since this run began"),
        ],
        run.stdout,
      );
      assert.match(
        run.stdout,
        /the kubeconfig from before the rotation is refused by the API server/,
      );
      assert.deepEqual(rotationRecords(stackFile), {
        talos: { generation: 1, phase: "removed" },
        kubernetes: { generation: 1, phase: "removed" },
      });
    });

    it("the kubeconfig from before is refused by the API server", async () => {
      await assert.rejects(nodeNames(oldKubeconfig()));
    });

    it("the kubeconfig exported now lists both nodes, under a new CA", async () => {
      const exported = await sandbox.cli(["kubeconfig", STACK, "--out", newKubeconfig()], env);
      assert.equal(exported.code, ExitCode.ok, explain(exported));
      assert.deepEqual(await nodeNames(newKubeconfig()), names);
      assert.notEqual(
        kubeconfigCa(fs.readFileSync(newKubeconfig(), "utf8")),
        kubeconfigCa(fs.readFileSync(oldKubeconfig(), "utf8")),
      );
    });
  });
});
