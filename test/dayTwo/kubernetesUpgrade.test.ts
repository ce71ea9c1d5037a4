import { strict as assert } from "node:assert";
import { runCli } from "../../automation/cli";
import { ExitCode } from "../../automation/errors";
import { cleanupRepos } from "../automation/helpers";
import {
  NODES,
  dayTwoFixture as baseFixture,
  foundationOutputs,
  readStack,
  stackYaml,
} from "./helpers";

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

describe("upgrade kubernetes and the bootstrap manifests", () => {
  afterEach(cleanupRepos);
  const upgradeArgs = ["upgrade", "kubernetes", "staging", "--to", "1.36.3"];

  it("stops before the upgrade (exit 3) when the dry run would overwrite live objects, naming them and the ways on", async () => {
    const f = dayTwoFixture();
    f.talos.kubernetesDryRun = "dry-run-flux-moved-on";
    const before = readStack(f);
    assert.equal(await runCli(upgradeArgs, f.ctx), ExitCode.refused);
    // The snapshot and the dry run, then nothing: no real upgrade, no health gate after it.
    const steps = f.talos.log.filter((l) => /^(snapshot|upgrade-k8s)/.test(l));
    assert.deepEqual(steps, ["snapshot via cp-1", "upgrade-k8s via cp-1 --to 1.36.3 --dry-run"]);
    assert.match(
      f.ctx.stderr.text,
      /^upgrade kubernetes staging: upgrade-k8s would overwrite 2 live objects of the bootstrap manifests with the machine config's version \(server-side apply, ownership forced\); nothing was changed; got configured Deployment\/flux-system\/source-controller, configured Secret\/flux-system\/flux-system\. If Flux .*run up, or take them out of the config \(docs\/day-two\.md#bootstrap-manifests\); then rerun\. To overwrite them anyway .*: npm run platform -- upgrade kubernetes staging --to 1\.36\.3 --allow-manifest-overwrite$/m,
    );
    assert.equal(readStack(f), before);
    // The plan shows what would change, the Deployment's diff, and no Secret's.
    const out = f.ctx.stdout.text;
    assert.match(
      out,
      / {4}manifests: 35 objects; 32 unchanged, 1 to create, 2 to overwrite, 0 to delete/,
    );
    assert.match(out, /^ {4} {2}< configured Deployment\/flux-system\/source-controller$/m);
    assert.match(out, /^ {10}-\s+image: ghcr\.io\/fluxcd\/source-controller:v1\.8\.0$/m);
    assert.match(
      out,
      /< configured Secret\/flux-system\/flux-system\n.*\(a Secret: its diff is not shown\)/,
    );
    assert.doesNotMatch(out, /identity|known_hosts/);
    // talosctl's own lines before its manifest step are shown as it printed them.
    assert.match(out, /^ {4}updating "kube-apiserver" to version "1\.36\.3"$/m);
  });

  it("overwrites them when told to (--allow-manifest-overwrite), saying which, and finishes", async () => {
    const f = dayTwoFixture();
    f.talos.kubernetesDryRun = "dry-run-flux-moved-on";
    assert.equal(
      await runCli([...upgradeArgs, "--allow-manifest-overwrite"], f.ctx),
      ExitCode.ok,
      f.ctx.stderr.text,
    );
    assert.deepEqual(f.talos.callsOf("upgrade-k8s via cp-1"), [
      "upgrade-k8s via cp-1 --to 1.36.3 --dry-run",
      "upgrade-k8s via cp-1 --to 1.36.3",
    ]);
    assert.match(
      f.ctx.stdout.text,
      /--allow-manifest-overwrite: upgrade-k8s overwrites configured Deployment\/flux-system\/source-controller, configured Secret\/flux-system\/flux-system\n/,
    );
    assert.match(readStack(f), /kubernetesVersion: 1\.36\.3/);
  });

  it("stops the same way on the older sync's diff (Talos 1.12 nodes), but not for an object it only creates", async () => {
    const f = dayTwoFixture();
    f.talos.kubernetesDryRun = "dry-run-older-sync";
    assert.equal(await runCli(upgradeArgs, f.ctx), ExitCode.refused);
    assert.match(
      f.ctx.stderr.text,
      /would overwrite 1 live object of the bootstrap manifests .*; got configured apps\/v1\.Deployment\/flux-system\/source-controller\. /,
    );
  });

  it("stops (exit 3) when the dry run shows no manifest step to judge", async () => {
    const f = dayTwoFixture();
    const original = f.talos.upgradeKubernetes.bind(f.talos);
    f.talos.upgradeKubernetes = async (via, upgrade) =>
      (await original(via, upgrade)).split("updating manifests")[0];
    assert.equal(await runCli(upgradeArgs, f.ctx), ExitCode.refused);
    assert.match(
      f.ctx.stderr.text,
      /could not read the dry run's manifest plan, so whether upgrade-k8s would overwrite live objects is unknown; nothing was changed; got "the dry run printed no manifest step \(no `updating manifests` line\)"/,
    );
    assert.deepEqual(
      f.talos.callsOf("upgrade-k8s").filter((l) => !l.endsWith("--dry-run")),
      [],
    );
  });

  it("never prunes: --manifests-no-prune on the dry run and the upgrade, not given to a talosctl without it", async () => {
    const f = dayTwoFixture();
    assert.equal(await runCli(upgradeArgs, f.ctx), ExitCode.ok, f.ctx.stderr.text);
    assert.deepEqual(
      f.talos.kubernetesUpgrades.map((u) => [u.dryRun, u.noPrune]),
      [
        [true, true],
        [false, true],
      ],
    );
    assert.match(
      f.ctx.stdout.text,
      /talosctl upgrade-k8s --to 1\.36\.3 --manifests-no-prune \(on cp-1\):/,
    );
    const older = dayTwoFixture();
    older.talos.client = "v1.12.4";
    assert.equal(await runCli(upgradeArgs, older.ctx), ExitCode.ok, older.ctx.stderr.text);
    assert.deepEqual(
      older.talos.kubernetesUpgrades.map((u) => u.noPrune),
      [false, false],
    );
  });

  it("passes talosctl the exact flags (through the real client)", async () => {
    const f = baseFixture({ stack: stackYaml("v1.13.9", "1.35.6"), talosctl: true });
    for (const node of f.talos.nodes) node.kubelet = "1.35.6";
    assert.equal(await runCli(upgradeArgs, f.ctx), ExitCode.ok, f.ctx.stderr.text);
    const runs = f.talosctlCalls
      .filter((c) => c.args[0] === "upgrade-k8s")
      .map((c) => c.args.slice(0, c.args.indexOf("--talosconfig")));
    assert.deepEqual(runs, [
      ["upgrade-k8s", "--to", "1.36.3", "--dry-run", "--manifests-no-prune"],
      ["upgrade-k8s", "--to", "1.36.3", "--manifests-no-prune"],
    ]);
  });
});

