import { strict as assert } from "node:assert";
import { runCli } from "../../automation/cli";
import { ExitCode } from "../../automation/errors";
import { cleanupRepos } from "../automation/helpers";
import { dayTwoFixture as baseFixture, readStack, stackYaml } from "./helpers";

/** A cluster on Talos v1.13.9 (Kubernetes 1.31 to 1.36) running Kubernetes 1.35.6. */
function dayTwoFixture() {
  const f = baseFixture({ stack: stackYaml("v1.13.9", "1.35.6") });
  for (const node of f.talos.nodes) node.kubelet = "1.35.6";
  return f;
}

describe("upgrade kubernetes", () => {
  afterEach(cleanupRepos);

  it("refuses while a config change is staged: upgrade-k8s would replace it with the running config patched", async () => {
    const f = dayTwoFixture();
    f.talos.stage("cp-2", "vm.swappiness: 1");
    const code = await runCli(["upgrade", "kubernetes", "staging", "--to", "1.36.3"], f.ctx);
    assert.equal(code, ExitCode.refused);
    assert.deepEqual(f.talos.callsOf("upgrade-k8s"), []);
    assert.match(f.ctx.stdout.text, /FAIL {2}nothing-staged .*got cp-2\./);
  });

  it("runs preflight, a snapshot, the dry run, the upgrade, the health check, then bumps kubernetesVersion", async () => {
    const f = dayTwoFixture();
    const before = readStack(f);
    const code = await runCli(["upgrade", "kubernetes", "staging", "--to", "1.36.3"], f.ctx);
    assert.equal(code, ExitCode.ok, f.ctx.stderr.text + f.ctx.stdout.text);
    const steps = f.talos.log
      .filter((l) => /^(snapshot|upgrade-k8s|health|kubelet)/.test(l))
      .map((l) => l.replace(/ via cp-\d/, ""));
    // Preflight reads kubelets and runs health; then the change itself.
    const change = steps.slice(steps.indexOf("snapshot"));
    assert.deepEqual(change, [
      "snapshot",
      "upgrade-k8s --to 1.36.3 --dry-run",
      "upgrade-k8s --to 1.36.3",
      "health",
      "kubelet cp-1",
      "kubelet cp-2",
      "kubelet cp-3",
      "kubelet w-1",
      "kubelet w-2",
      "kubelet w-3",
    ]);
    assert.ok(
      f.talos.log.includes("upgrade-k8s via cp-1 --to 1.36.3 --dry-run"),
      "on the first control plane",
    );
    assert.equal(
      readStack(f),
      before.replace("kubernetesVersion: 1.35.6", "kubernetesVersion: 1.36.3"),
    );
    assert.match(
      f.ctx.stdout.text,
      /updating "kube-apiserver" to version "1\.36\.3"/,
      "shows the dry run's plan",
    );
  });

  it("refuses Kubernetes two minors ahead, naming the step to take first, before any change", async () => {
    const f = dayTwoFixture();
    assert.equal(
      await runCli(["upgrade", "kubernetes", "staging", "--to", "1.37.0"], f.ctx),
      ExitCode.refused,
    );
    assert.match(
      f.ctx.stderr.text,
      /Kubernetes upgrade path: Kubernetes moves one minor version at a time; got 1\.35\.6 → 1\.37\.0\. Upgrade to 1\.36\.<latest patch> first/,
    );
    assert.deepEqual(f.talos.callsOf("snapshot via"), []);
    assert.deepEqual(f.talos.callsOf("upgrade-k8s via cp-1"), []);
  });

  it("refuses a downgrade", async () => {
    const f = dayTwoFixture();
    assert.equal(
      await runCli(["upgrade", "kubernetes", "staging", "--to", "1.34.9"], f.ctx),
      ExitCode.refused,
    );
    assert.match(f.ctx.stderr.text, /Kubernetes is never downgraded; got 1\.35\.6 → 1\.34\.9/);
  });

  it("refuses a Kubernetes version the running Talos does not support", async () => {
    const f = dayTwoFixture();
    for (const node of f.talos.nodes) node.kubelet = "1.36.3";
    assert.equal(
      await runCli(["upgrade", "kubernetes", "staging", "--to", "1.37.0"], f.ctx),
      ExitCode.refused,
    );
    assert.match(
      f.ctx.stderr.text,
      /Kubernetes support: Talos 1\.13 supports Kubernetes 1\.31 to 1\.36 only; got 1\.37\.0\. Upgrade Talos first/,
    );
    const g = dayTwoFixture();
    for (const node of g.talos.nodes) node.version = "v1.12.4";
    assert.equal(
      await runCli(["upgrade", "kubernetes", "staging", "--to", "1.36.3"], g.ctx),
      ExitCode.refused,
    );
    assert.match(
      g.ctx.stderr.text,
      /Kubernetes support: Talos 1\.12 supports Kubernetes 1\.30 to 1\.35 only; got 1\.36\.3/,
    );
    assert.deepEqual([...f.talos.callsOf("snapshot via"), ...g.talos.callsOf("snapshot via")], []);
  });

  it("stops without the real upgrade when the dry run fails", async () => {
    const f = dayTwoFixture();
    f.talos.kubernetesFails = "dry-run";
    assert.equal(
      await runCli(["upgrade", "kubernetes", "staging", "--to", "1.36.3"], f.ctx),
      ExitCode.failed,
    );
    assert.match(
      f.ctx.stderr.text,
      /the dry run failed; nothing was changed; got "error: removed API in use/,
    );
    assert.deepEqual(
      f.talos.callsOf("upgrade-k8s").filter((l) => !l.endsWith("--dry-run")),
      [],
    );
    assert.match(readStack(f), /kubernetesVersion: 1\.35\.6/);
  });

  it("says the upgrade is safe to re-run when it fails partway, and leaves the stack file", async () => {
    const f = dayTwoFixture();
    f.talos.kubernetesFails = "real";
    assert.equal(
      await runCli(["upgrade", "kubernetes", "staging", "--to", "1.36.3"], f.ctx),
      ExitCode.failed,
    );
    assert.match(
      f.ctx.stderr.text,
      /upgrade-k8s failed partway.*It is safe to re-run once the cause is fixed: npm run platform -- upgrade kubernetes staging --to 1\.36\.3/s,
    );
    assert.match(readStack(f), /kubernetesVersion: 1\.35\.6/);
  });

  it("does not bump the stack file when the cluster is unhealthy afterwards", async () => {
    const f = dayTwoFixture();
    const original = f.talos.health.bind(f.talos);
    f.talos.health = async (check) => {
      if (f.talos.log.some((l) => l === "upgrade-k8s via cp-1 --to 1.36.3"))
        throw new Error("healthcheck error: kube-apiserver not ready");
      await original(check);
    };
    assert.equal(
      await runCli(["upgrade", "kubernetes", "staging", "--to", "1.36.3"], f.ctx),
      ExitCode.failed,
    );
    assert.match(f.ctx.stderr.text, /the cluster is not healthy after the upgrade/);
    assert.match(readStack(f), /kubernetesVersion: 1\.35\.6/);
  });

  it("does not bump the stack file when a kubelet is left behind", async () => {
    const f = dayTwoFixture();
    const original = f.talos.upgradeKubernetes.bind(f.talos);
    f.talos.upgradeKubernetes = async (via, upgrade) => {
      const result = await original(via, upgrade);
      f.talos.byName("w-2").kubelet = "1.35.6";
      return result;
    };
    assert.equal(
      await runCli(["upgrade", "kubernetes", "staging", "--to", "1.36.3"], f.ctx),
      ExitCode.failed,
    );
    assert.match(f.ctx.stderr.text, /kubelets are not on the target version; got w-2 1\.35\.6/);
    assert.match(readStack(f), /kubernetesVersion: 1\.35\.6/);
  });
});
