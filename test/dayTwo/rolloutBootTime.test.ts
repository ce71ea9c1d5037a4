// rollout, drift and preflight on Talos 1.14, which applies every config change to the running node
// at once (no `reboot` mode, `auto` is no-reboot): nothing is staged, so a change of a boot-time field
// is found by comparing the config the node runs with what it booted (rebootState.ts), as recorded
// in the stack's outputs by `platform up` before it pushed.
import type { OutputMap } from "@pulumi/pulumi/automation";
import { strict as assert } from "node:assert";
import { runCli } from "../../automation/cli";
import { captureBootRecord, rebootState } from "../../automation/dayTwo/rebootState";
import { ExitCode } from "../../automation/errors";
import type { BootRecord } from "../../components/talos/bootRecords";
import { cleanupRepos } from "../automation/helpers";
import { fakeKubectl } from "./fakeKubectl";
import { FakeTalos } from "./fakeTalos";
import { NODES, dayTwoFixture, foundationOutputs, generatedConfig, stackYaml } from "./helpers";

const TALOS = "v1.14.1";

/** A Talos 1.14 cluster whose nodes run the stack's configs since they booted. */
function cluster114(options: { record?: boolean } = {}) {
  let fake!: FakeTalos;
  const outputs = foundationOutputs(NODES, { talos: TALOS, kubernetes: "1.36.3" });
  const f = dayTwoFixture({
    stack: stackYaml(TALOS, "1.36.3"),
    outputs,
    fake: (nodes, clock) => {
      fake = new FakeTalos(
        nodes.map((n) => ({
          ...n,
          version: TALOS,
          config: generatedConfig(n.name, n.role, TALOS),
        })),
        clock,
      );
      return fake;
    },
  });
  const kubectl = fakeKubectl(fake.log);
  const ctx = Object.assign(f.ctx, { dayTwo: { ...f.ctx.dayTwo, kubectl: kubectl.run } });
  const generated = outputs.machineConfigurations.value as Record<string, string>;
  /** What `platform up` reads before it pushes, into the outputs the next commands read. */
  const recordBoots = async () => {
    const records: Record<string, BootRecord> = {};
    for (const node of NODES) {
      const record = await captureBootRecord(fake, node.address);
      if (record) records[node.name] = record;
    }
    (outputs as Record<string, OutputMap[string]>).bootRecords = { value: records, secret: true };
  };
  /** `up` pushes a changed config to a node, as Talos 1.14 applies it: at once. */
  const push = (name: string, change: (config: string) => string) => {
    generated[name] = change(generated[name]);
    fake.applyNow(name, generated[name]);
  };
  return { f, fake, ctx, recordBoots, push, options };
}

const withEtcdArgs = (config: string) =>
  config.replace(
    "cluster:\n  clusterName: staging\n",
    "cluster:\n  clusterName: staging\n  etcd:\n    extraArgs:\n      quota-backend-bytes: '8589934592'\n",
  );
const withKubeletConfig = (config: string) =>
  `${config}---\napiVersion: v1alpha1\nkind: KubeletConfig\nimage: ghcr.io/siderolabs/kubelet:v1.36.4\n`;

const rebooted = (talos: FakeTalos) => talos.callsOf("reboot").map((l) => l.split(" ")[1]);

