// Reading upgrade-k8s's dry run of the bootstrap manifests, and what the CLI makes of it. The
// outputs are hand-written from Talos' source (test/fixtures/upgrade-k8s/README.md): the emulator
// cannot serve upgrade-k8s.
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as path from "node:path";
import {
  formatManifestPlan,
  overwrites,
  supportsNoPrune,
} from "../../automation/dayTwo/manifestSync";
import { parseManifestDryRun, withoutSecretDiffs } from "../../automation/dayTwo/talosctlOutput";

const dryRun = (name: string) =>
  fs.readFileSync(path.join(__dirname, "..", "fixtures", "upgrade-k8s", `${name}.txt`), "utf8");

describe("upgrade-k8s's dry run of the bootstrap manifests", () => {
  it("reads each object's action from the server-side apply sync (Talos 1.13)", () => {
    const changes = parseManifestDryRun(dryRun("dry-run-flux-moved-on"))!;
    assert.equal(changes.length, 35);
    assert.deepEqual(
      changes.filter((c) => c.action !== "unchanged").map((c) => `${c.action} ${c.subject}`),
      [
        "configured Deployment/flux-system/source-controller",
        "configured Secret/flux-system/flux-system",
        "created ConfigMap/flux-system/flux-extra",
      ],
    );
    const deployment = changes.find(
      (c) => c.subject === "Deployment/flux-system/source-controller",
    )!;
    assert.equal(deployment.kind, "Deployment");
    assert.match(deployment.diff, /^--- a\/apps\/v1\.Deployment\/flux-system\/source-controller$/m);
    assert.match(deployment.diff, /^-\s+image: ghcr\.io\/fluxcd\/source-controller:v1\.8\.0$/m);
    // The lines before the manifest step (" > …", " < …" of the pre-pull) are not objects.
    assert.ok(changes.every((c) => !c.subject.startsWith('"')));
    assert.deepEqual(
      overwrites(changes).map((c) => c.subject),
      ["Deployment/flux-system/source-controller", "Secret/flux-system/flux-system"],
    );
  });

  it("reads the older sync (Talos 1.12 nodes, talosctl 1.12): a diff that only adds is a create", () => {
    const changes = parseManifestDryRun(dryRun("dry-run-older-sync"))!;
    assert.equal(changes.length, 35);
    assert.deepEqual(
      changes.filter((c) => c.action !== "unchanged").map((c) => `${c.action} ${c.kind}`),
      ["configured Deployment", "created ConfigMap"],
    );
    assert.equal(
      changes.find((c) => c.action === "configured")!.subject,
      "apps/v1.Deployment/flux-system/source-controller",
    );
    assert.deepEqual([...new Set(changes.map((c) => c.kind))].sort().slice(0, 4), [
      "ClusterRole",
      "ClusterRoleBinding",
      "ConfigMap",
      "CustomResourceDefinition",
    ]);
  });

  it("finds nothing to overwrite when every object is unchanged", () => {
    const changes = parseManifestDryRun(dryRun("dry-run"))!;
    assert.equal(changes.length, 34);
    assert.ok(changes.every((c) => c.action === "unchanged"));
    assert.deepEqual(overwrites(changes), []);
  });

  it("counts a prune as an overwrite, and says when there is no manifest step at all", () => {
    const pruned = parseManifestDryRun(
      [
        "updating manifests (dry run)",
        " < Pruned ConfigMap/kube-system/cilium-config",
        "--- a/v1.ConfigMap/kube-system/cilium-config",
        "+++ b/v1.ConfigMap/kube-system/cilium-config",
        "@@ -1,2 +0,0 @@",
        "-apiVersion: v1",
        "-kind: ConfigMap",
        "",
        " < unchanged Namespace/flux-system",
        "",
      ].join("\n"),
    )!;
    assert.deepEqual(
      overwrites(pruned).map((c) => `${c.action} ${c.subject}`),
      ["pruned ConfigMap/kube-system/cilium-config"],
    );
    const withoutManifests = dryRun("dry-run").split("updating manifests")[0];
    assert.equal(parseManifestDryRun(withoutManifests), undefined);
  });

  it("refuses to guess at a line it does not know, or an object the older sync left open", () => {
    assert.throws(
      () => parseManifestDryRun("updating manifests (dry run)\n < replaced Deployment/a/b\n"),
      /upgrade-k8s --dry-run: expected ` < <action> <object>`.*got "< replaced Deployment\/a\/b"/,
    );
    assert.throws(
      () => parseManifestDryRun("updating manifests\n > processing manifest v1.ConfigMap/a/b\n"),
      /got "> processing manifest v1\.ConfigMap\/a\/b"/,
    );
  });

  it("prints the objects that would change with their diffs, never a Secret's", () => {
    const lines = formatManifestPlan(parseManifestDryRun(dryRun("dry-run-flux-moved-on"))!);
    assert.equal(
      lines[0],
      "manifests: 35 objects; 32 unchanged, 1 to create, 2 to overwrite, 0 to delete",
    );
    const text = lines.join("\n");
    assert.match(text, /< configured Deployment\/flux-system\/source-controller\n {6}--- a\//);
    assert.match(text, /\+ {8}image: ghcr\.io\/fluxcd\/source-controller:v1\.7\.3/);
    assert.match(
      text,
      /< configured Secret\/flux-system\/flux-system\n {6}\(a Secret: its diff is not shown\)/,
    );
    assert.doesNotMatch(text, /identity|known_hosts/);
    assert.doesNotMatch(text, /unchanged Namespace/);
  });

  it("passes --manifests-no-prune only to a talosctl that has it (v1.13 on)", () => {
    assert.equal(supportsNoPrune("v1.13.0"), true);
    assert.equal(supportsNoPrune("v1.14.0-alpha.1"), true);
    assert.equal(supportsNoPrune("v1.12.11"), false);
    assert.equal(supportsNoPrune(undefined), false);
  });
});

describe("upgrade-k8s's streamed output", () => {
  /** What reaches the sink when `text` arrives in chunks of `size` characters. */
  function streamed(text: string, size: number): string {
    let shown = "";
    const filter = withoutSecretDiffs((chunk) => (shown += chunk));
    for (let i = 0; i < text.length; i += size) filter(text.slice(i, i + size));
    return shown;
  }

  // The apply's log (go-kubernetes v0.2.36 ssa/cli LogApplyResults: ` < <action> <subject>`, then
  // the diff, which for a created object is the whole object, unmasked; ` > skipped …: no changes`).
  const applied = [
    "updating manifests",
    " > skipped Namespace/flux-system: no changes",
    " < created Secret/flux-system/flux-system",
    "--- a/v1.Secret/flux-system/flux-system",
    "+++ b/v1.Secret/flux-system/flux-system",
    "@@ -0,0 +1,8 @@",
    "+apiVersion: v1",
    "+kind: Secret",
    "+stringData:",
    "+  identity: |",
    "+    -----BEGIN OPENSSH PRIVATE KEY-----",
    "+    b3BlbnNzaC1rZXktdjEAAAAA",
    "+    -----END OPENSSH PRIVATE KEY-----",
    "+type: Opaque",
    "",
    " < configured Deployment/flux-system/source-controller",
    "--- a/apps/v1.Deployment/flux-system/source-controller",
    "+++ b/apps/v1.Deployment/flux-system/source-controller",
    "@@ -1,1 +1,1 @@",
    "-        image: ghcr.io/fluxcd/source-controller:v1.8.0",
    "+        image: ghcr.io/fluxcd/source-controller:v1.7.3",
    "",
    "waiting for kubernetes objects to be fully reconciled",
    "done",
    "",
  ].join("\n");

  it("withholds a Secret's diff, in whatever chunks it arrives, and passes the rest", () => {
    for (const size of [1, 7, 64, applied.length]) {
      const shown = streamed(applied, size);
      assert.doesNotMatch(shown, /PRIVATE KEY|b3BlbnNz|stringData/, `chunks of ${size}`);
      assert.match(
        shown,
        / < created Secret\/flux-system\/flux-system\n \(a Secret: its diff is not shown\)\n < configured Deployment/,
      );
      assert.match(shown, /\+ {8}image: ghcr\.io\/fluxcd\/source-controller:v1\.7\.3\n/);
      assert.match(shown, /waiting for kubernetes objects to be fully reconciled\ndone\n$/);
    }
  });

  it("withholds it in the older sync's output too (manifests.SyncWithLog)", () => {
    const older = [
      " > processing manifest v1.Secret/flux-system/flux-system",
      "--- a/v1.Secret/flux-system/flux-system",
      "+++ b/v1.Secret/flux-system/flux-system",
      "@@ -3 +3 @@",
      "-  identity: b2xk",
      "+  identity: bmV3",
      "",
      " < applied successfully",
      "waiting for all manifests to be applied",
      " > waiting for apps/v1.Deployment/flux-system/source-controller",
      "",
    ].join("\n");
    const shown = streamed(older, 5);
    assert.doesNotMatch(shown, /identity/);
    assert.match(shown, / < applied successfully\nwaiting for all manifests to be applied\n/);
  });
});
