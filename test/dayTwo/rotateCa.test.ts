// rotate-ca through the command line (its argument checks and guard) and the stack-file record it
// writes and resumes from.
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { parse } from "yaml";
import { runCli } from "../../automation/cli";
import {
  describeStep,
  readRotationRecord,
  writeRotationRecord,
} from "../../automation/dayTwo/rotateCa";
import { ExitCode } from "../../automation/errors";
import { cleanupRepos, makeRepo, testContext } from "../automation/helpers";

const STACK = `# staging: the operator's comment
config:
  talos-platform:cluster:
    name: s # the cluster's name
    talosVersion: v1.13.9
    kubernetesVersion: 1.36.3
  talos-platform:nodes: [{ name: cp-1, role: controlplane }, { name: w-1, role: worker }]
`;

describe("rotate-ca", () => {
  afterEach(cleanupRepos);
  const repo = () =>
    makeRepo({ foundation: { project: "talos-platform", stacks: { staging: STACK } } });

  it("needs exactly one of --talos and --kubernetes, before anything is read", async () => {
    for (const argv of [
      ["rotate-ca", "staging"],
      ["rotate-ca", "staging", "--talos", "--kubernetes"],
    ]) {
      const ctx = testContext({ repoRoot: repo() });
      assert.equal(await runCli(argv, ctx), ExitCode.usage, argv.join(" "));
      assert.match(ctx.stderr.text, /rotate-ca: needs exactly one of --talos and --kubernetes/);
      assert.equal(ctx.workspaces.calls.length, 0);
    }
  });

  it("is refused in CI (it changes the running cluster), writing nothing", async () => {
    const root = repo();
    const ctx = testContext({ repoRoot: root, env: { CI: "true" } });
    const file = path.join(root, "Pulumi.staging.yaml");
    const before = fs.readFileSync(file, "utf8");
    assert.equal(await runCli(["rotate-ca", "staging", "--talos"], ctx), ExitCode.refused);
    assert.match(
      ctx.stderr.text,
      /rotate-ca staging: changes the running cluster and is not run from CI/,
    );
    assert.equal(fs.readFileSync(file, "utf8"), before);
    assert.equal(ctx.workspaces.calls.length, 0);
  });

  it("lists rotate-ca with an example in the help", async () => {
    const ctx = testContext({ repoRoot: repo() });
    assert.equal(await runCli(["--help"], ctx), ExitCode.ok);
    assert.match(ctx.stdout.text, /^  rotate-ca /m);
    assert.match(ctx.stdout.text, /npm run platform -- rotate-ca staging --talos/);
  });

  describe("the stack-file record", () => {
    let dir: string;
    let file: string;
    beforeEach(() => {
      dir = fs.mkdtempSync(path.join(os.tmpdir(), "rotate-ca-"));
      file = path.join(dir, "Pulumi.staging.yaml");
      fs.writeFileSync(file, STACK);
    });
    afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

    it("is written under cluster.caRotation, keeping the operator's comments, and read back", () => {
      assert.equal(readRotationRecord(file, "talos"), undefined);
      writeRotationRecord(file, "talos", { generation: 1, phase: "issuing", nodes: ["cp-1"] });
      const text = fs.readFileSync(file, "utf8");
      assert.match(text, /# staging: the operator's comment/);
      assert.match(text, /name: s # the cluster's name/);
      const cluster = (parse(text) as { config: Record<string, any> }).config[
        "talos-platform:cluster"
      ];
      assert.deepEqual(cluster.caRotation, {
        talos: { generation: 1, phase: "issuing", nodes: ["cp-1"] },
      });
      assert.deepEqual(readRotationRecord(file, "talos"), {
        generation: 1,
        phase: "issuing",
        nodes: ["cp-1"],
      });
      // The last step of a phase drops `nodes`; the other CA's record is untouched.
      writeRotationRecord(file, "kubernetes", { generation: 2, phase: "removed" });
      writeRotationRecord(file, "talos", { generation: 1, phase: "removed" });
      assert.deepEqual(readRotationRecord(file, "talos"), { generation: 1, phase: "removed" });
      assert.deepEqual(readRotationRecord(file, "kubernetes"), { generation: 2, phase: "removed" });
    });

    it("refuses a record it did not write, naming the key", () => {
      fs.writeFileSync(
        file,
        STACK.replace("    name: s", "    caRotation: { talos: { phase: soon } }\n    name: s"),
      );
      assert.throws(
        () => readRotationRecord(file, "talos"),
        /Pulumi\.staging\.yaml config\.talos-platform:cluster\.caRotation\.talos: is not a rotation record rotate-ca wrote/,
      );
    });
  });

  it("describes each step by its phase and the node it reached", () => {
    const nodes = ["cp-1", "w-1"];
    assert.equal(
      describeStep({ generation: 1, phase: "generated" }, nodes),
      "generation 1: new CA generated (no node changes)",
    );
    assert.equal(
      describeStep({ generation: 1, phase: "accepted", nodes: ["cp-1"] }, nodes),
      "generation 1: new CA accepted beside the old one on cp-1",
    );
    assert.equal(
      describeStep({ generation: 1, phase: "removed" }, nodes),
      "generation 1: old CA removed on w-1 (every node now)",
    );
  });
});