describe("upgrade kubernetes and the images the stack pins", () => {
  afterEach(cleanupRepos);
  const upgradeArgs = ["upgrade", "kubernetes", "staging", "--to", "1.36.3"];
  const MIRROR = "registry.example.net:5000";

  /** The fixture's outputs with each node's generated config carrying `images` in its machine section. */
  function pinned(images: (node: string) => string) {
    const outputs = foundationOutputs(undefined, { talos: "v1.13.9", kubernetes: "1.35.6" });
    const configs = outputs.machineConfigurations.value as Record<string, string>;
    for (const node of NODES) {
      configs[node.name] = configs[node.name].replace(
        "machine:\n",
        `machine:\n${images(node.name)}`,
      );
    }
    return outputs;
  }

  it("runs upgrade-k8s with the configs' images (v1alpha1 keys and Talos 1.14 documents), and says which pins to bump", async () => {
    const f = dayTwoFixture();
    f.ctx.workspaces.outputs = pinned(
      () =>
        `  kubelet:\n    image: ${MIRROR}/siderolabs/kubelet:v1.35.6@sha256:${"a".repeat(64)}\n`,
    );
    // A control plane's config pins the API server in a document of its own (Talos 1.14).
    const configs = f.ctx.workspaces.outputs.machineConfigurations.value as Record<string, string>;
    for (const cp of ["cp-1", "cp-2", "cp-3"]) {
      configs[cp] +=
        `---\napiVersion: v1alpha1\nkind: KubeAPIServerConfig\nimage: ${MIRROR}/k8s/kube-apiserver:v1.35.6\n`;
    }
    assert.equal(await runCli(upgradeArgs, f.ctx), ExitCode.ok, f.ctx.stderr.text);
    const images = {
      kubelet: `${MIRROR}/siderolabs/kubelet`,
      apiserver: `${MIRROR}/k8s/kube-apiserver`,
    };
    assert.deepEqual(
      f.talos.kubernetesUpgrades.map((u) => u.images),
      [images, images],
    );
    assert.match(
      f.ctx.stdout.text,
      /talosctl upgrade-k8s --to 1\.36\.3 --dry-run --manifests-no-prune --kubelet-image registry\.example\.net:5000\/siderolabs\/kubelet --apiserver-image registry\.example\.net:5000\/k8s\/kube-apiserver \(on cp-1\):/,
    );
    assert.match(
      f.ctx.stdout.text,
      /note: the stack's patches pin kubelet to registry\.example\.net:5000\/siderolabs\/kubelet:v1\.35\.6@sha256:a+; upgrade-k8s set it to v1\.36\.3 \(without a digest\): change the pin to the v1\.36\.3 image in the same commit as kubernetesVersion/,
    );
    assert.match(f.ctx.stdout.text, /note: the stack's patches pin apiserver to /);
    assert.equal(f.talos.byName("w-3").kubeletImage, `${MIRROR}/siderolabs/kubelet:v1.36.3`);
  });

  it("passes no image flag for Talos' own images, and names no pin", async () => {
    const f = dayTwoFixture();
    // What Talos generates for the deployed version: nothing to pass, nothing pinned.
    f.ctx.workspaces.outputs = pinned(
      () => "  kubelet:\n    image: ghcr.io/siderolabs/kubelet:v1.35.6\n",
    );
    assert.equal(await runCli(upgradeArgs, f.ctx), ExitCode.ok, f.ctx.stderr.text);
    assert.deepEqual(
      f.talos.kubernetesUpgrades.map((u) => u.images),
      [{}, {}],
    );
    assert.doesNotMatch(f.ctx.stdout.text, /note: the stack's patches pin/);
  });

  it("refuses (exit 3) before any snapshot when nodes run the kubelet from different images", async () => {
    const f = dayTwoFixture();
    f.ctx.workspaces.outputs = pinned((name) =>
      name === "w-2" ? `  kubelet:\n    image: ${MIRROR}/siderolabs/kubelet:v1.35.6\n` : "",
    );
    assert.equal(await runCli(upgradeArgs, f.ctx), ExitCode.refused);
    assert.match(
      f.ctx.stderr.text,
      /upgrade kubernetes staging: the configs run kubelet from 2 images, and talosctl upgrade-k8s sets one \(--kubelet-image\) on every node; got ghcr\.io\/siderolabs\/kubelet \(cp-1, cp-2, cp-3, w-1, w-3\); registry\.example\.net:5000\/siderolabs\/kubelet \(w-2\)\. Pin the same image/,
    );
    assert.deepEqual(f.talos.callsOf("snapshot via"), []);
    assert.deepEqual(f.talos.callsOf("upgrade-k8s"), []);
  });
});
