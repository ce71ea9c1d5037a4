// An IPv6-first, dual-stack control plane through `up`, against the real engine, the Talos provider
// plugin and Talos' own health checks (run by the emulator, test/emulator/talos-emulator). The node's
// Talos API answers on ::1 (loopback's one IPv6 address); it also holds 127.15.60.11. IPv6 comes first
// in the service subnets, so its kubelet reports ::1 first and the health gate names the control plane
// by it. Talos' etcd, left alone, advertises the first routed address (IPv4 sorts first): the check
// "etcd members to be control plane nodes" would then never pass and `up` would fail after its
// health timeout without a kubeconfig. The program pins etcd's advertised subnet to the kubelet's
// address (components/talos/patches.ts); this case proves it on a real check.
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as path from "node:path";
import { parse } from "yaml";
import { ExitCode } from "../../automation/errors";
import {
  buildEmulatorTools,
  type EmulatorTools,
  type RunningEmulator,
  startTalosEmulator,
  waitForMaintenance,
  waitFor,
} from "../emulator/talosEmulator";
import { type CliRun, EngineSandbox, engineTools } from "./harness";
import { type Kubeconfig, kubeGet } from "./kube";

const STACK = "dualstack";
const NODE = { name: "cp-1", address: "::1", extra: ["127.15.60.11"] };

function explain(run: CliRun): string {
  return `exit ${run.code}\n--- stdout\n${run.stdout}\n--- stderr\n${run.stderr}`;
}

describe("the engine tier: an IPv6-first dual-stack control plane", function () {
  this.timeout(10 * 60_000);
  const tools = engineTools();
  let emulatorTools: EmulatorTools;
  let emulator: RunningEmulator;
  let sandbox: EngineSandbox;
  const log: string[] = [];
  let up: CliRun;

  before(async function () {
    this.timeout(50 * 60_000);
    emulatorTools = buildEmulatorTools();
    emulator = await startTalosEmulator({
      binary: emulatorTools.emulator,
      nodes: [NODE],
      timeoutMs: 20 * 60_000,
      log: (line) => log.push(line),
    });
    sandbox = new EngineSandbox(tools);
    sandbox.writeFixtureStack(STACK);
    await waitForMaintenance(emulator, [NODE.name]);
    up = await sandbox.cli(["up", STACK], {
      TALOSCTL: emulatorTools.talosctl,
      TALOS_STANDIN_RETRY_WINDOW: "60s",
    });
  });

  after(async () => {
    await emulator?.stop();
    if (sandbox && process.env.ENGINE_KEEP_SANDBOX === undefined) sandbox.remove();
  });

  afterEach(function () {
    if (this.currentTest?.state === "failed") console.log(log.slice(-60).join("\n"));
  });

  it("up passes Talos' health gate over the IPv6 Talos API and fetches the kubeconfig", () => {
    assert.equal(up.code, ExitCode.ok, explain(up));
    assert.match(up.stdout, /up foundation\/dualstack: done in \S+; \d+ created/);
  });

  it("etcd advertises the control plane's IPv6 address, the one its kubelet reports first", async () => {
    const [cluster] = await emulator.clusters();
    assert.ok(cluster.bootstrapped);
    assert.deepEqual(
      cluster.members.map((m) => [m.hostname, m.peerURL]),
      [["cp-1", "https://[::1]:2380"]],
    );
  });

  it("the Kubernetes node lists ::1 first, then its IPv4 address", async () => {
    const file = path.join(sandbox.dir, "dualstack.kubeconfig");
    const run = await sandbox.cli(["kubeconfig", STACK, "--out", file]);
    assert.equal(run.code, ExitCode.ok, explain(run));
    const nodes = await waitFor("the node registered", async () => {
      const list = (await kubeGet(
        parse(fs.readFileSync(file, "utf8")) as Kubeconfig,
        "/api/v1/nodes",
      )) as {
        items: {
          metadata: { name: string };
          status: { addresses: { type: string; address: string }[] };
        }[];
      };
      if (list.items.length !== 1) throw new Error(`${list.items.length} nodes`);
      return list.items;
    });
    assert.deepEqual(
      nodes[0].status.addresses.filter((a) => a.type === "InternalIP").map((a) => a.address),
      ["::1", "127.15.60.11"],
    );
  });
});
