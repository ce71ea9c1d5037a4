import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as path from "node:path";
import { runCli } from "../../automation/cli";
import { ExitCode } from "../../automation/errors";
import { cleanupRepos } from "../automation/helpers";
import { FakeTalos } from "./fakeTalos";
import type { HealthCheck } from "../../automation/dayTwo/talosClient";
import { fakeKubectl } from "./fakeKubectl";
import { dayTwoFixture, foundationOutputs, generatedConfig, stackWithRollout } from "./helpers";

/**
 * A fake cluster whose health check fails while a Kubernetes node is cordoned, as Talos' does, and
 * whose staged changes are the stack's, as an `up` stages them (the outputs carry the config).
 */
class StagingTalos extends FakeTalos {
  /** The Kubernetes nodes marked unschedulable now (the fake kubectl's cordons). */
  unschedulable: () => string[] = () => [];
  /** The outputs' machineConfigurations: what the stack generated. */
  generated: Record<string, string> = {};

  /** Stages a change as `up` does: the stack generated that config. */
  stage(name: string, sysctl: string): void {
    super.stage(name, sysctl);
    this.generated[name] = this.staged.get(name)!;
  }

  /** Stages a change behind the stack's back (talosctl apply-config --mode staged). */
  stageByHand(name: string, sysctl: string): void {
    super.stage(name, sysctl);
  }

  async health(check: HealthCheck): Promise<void> {
    await super.health(check);
    // Talos' DefaultClusterChecks include K8sAllNodesSchedulableAssertion: a cordoned node fails
    // the whole check until the wait ends.
    const cordoned = this.unschedulable();
    if (cordoned.length > 0) {
      throw new Error(
        `waiting for all k8s nodes to report schedulable: some nodes are not schedulable: [${cordoned.join(" ")}]`,
      );
    }
  }
}

function fixture(stack?: string, outputs?: ReturnType<typeof foundationOutputs>) {
  let fake!: StagingTalos;
  const f = dayTwoFixture({
    ...(stack ? { stack } : {}),
    ...(outputs ? { outputs } : {}),
    fake: (nodes, clock) => {
      fake = new StagingTalos(
        nodes.map((n) => ({ ...n, config: generatedConfig(n.name, n.role) })),
        clock,
      );
      return fake;
    },
  });
  const kubectl = fakeKubectl(fake.log);
  fake.unschedulable = () => [...kubectl.cordoned];
  fake.generated = f.ctx.workspaces.outputs.machineConfigurations.value as Record<string, string>;
  const ctx = Object.assign(f.ctx, { dayTwo: { ...f.ctx.dayTwo, kubectl: kubectl.run } });
  return { f, fake, ctx, kubectl };
}

const rebooted = (talos: FakeTalos) => talos.callsOf("reboot").map((l) => l.split(" ")[1]);

