import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { parse } from "yaml";
import { applyBump, describeBump, planBump } from "../../automation/dayTwo/versionBump";
import { STACK_FIXTURES } from "../harness";

function copy(name: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "stack-bump-"));
  const file = path.join(dir, name);
  fs.copyFileSync(path.join(STACK_FIXTURES, name), file);
  return file;
}

/** The lines that differ between two texts of the same length in lines. */
function changedLines(a: string, b: string): string[] {
  const x = a.split("\n");
  const y = b.split("\n");
  assert.equal(x.length, y.length);
  return y.filter((line, i) => line !== x[i]);
}

describe("stack file bump", () => {
  for (const name of ["Pulumi.staging.yaml", "Pulumi.prod.yaml"]) {
    it(`changes exactly the version line of ${name}, comments and formatting kept`, () => {
      const file = copy(name);
      const before = fs.readFileSync(file, "utf8");
      const bump = planBump(file, "talosVersion", "v1.14.1");
      applyBump(bump);
      const after = fs.readFileSync(file, "utf8");
      assert.deepEqual(changedLines(before, after), ["    talosVersion: v1.14.1"]);
      assert.equal(parse(after).config["talos-platform:cluster"].talosVersion, "v1.14.1");
      const k8s = planBump(file, "kubernetesVersion", "1.37.0");
      applyBump(k8s);
      assert.deepEqual(changedLines(after, fs.readFileSync(file, "utf8")), [
        "    kubernetesVersion: 1.37.0",
      ]);
      assert.match(
        describeBump(k8s, path.dirname(file)),
        new RegExp(`^${name.replace(/\./g, "\\.")}:\\d+: kubernetesVersion: 1\\.37\\.0$`),
      );
    });
  }

  it("keeps the value's quoting", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "stack-bump-"));
    const file = path.join(dir, "Pulumi.x.yaml");
    fs.writeFileSync(
      file,
      "config:\n  talos-platform:cluster: { name: x, talosVersion: \"v1.13.9\", kubernetesVersion: '1.36.3' } # flow\n",
    );
    applyBump(planBump(file, "talosVersion", "v1.14.1"));
    applyBump(planBump(file, "kubernetesVersion", "1.37.0"));
    assert.equal(
      fs.readFileSync(file, "utf8"),
      "config:\n  talos-platform:cluster: { name: x, talosVersion: \"v1.14.1\", kubernetesVersion: '1.37.0' } # flow\n",
    );
  });

  it("reports no change when the file already says the version", () => {
    const file = copy("Pulumi.staging.yaml");
    const bump = planBump(file, "talosVersion", "v1.13.9");
    assert.equal(bump.changed, false);
    assert.equal(bump.text, fs.readFileSync(file, "utf8"));
  });

  it("refuses a file whose version is not a plain value", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "stack-bump-"));
    const file = path.join(dir, "Pulumi.x.yaml");
    fs.writeFileSync(file, "config:\n  talos-platform:cluster:\n    name: x\n");
    assert.throws(
      () => planBump(file, "talosVersion", "v1.14.1"),
      /config\.talos-platform:cluster\.talosVersion: is not a plain value this command can update/,
    );
  });
});
