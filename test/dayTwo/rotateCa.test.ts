// rotate-ca through the command line (its argument checks and guard), the stack-file record it
// writes and resumes from, and the Kubernetes gate of --kubernetes after each step.
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { parse } from "yaml";
import { runCli } from "../../automation/cli";
import {
  describeStep,
  readRotationRecord,
  rotateCa,
  writeRotationRecord,
} from "../../automation/dayTwo/rotateCa";
import { ExitCode, UserError } from "../../automation/errors";
import type { CaRotationRecord } from "../../components/spec/types";
import { cleanupRepos, makeRepo, testContext } from "../automation/helpers";
import { fakeKubectl } from "./fakeKubectl";
import { NODES, dayTwoFixture } from "./helpers";

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

describe("rotate-ca --kubernetes: the Kubernetes gate", () => {
  afterEach(cleanupRepos);

  /** The kubeconfig output under the Kubernetes CA of `generation` (a marker the fake reads). */
  const kubeconfigOf = (generation: number) => `apiVersion: v1\n# client of CA ${generation}\n`;
  const generationOf = (kubeconfig: string) => Number(/client of CA (\d+)/.exec(kubeconfig)?.[1]);

  /**
   * A fixture whose `up` does what the program does with the record it applies: the kubeconfig
   * output is fetched again once the new CA issues (components/talos/caAuthorities.ts), and the
   * control planes accept the old CA until it is removed from every node; `broken` changes that.
   */
  function rotation(
    broken: {
      /** The API server never accepts the new CA (its step's up did not reach the control planes). */
      newRefused?: boolean;
      /** The old CA stays accepted after its removal. */
      oldKept?: boolean;
    } = {},
  ) {
    const f = dayTwoFixture();
    const log: string[] = [];
    const kubectl = fakeKubectl(log);
    kubectl.listed = NODES.map((n) => n.name);
    Object.assign(f.ctx.dayTwo!, { kubectl: kubectl.run });
    f.ctx.workspaces.outputs.kubeconfig = { value: kubeconfigOf(0), secret: true };
    let accepted = new Set([0]);
    kubectl.accepts = (text) => accepted.has(generationOf(text));
    const ups: CaRotationRecord[] = [];
    /** The kubeconfig each step's up exported, in order. */
    const exported: string[] = [];
    const up = async () => {
      const record = readRotationRecord(f.stackFile, "kubernetes")!;
      ups.push(record);
      const { generation: g, phase } = record;
      const issued = phase === "issuing" || phase === "removed" ? g : g - 1;
      const done = phase === "removed" && record.nodes === undefined;
      accepted = new Set(
        phase === "generated" ? [g - 1] : done && !broken.oldKept ? [g] : [g - 1, g],
      );
      if (broken.newRefused) accepted.delete(g);
      f.ctx.workspaces.outputs.kubeconfig = { value: kubeconfigOf(issued), secret: true };
      exported.push(kubeconfigOf(issued));
      return ExitCode.ok;
    };
    /** The command as the CLI runs it: a refusal's message on stderr, its exit code returned. */
    const run = () =>
      rotateCa(f.ctx, {
        env: "staging",
        ca: "kubernetes",
        installCli: false,
        healthTimeoutMs: 60_000,
        up,
      }).catch((error: unknown) => {
        if (!(error instanceof UserError)) throw error;
        f.ctx.stderr.write(`${error.message}\n`);
        return error.exitCode;
      });
    /** The kubeconfig of each `get nodes`, in order. */
    const listedWith = () =>
      kubectl.calls.filter((c) => c.args[0] === "get").map((c) => c.kubeconfig?.content);
    return { f, kubectl, ups, exported, run, listedWith };
  }

  it("lists every node Ready through the kubeconfig each step exported, and the old one is refused at the end", async () => {
    const r = rotation();
    assert.equal(await r.run(), ExitCode.ok, r.f.ctx.stderr.text);
    // generated once, then accepted, issuing and removed node by node: 1 + 3 × 6 steps.
    assert.equal(r.ups.length, 1 + 3 * NODES.length);
    // The kubeconfig from before answers first; each step's gate asks through the kubeconfig that
    // step exported; the last ask is the old one's, refused.
    assert.deepEqual(r.listedWith(), [kubeconfigOf(0), ...r.exported, kubeconfigOf(0)]);
    // The old kubeconfig works until the new CA issues; from the first issuing step on, the new one.
    assert.equal(r.exported.indexOf(kubeconfigOf(1)), 1 + NODES.length);
    // The progress says which: the one from before for generated and the accepted steps, then new.
    const gates = r.f.ctx.stdout.text.match(
      /the API server lists all 6 nodes Ready through the exported kubeconfig \([^)]+\)/g,
    );
    assert.deepEqual(
      gates?.map((line) => line.replace(/.*\((.+)\)$/, "$1")),
      [
        ...Array<string>(1 + NODES.length).fill("the one from before this run"),
        ...Array<string>(2 * NODES.length).fill("fetched anew since this run began"),
      ],
    );
    assert.match(
      r.f.ctx.stdout.text,
      /the kubeconfig from before the rotation is refused by the API server/,
    );
    assert.deepEqual(readRotationRecord(r.f.stackFile, "kubernetes"), {
      generation: 1,
      phase: "removed",
    });
    // kubectl got the kubeconfig as a private file, never on its command line.
    for (const call of r.kubectl.calls.filter((c) => c.args[0] === "get")) {
      assert.equal(call.kubeconfig?.mode, 0o600);
      assert.ok(!call.args.some((a) => a.includes("client of CA")));
    }
  });

  it("stops at the first step whose kubeconfig the API server refuses, the record left there", async () => {
    const r = rotation({ newRefused: true });
    assert.equal(await r.run(), ExitCode.failed);
    // The accepted steps pass (the old kubeconfig still works); the first issuing step stops it.
    assert.equal(r.ups.length, 1 + NODES.length + 1);
    assert.deepEqual(readRotationRecord(r.f.stackFile, "kubernetes"), {
      generation: 1,
      phase: "issuing",
      nodes: ["cp-1"],
    });
    assert.match(
      r.f.ctx.stderr.text,
      /rotate-ca staging --kubernetes: the kubeconfig the step exported does not reach every node Ready within 1m[^\n]*\n?[^]*Unauthorized/,
    );
    assert.match(
      r.f.ctx.stderr.text,
      /run `npm run platform -- rotate-ca staging --kubernetes` again/,
    );
  });

  it("waits for every node to be listed Ready, within the health timeout", async () => {
    const r = rotation();
    r.kubectl.notReady.add("w-2");
    assert.equal(await r.run(), ExitCode.failed);
    assert.equal(r.ups.length, 1);
    assert.match(r.f.ctx.stderr.text, /not listed Ready: w-2/);
    assert.ok(r.f.clock.slept >= 60_000, `slept ${r.f.clock.slept}`);
    // A node missing from the list is no better than one not Ready.
    const missing = rotation();
    missing.kubectl.listed = NODES.map((n) => n.name).filter((n) => n !== "cp-3");
    assert.equal(await missing.run(), ExitCode.failed);
    assert.match(missing.f.ctx.stderr.text, /not listed Ready: cp-3/);
  });

  it("fails at the end when the kubeconfig from before the rotation still works", async () => {
    const r = rotation({ oldKept: true });
    assert.equal(await r.run(), ExitCode.failed);
    assert.equal(r.ups.length, 1 + 3 * NODES.length);
    assert.match(
      r.f.ctx.stderr.text,
      /rotate-ca staging --kubernetes: the kubeconfig from before the rotation still works/,
    );
  });

  it("needs the kubeconfig output, kubectl and the API server answering before any step, writing nothing", async () => {
    const cases: [(r: ReturnType<typeof rotation>) => unknown, RegExp, number][] = [
      [
        (r) => delete r.f.ctx.workspaces.outputs.kubeconfig,
        /the outputs hold no kubeconfig to check the Kubernetes API with[^\n]*nothing was changed/,
        ExitCode.failed,
      ],
      [
        (r) => (r.kubectl.accepts = () => false),
        /the API server does not answer the exported kubeconfig before the rotation; nothing was changed[^\n]*Unauthorized/,
        ExitCode.failed,
      ],
      [
        (r) => (r.kubectl.missing = true),
        /kubectl: could not be started \(not found\); nothing was changed/,
        ExitCode.missingCli,
      ],
    ];
    for (const [setup, message, exit] of cases) {
      const r = rotation();
      setup(r);
      const before = fs.readFileSync(r.f.stackFile, "utf8");
      const code = await r.run();
      assert.equal(code, exit);
      assert.equal(r.ups.length, 0);
      assert.equal(fs.readFileSync(r.f.stackFile, "utf8"), before);
      assert.match(r.f.ctx.stderr.text, message);
    }
  });
});