describe("rollout: rebooting staged changes without quorum loss", () => {
  afterEach(cleanupRepos);

  it("reboots only nodes with a staged change, control planes one at a time each behind a quorum gate, then workers, health-gated", async () => {
    const { f, fake, ctx } = fixture();
    for (const node of ["cp-3", "cp-1", "w-2", "w-3"]) fake.stage(node, "vm.swappiness: 1");
    const code = await runCli(["rollout", "staging"], ctx);
    assert.equal(code, ExitCode.ok, f.ctx.stderr.text + f.ctx.stdout.text);
    assert.deepEqual(rebooted(fake), ["cp-1", "cp-3", "w-2", "w-3"]);
    const log = fake.log;
    // Before each control plane: a quorum check; after each reboot: a health check.
    for (const cp of ["cp-1", "cp-3"]) {
      const at = log.indexOf(`reboot ${cp}`);
      assert.ok(
        log
          .slice(0, at)
          .reverse()
          .findIndex((l) => l.startsWith("members via")) >= 0,
      );
      assert.ok(log.slice(at).some((l) => l.startsWith("health")));
    }
    const healthChecks = log.filter((l) => l.startsWith("health")).length;
    assert.equal(healthChecks, 5, "one before the roll, one after each of the four batches");
    assert.equal(fake.staged.size, 0);
  });

  it("reboots at most cluster.rollout.maxUnavailableWorkers workers at once, and never more than it allows", async () => {
    const { f, fake, ctx } = fixture(stackWithRollout(2));
    for (const node of ["w-1", "w-2", "w-3"]) fake.stage(node, "vm.swappiness: 1");
    assert.equal(await runCli(["rollout", "staging"], ctx), ExitCode.ok, f.ctx.stdout.text);
    const log = fake.log;
    const between = log.slice(log.indexOf("reboot w-1"), log.indexOf("reboot w-2"));
    assert.ok(
      !between.some((l) => l.startsWith("health")),
      "w-1 and w-2 go down together, in one batch",
    );
    const beforeThird = log.slice(log.indexOf("reboot w-2"), log.indexOf("reboot w-3"));
    assert.ok(
      beforeThird.some((l) => l.startsWith("health")),
      "w-3 waits for the batch's health",
    );
    const refused = fixture(stackWithRollout(2));
    refused.fake.stage("w-1", "vm.swappiness: 1");
    assert.equal(
      await runCli(["rollout", "staging", "--max-unavailable", "3"], refused.ctx),
      ExitCode.usage,
    );
    assert.match(refused.f.ctx.stderr.text, /cluster\.rollout\.maxUnavailableWorkers is 2/);
    assert.deepEqual(rebooted(refused.fake), []);
  });

  it("lists staged changes by path without rebooting anything on --dry-run, and never prints a config", async () => {
    const { f, fake, ctx } = fixture();
    fake.stage("cp-2", "net.core.somaxconn: 65535");
    assert.equal(await runCli(["rollout", "staging", "--dry-run"], ctx), ExitCode.ok);
    assert.deepEqual(rebooted(fake), []);
    assert.match(f.ctx.stdout.text, /cp-2: v1alpha1: machine\.sysctls/);
    assert.doesNotMatch(f.ctx.stdout.text, /secret-machine-token|65535/);
  });

  it("runs its --dry-run in CI, and refuses the roll itself there before touching a node", async () => {
    const { f, fake, ctx } = fixture();
    fake.stage("cp-2", "net.core.somaxconn: 65535");
    Object.assign(ctx.env, { CI: "true" });
    assert.equal(await runCli(["rollout", "staging", "--dry-run"], ctx), ExitCode.ok);
    assert.match(f.ctx.stdout.text, /cp-2: v1alpha1: machine\.sysctls/);
    assert.equal(await runCli(["rollout", "staging"], ctx), ExitCode.refused);
    assert.match(
      f.ctx.stderr.text,
      /^rollout staging: changes the running cluster and is not run from CI/m,
    );
    assert.deepEqual(rebooted(fake), []);
  });

  it("reboots nothing when the cluster is unhealthy, or when nothing is staged", async () => {
    const unhealthy = fixture();
    unhealthy.fake.stage("cp-1", "vm.swappiness: 1");
    unhealthy.fake.healthFailsAfter = true;
    assert.equal(await runCli(["rollout", "staging"], unhealthy.ctx), ExitCode.failed);
    assert.deepEqual(rebooted(unhealthy.fake), []);
    const idle = fixture();
    assert.equal(await runCli(["rollout", "staging"], idle.ctx), ExitCode.ok);
    assert.match(idle.f.ctx.stdout.text, /no node has a staged change/);
  });

  it("stops before the next node when a node comes back without its staged config", async () => {
    const { f, fake, ctx } = fixture();
    for (const node of ["cp-1", "cp-2"]) fake.stage(node, "vm.swappiness: 1");
    fake.keepsOld.add("cp-1");
    assert.equal(await runCli(["rollout", "staging"], ctx), ExitCode.failed);
    assert.deepEqual(rebooted(fake), ["cp-1"]);
    assert.match(f.ctx.stdout.text, /stopped at cp-1 \(config\)/);
    assert.match(f.ctx.stdout.text, /not touched: cp-2/);
  });

  it("stops before a control plane whose reboot would cost etcd its quorum", async () => {
    const { fake, ctx } = fixture();
    fake.stage("cp-1", "vm.swappiness: 1");
    fake.byName("cp-2").etcd = { state: "Preparing", health: "?" };
    fake.byName("cp-3").etcd = { state: "Running", health: "Fail" };
    // The cluster health check itself passes in the fake; the quorum gate must still refuse.
    assert.equal(await runCli(["rollout", "staging"], ctx), ExitCode.failed);
    assert.deepEqual(rebooted(fake), []);
  });

  it("names each node in health checks by the address its kubelet reports", async () => {
    const outputs = foundationOutputs();
    // w-1 is an OCI instance reached on its public IP; Kubernetes knows its private one.
    outputs.kubeletAddresses = {
      value: { "w-1": "10.0.0.21", "cp-1": "192.0.2.11" },
      secret: false,
    };
    const { fake, ctx } = fixture(undefined, outputs);
    fake.stage("w-2", "vm.swappiness: 1");
    assert.equal(await runCli(["rollout", "staging"], ctx), ExitCode.ok);
    for (const check of fake.healthChecks) {
      assert.deepEqual(check.workers, ["10.0.0.21", "192.0.2.22", "192.0.2.23"]);
      assert.deepEqual(check.controlPlanes, ["192.0.2.11", "192.0.2.12", "192.0.2.13"]);
    }
    assert.ok(fake.healthChecks.length >= 2);
  });
});

