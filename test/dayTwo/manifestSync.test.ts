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
import { parseManifestDryRun } from "../../automation/dayTwo/talosctlOutput";

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