describe("a reboot's wait on Talos 1.14, whatever the apply mode", () => {
  afterEach(cleanupRepos);

  it("up reboots after its engine run the node whose pushed change waits for one, though nothing was staged", async () => {
    const { f, fake, ctx, push } = cluster114();
    (f.ctx.env as Record<string, string>).PROXMOX_VE_API_TOKEN =
      "root@pam!ci=00000000-0000-0000-0000-000000000000";
    // The engine run pushes an etcd change to cp-2; Talos 1.14 applies it at once (applyModes: auto).
    // The run also exports the boot records up read before it (the bootRecords output).
    f.ctx.workspaces.during = (operation, converge) => {
      if (operation !== "up") return;
      push("cp-2", withEtcdArgs);
      const records = (converge as { bootRecords?: Record<string, BootRecord> }).bootRecords;
      (f.ctx.workspaces.outputs as Record<string, OutputMap[string]>).bootRecords = {
        value: records ?? {},
        secret: true,
      };
    };
    assert.equal(await runCli(["up", "staging"], ctx), ExitCode.ok, f.ctx.stderr.text);
    assert.deepEqual(rebooted(fake), ["cp-2"]);
    assert.match(f.ctx.stdout.text, /waiting for a reboot: cp-2 \(boot-time fields\)/);
  });

  it("rollout reboots the node whose pushed config changed a boot-time field since it booted, and only it", async () => {
    const { f, fake, ctx, recordBoots, push } = cluster114();
    await recordBoots();
    push("cp-2", withEtcdArgs);
    push("w-1", withKubeletConfig);
    // Nothing is staged: Talos 1.14 wrote the config on disk and runs it.
    assert.equal(fake.staged.get("cp-2"), fake.byName("cp-2").config);
    assert.equal(await runCli(["rollout", "staging", "--dry-run"], ctx), ExitCode.ok);
    assert.match(f.ctx.stdout.text, /waiting for a reboot: cp-2 \(boot-time fields\)\n/);
    assert.match(
      f.ctx.stdout.text,
      /cp-2: boot-time v1alpha1 cluster\.etcd \(set since the boot\)/,
    );
    assert.doesNotMatch(f.ctx.stdout.text, /w-1|quota-backend|8589934592/);
    assert.equal(await runCli(["rollout", "staging"], ctx), ExitCode.ok, f.ctx.stdout.text);
    assert.deepEqual(rebooted(fake), ["cp-2"]);
    assert.match(f.ctx.stdout.text, /cp-2: running the config it was to boot/);
    // Rebooted, it runs what it booted: nothing waits any more.
    assert.equal(await runCli(["rollout", "staging"], ctx), ExitCode.ok);
    assert.deepEqual(rebooted(fake), ["cp-2"]);
    assert.match(f.ctx.stdout.text, /nothing to reboot/);
  });

  it("rollout stops at a node that answers after its reboot with the BootID it had: it did not boot", async () => {
    const { f, fake, ctx, recordBoots, push } = cluster114();
    await recordBoots();
    push("cp-1", withEtcdArgs);
    push("cp-2", withEtcdArgs);
    // talosctl reboot returned, but the node never went down.
    fake.reboot = async (node) => {
      fake.log.push(`reboot ${fake.node(node).name}`);
    };
    assert.equal(await runCli(["rollout", "staging"], ctx), ExitCode.failed);
    assert.deepEqual(rebooted(fake), ["cp-1"]);
    assert.match(f.ctx.stdout.text, /stopped at cp-1 \(config\)/);
    assert.match(
      f.ctx.stdout.text,
      /it answers with the BootID it had before the reboot \(boot-cp-1-1\)/,
    );
    assert.match(f.ctx.stdout.text, /not touched: cp-2/);
  });

  it("rollout reboots a node whose config changed since a boot nobody recorded, saying it cannot tell", async () => {
    const { f, fake, ctx, push } = cluster114();
    // A bare `pulumi up` (no record of the boot) pushed only a kubelet change.
    push("w-2", withKubeletConfig);
    assert.equal(await runCli(["rollout", "staging"], ctx), ExitCode.ok, f.ctx.stdout.text);
    assert.match(f.ctx.stdout.text, /waiting for a reboot: w-2 \(unknown\)/);
    assert.match(
      f.ctx.stdout.text,
      /w-2: may need one: its config changed since it booted \(1 time\) and the stack's outputs do not record what it booted with/,
    );
    assert.deepEqual(rebooted(fake), ["w-2"]);
  });

  it("a record of an earlier boot says nothing about this one", async () => {
    const { fake, recordBoots, push } = cluster114();
    await recordBoots();
    const record = (await captureBootRecord(fake, "192.0.2.21"))!;
    // w-1 rebooted since (an unplanned reboot), then took a config.
    await fake.reboot("192.0.2.21", 0);
    push("w-1", withKubeletConfig);
    const { state } = await rebootState(fake, "192.0.2.21", record);
    assert.equal(state.kind, "unknown");
    assert.match((state as { reason: string }).reason, /for this boot/);
    // Untouched since its boot, a node needs no record at all.
    assert.deepEqual((await rebootState(fake, "192.0.2.22", undefined)).state, { kind: "none" });
  });

  it("drift shows the node that runs the stack's config but waits for a reboot, and exits 6", async () => {
    const { f, ctx, recordBoots, push } = cluster114();
    await recordBoots();
    push("cp-1", withEtcdArgs);
    assert.equal(await runCli(["drift", "staging"], ctx), ExitCode.drift, f.ctx.stdout.text);
    assert.match(
      f.ctx.stdout.text,
      /^cp-1 +controlplane +v1\.14\.1 +1\.36\.3 +- +same \(1 boot-time\) +reboot$/m,
    );
    assert.match(
      f.ctx.stdout.text,
      /^cp-1 waits for a reboot:\n {2}boot-time v1alpha1 cluster\.etcd/m,
    );
    assert.match(f.ctx.stdout.text, /^cp-2 +controlplane .* same +ok$/m);
    assert.match(
      f.ctx.stderr.text,
      /the stack's config applied, its boot-time fields waiting for a reboot: cp-1 \(rollout\)/,
    );
  });

  it("preflight refuses an upgrade while a boot-time change waits, as it does for a staged one", async () => {
    const { f, ctx, recordBoots, push } = cluster114();
    await recordBoots();
    push("w-3", withEtcdArgs);
    assert.equal(await runCli(["preflight", "staging"], ctx), ExitCode.refused, f.ctx.stdout.text);
    assert.match(
      f.ctx.stdout.text,
      /FAIL {2}nothing-staged +staged configs: a config change waits for a reboot on 1 node.*got w-3 \(boot-time fields\)/,
    );
  });

  it("on Talos 1.13 an applied change is Talos' own call: only a staged config waits", async () => {
    const fake = new FakeTalos([
      {
        name: "w-1",
        address: "192.0.2.21",
        role: "worker",
        config: generatedConfig("w-1", "worker"),
      },
    ]);
    fake.applyNow("w-1", withEtcdArgs(fake.byName("w-1").config));
    assert.deepEqual((await rebootState(fake, "192.0.2.21", undefined)).state, { kind: "none" });
    assert.equal(await captureBootRecord(fake, "192.0.2.21"), undefined, "no BootID on 1.13");
    fake.stage("w-1", "vm.swappiness: 1");
    assert.equal((await rebootState(fake, "192.0.2.21", undefined)).state.kind, "staged");
  });
});