describe("rollout: draining each node before its reboot", () => {
  afterEach(cleanupRepos);

  /** Where `entry` is in the log; fails when it is not there. */
  const at = (log: readonly string[], entry: string): number => {
    const index = log.indexOf(entry);
    assert.ok(index >= 0, `${entry} in ${JSON.stringify(log)}`);
    return index;
  };

  it("cordons and drains each node before its reboot, and uncordons it once back and Ready in Kubernetes, before the health gate and the next node", async () => {
    const { f, fake, ctx, kubectl } = fixture();
    for (const node of ["cp-1", "cp-2", "w-2"]) fake.stage(node, "vm.swappiness: 1");
    assert.equal(await runCli(["rollout", "staging"], ctx), ExitCode.ok, f.ctx.stdout.text);
    assert.deepEqual(rebooted(fake), ["cp-1", "cp-2", "w-2"]);
    const log = fake.log;
    const order = ["cp-1", "cp-2", "w-2"];
    for (const [i, node] of order.entries()) {
      const reboot = at(log, `reboot ${node}`);
      assert.ok(at(log, `cordon ${node}`) < at(log, `drain ${node}`));
      assert.ok(at(log, `drain ${node}`) < reboot, `${node} drained before its reboot`);
      const ready = log.indexOf(`ready ${node}`, reboot);
      const uncordon = at(log, `uncordon ${node}`);
      assert.ok(ready > reboot && ready < uncordon, `${node} Ready before its uncordon`);
      // Talos' health check fails while a node is unschedulable: the uncordon comes first.
      const healthAfter = log.findIndex((l, index) => index > reboot && l.startsWith("health"));
      assert.ok(uncordon < healthAfter, `${node} uncordoned before the health gate`);
      const next = order[i + 1];
      if (next)
        assert.ok(healthAfter < at(log, `cordon ${next}`), `${node} healthy before ${next}`);
    }
    // Nodes with nothing staged are never touched; every drained node is schedulable again.
    assert.ok(!log.some((l) => /^(cordon|drain|uncordon) (cp-3|w-1|w-3)$/.test(l)));
    assert.deepEqual([...kubectl.cordoned], []);
    const drain = kubectl.calls.find((c) => c.args[0] === "drain")!;
    assert.deepEqual(drain.args.slice(0, 5), [
      "drain",
      "cp-1",
      "--ignore-daemonsets",
      "--delete-emptydir-data",
      "--timeout=300s",
    ]);
    assert.equal(kubectl.calls[0].args[0], "version", "kubectl is checked before anything");
  });

  it("drains every worker of a batch before the batch reboots, cordoning them all first", async () => {
    const { f, fake, ctx } = fixture(stackWithRollout(2));
    for (const node of ["w-1", "w-2", "w-3"]) fake.stage(node, "vm.swappiness: 1");
    assert.equal(
      await runCli(["rollout", "staging", "--drain-timeout", "90s"], ctx),
      ExitCode.ok,
      f.ctx.stdout.text,
    );
    const log = fake.log;
    const firstReboot = Math.min(at(log, "reboot w-1"), at(log, "reboot w-2"));
    assert.ok(at(log, "drain w-1") < firstReboot && at(log, "drain w-2") < firstReboot);
    assert.ok(at(log, "cordon w-2") < at(log, "drain w-1"), "both cordoned before either drains");
    const batchHealth = log.findIndex(
      (l, i) => i > at(log, "reboot w-2") && l.startsWith("health"),
    );
    for (const node of ["w-1", "w-2"]) {
      assert.ok(
        at(log, `uncordon ${node}`) > at(log, "reboot w-2"),
        "after the whole batch is back",
      );
      assert.ok(at(log, `uncordon ${node}`) < batchHealth);
    }
    assert.ok(batchHealth < at(log, "cordon w-3"));
    assert.ok(at(log, "drain w-3") < at(log, "reboot w-3"));
    assert.match(f.ctx.stdout.text, /w-1: draining \(kubectl drain .*up to 1m30s\)/);
  });

  it("passes --drain-timeout to kubectl drain, and refuses a malformed one before anything runs", async () => {
    const { fake, ctx, kubectl } = fixture();
    fake.stage("w-1", "vm.swappiness: 1");
    assert.equal(await runCli(["rollout", "staging", "--drain-timeout", "20m"], ctx), ExitCode.ok);
    assert.ok(kubectl.calls.find((c) => c.args[0] === "drain")!.args.includes("--timeout=1200s"));
    const bad = fixture();
    bad.fake.stage("w-1", "vm.swappiness: 1");
    assert.equal(
      await runCli(["rollout", "staging", "--drain-timeout", "soon"], bad.ctx),
      ExitCode.usage,
    );
    assert.match(bad.f.ctx.stderr.text, /--drain-timeout/);
    assert.deepEqual(bad.kubectl.calls, []);
    assert.deepEqual(rebooted(bad.fake), []);
  });

  it("stops before the reboot when a drain fails: no node of the batch is rebooted, they stay cordoned, and the message says how to uncordon", async () => {
    const { f, fake, ctx, kubectl } = fixture(stackWithRollout(2));
    for (const node of ["cp-1", "w-1", "w-2", "w-3"]) fake.stage(node, "vm.swappiness: 1");
    kubectl.drainFails.add("w-2");
    assert.equal(await runCli(["rollout", "staging"], ctx), ExitCode.failed);
    assert.deepEqual(rebooted(fake), ["cp-1"], "the failed batch is not rebooted");
    assert.deepEqual([...kubectl.cordoned].sort(), ["w-1", "w-2"]);
    assert.ok(!fake.log.includes("uncordon w-1") && !fake.log.includes("uncordon w-2"));
    assert.ok(
      !fake.log.some((l) => /^(cordon|drain|reboot) w-3$/.test(l)),
      "the next batch is not touched",
    );
    const stdout = f.ctx.stdout.text;
    assert.match(stdout, /stopped at w-2 \(drain\)/);
    assert.match(stdout, /stopped at:  w-2: kubectl drain w-2 .*global timeout reached/);
    assert.match(
      stdout,
      /cordoned: {4}w-1, w-2 \(left unschedulable; kubectl uncordon w-1; kubectl uncordon w-2/,
    );
    assert.match(stdout, /not touched: w-3/);
    assert.match(f.ctx.stderr.text, /w-1, w-2 stay cordoned/);
    assert.match(
      stdout,
      /kubectl uncordon w-2 \(kubeconfig: npm run platform -- kubeconfig staging\)/,
    );
  });

  it("leaves a node cordoned and says so when it fails after its drain (it did not come back healthy)", async () => {
    const { f, fake, ctx, kubectl } = fixture();
    for (const node of ["cp-1", "cp-2"]) fake.stage(node, "vm.swappiness: 1");
    fake.keepsOld.add("cp-1");
    assert.equal(await runCli(["rollout", "staging"], ctx), ExitCode.failed);
    assert.deepEqual([...kubectl.cordoned], ["cp-1"]);
    assert.match(f.ctx.stdout.text, /stopped at cp-1 \(config\)/);
    assert.match(f.ctx.stdout.text, /cordoned: {4}cp-1/);
    assert.ok(!fake.log.includes("cordon cp-2"));
  });

  it("waits for a rebooted node to report Ready before its uncordon, and stops there, leaving it cordoned, when it never does", async () => {
    const { f, fake, ctx, kubectl } = fixture();
    for (const node of ["w-1", "w-2"]) fake.stage(node, "vm.swappiness: 1");
    kubectl.notReady.add("w-1");
    assert.equal(await runCli(["rollout", "staging"], ctx), ExitCode.failed, f.ctx.stdout.text);
    assert.deepEqual(rebooted(fake), ["w-1"]);
    assert.ok(fake.callsOf("ready").length > 1, "asked again until the wait ended");
    assert.ok(!fake.log.includes("uncordon w-1"));
    assert.deepEqual([...kubectl.cordoned], ["w-1"]);
    assert.match(f.ctx.stdout.text, /stopped at w-1 \(node ready\)/);
    assert.match(
      f.ctx.stdout.text,
      /its Kubernetes node w-1 did not report Ready within 15m0s \(last: its Ready condition is not True\)/,
    );
    assert.match(f.ctx.stdout.text, /rebooted: {4}w-1\n/);
    assert.match(f.ctx.stdout.text, /cordoned: {4}w-1 /);
    assert.match(f.ctx.stderr.text, /kubectl describe node w-1/);
    assert.ok(!fake.log.some((l) => /^(cordon|drain|reboot) w-2$/.test(l)));
  });

  it("stops when a healthy node cannot be uncordoned, naming it as rebooted but still cordoned", async () => {
    const { f, fake, ctx, kubectl } = fixture();
    for (const node of ["w-1", "w-2"]) fake.stage(node, "vm.swappiness: 1");
    kubectl.uncordonFails.add("w-1");
    assert.equal(await runCli(["rollout", "staging"], ctx), ExitCode.failed);
    assert.deepEqual(rebooted(fake), ["w-1"]);
    assert.match(f.ctx.stdout.text, /stopped at w-1 \(uncordon\)/);
    assert.match(f.ctx.stdout.text, /rebooted: {4}w-1\n/);
    assert.match(f.ctx.stdout.text, /cordoned: {4}w-1 /);
  });

  it("refuses before rebooting anything when kubectl is missing, naming what to install or --no-drain; KUBECTL names the program", async () => {
    const { f, fake, ctx, kubectl } = fixture();
    fake.stage("cp-1", "vm.swappiness: 1");
    kubectl.missing = true;
    Object.assign(ctx.env, { KUBECTL: "/opt/k8s/kubectl" });
    assert.equal(await runCli(["rollout", "staging"], ctx), ExitCode.missingCli);
    assert.deepEqual(rebooted(fake), []);
    assert.ok(!fake.log.some((l) => l.startsWith("health")), "refused before the health gate");
    assert.match(f.ctx.stderr.text, /kubectl/);
    assert.match(f.ctx.stderr.text, /"\/opt\/k8s\/kubectl"/);
    assert.match(f.ctx.stderr.text, /Install kubectl .*KUBECTL.*--no-drain/);
    const found = fixture();
    found.fake.stage("cp-1", "vm.swappiness: 1");
    Object.assign(found.ctx.env, { KUBECTL: "/opt/k8s/kubectl" });
    assert.equal(await runCli(["rollout", "staging"], found.ctx), ExitCode.ok);
    assert.ok(found.kubectl.calls.every((c) => c.command === "/opt/k8s/kubectl"));
  });

  it("reboots without kubectl on --no-drain, draining nothing", async () => {
    const { f, fake, ctx, kubectl } = fixture();
    for (const node of ["cp-1", "w-1"]) fake.stage(node, "vm.swappiness: 1");
    kubectl.missing = true;
    assert.equal(
      await runCli(["rollout", "staging", "--no-drain"], ctx),
      ExitCode.ok,
      f.ctx.stderr.text,
    );
    assert.deepEqual(rebooted(fake), ["cp-1", "w-1"]);
    assert.deepEqual(kubectl.calls, []);
    assert.match(f.ctx.stdout.text, /--no-drain: nodes are rebooted without a drain/);
  });

  it("lists staged changes on --dry-run without kubectl, writing no kubeconfig", async () => {
    const { f, fake, ctx, kubectl } = fixture();
    fake.stage("w-1", "vm.swappiness: 1");
    kubectl.missing = true;
    assert.equal(await runCli(["rollout", "staging", "--dry-run"], ctx), ExitCode.ok);
    assert.match(f.ctx.stdout.text, /w-1: v1alpha1: machine\.sysctls/);
    assert.deepEqual(kubectl.calls, []);
    const tmp = ctx.dayTwo!.tmpDir!;
    assert.deepEqual(
      fs.readdirSync(tmp).filter((e) => e.startsWith("platform-kube-")),
      [],
    );
  });

  it("gives kubectl the cluster's kubeconfig only as a 0600 file in a 0700 folder, never in argv or output, and removes it", async () => {
    const kubeconfig =
      "apiVersion: v1\nusers:\n- name: admin\n  user:\n    client-key-data: a3ViZS1zZWNyZXQta2V5\n";
    const outputs = foundationOutputs();
    outputs.kubeconfig = { value: kubeconfig, secret: true };
    const { f, fake, ctx, kubectl } = fixture(undefined, outputs);
    fake.stage("w-1", "vm.swappiness: 1");
    kubectl.drainFails.add("w-1");
    // Also on a stop: the file is removed whichever way the roll ends.
    assert.equal(await runCli(["rollout", "staging"], ctx), ExitCode.failed);
    assert.ok(kubectl.calls.length >= 3);
    for (const call of kubectl.calls) {
      assert.ok(!call.args.some((arg) => arg.includes("a3ViZS1zZWNyZXQta2V5")));
      assert.ok(call.kubeconfig, `--kubeconfig given and present: ${call.args.join(" ")}`);
      assert.equal(call.kubeconfig.mode, 0o600);
      assert.equal(call.kubeconfig.dirMode, 0o700);
      assert.equal(call.kubeconfig.content, kubeconfig);
      assert.ok(call.kubeconfig.path.startsWith(ctx.dayTwo!.tmpDir! + path.sep));
      assert.equal(fs.existsSync(call.kubeconfig.path), false, "removed after the roll");
    }
    assert.doesNotMatch(f.ctx.stdout.text + f.ctx.stderr.text, /a3ViZS1zZWNyZXQta2V5/);
  });

  it("refuses a staged config that is not the one the stack generated, before rebooting anything", async () => {
    const { f, fake, ctx } = fixture();
    fake.stage("cp-1", "vm.swappiness: 1");
    fake.stageByHand("w-2", "vm.swappiness: 2");
    assert.equal(await runCli(["rollout", "staging"], ctx), ExitCode.refused);
    assert.deepEqual(rebooted(fake), []);
    assert.match(
      f.ctx.stdout.text,
      /w-2: its staged config is not the stack's \(v1alpha1: machine\.sysctls\)/,
    );
    assert.doesNotMatch(f.ctx.stdout.text, /cp-1: its staged config is not/);
    assert.match(
      f.ctx.stderr.text,
      /rollout staging: w-2 has a staged config that is not the one the stack generated, so no node was rebooted.*npm run platform -- up staging/,
    );
  });

  it("refuses to drain when the outputs hold no kubeconfig, before rebooting anything", async () => {
    const outputs = foundationOutputs();
    delete (outputs as Record<string, unknown>).kubeconfig;
    const { f, fake, ctx } = fixture(undefined, outputs);
    fake.stage("w-1", "vm.swappiness: 1");
    assert.equal(await runCli(["rollout", "staging"], ctx), ExitCode.refused);
    assert.deepEqual(rebooted(fake), []);
    assert.match(f.ctx.stderr.text, /no kubeconfig.*--no-drain/s);
  });
});

describe("up rolls out what its engine run staged", () => {
  afterEach(cleanupRepos);

  /** An engine run that stages a change on `names`, as the provider's staged_if_needing_reboot does. */
  function stagingUp(names: readonly string[]) {
    const { f, fake, ctx } = fixture();
    (f.ctx.env as Record<string, string>).PROXMOX_VE_API_TOKEN =
      "root@pam!ci=00000000-0000-0000-0000-000000000000";
    let engineRan = -1;
    f.ctx.workspaces.during = (operation) => {
      if (operation !== "up") return;
      for (const name of names) fake.stage(name, "vm.swappiness: 1");
      engineRan = fake.log.length;
      f.ctx.workspaces.outputs = {
        ...f.ctx.workspaces.outputs,
        applyModes: {
          value: Object.fromEntries(
            fake.nodes.map((n) => [n.name, names.includes(n.name) ? "staged" : "auto"]),
          ),
          secret: false,
        },
      };
    };
    return { f, fake, ctx, engineRan: () => engineRan };
  }

  it("reboots the staged nodes after the engine run, control planes first, drained and gated as rollout does", async () => {
    const { f, fake, ctx, engineRan } = stagingUp(["w-2", "cp-2"]);
    assert.equal(await runCli(["up", "staging"], ctx), ExitCode.ok, f.ctx.stderr.text);
    assert.deepEqual(rebooted(fake), ["cp-2", "w-2"]);
    assert.ok(fake.log.indexOf("reboot cp-2") > engineRan(), "after the engine run");
    assert.ok(fake.log.indexOf("drain w-2") > engineRan(), "drained first");
    assert.ok(fake.log.indexOf("drain w-2") < fake.log.indexOf("reboot w-2"));
    assert.match(
      f.ctx.stdout.text,
      /rollout staging: waiting for a reboot: cp-2 \(staged\), w-2 \(staged\)/,
    );
  });

  it("leaves them for a later rollout with --no-rollout, and asks no node when nothing was staged", async () => {
    const deferred = stagingUp(["w-1"]);
    assert.equal(
      await runCli(["up", "staging", "--no-rollout"], deferred.ctx),
      ExitCode.ok,
      deferred.f.ctx.stderr.text,
    );
    assert.deepEqual(rebooted(deferred.fake), []);
    assert.match(
      deferred.f.ctx.stdout.text,
      /up foundation\/staging: staged changes on w-1 wait for `npm run platform -- rollout staging` \(--no-rollout\)/,
    );
    const quiet = stagingUp([]);
    assert.equal(await runCli(["up", "staging"], quiet.ctx), ExitCode.ok, quiet.f.ctx.stderr.text);
    assert.deepEqual(quiet.fake.callsOf("staged"), []);
  });
});
