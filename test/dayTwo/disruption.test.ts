// The disruption plan a preview prints and the pull-request summary shows: what `up` would do to the
// running cluster, in the order it would do it.
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as path from "node:path";
import type { EngineEvent, OpType } from "@pulumi/pulumi/automation";
import { runCli } from "../../automation/cli";
import { type DisruptionInput, planDisruption } from "../../automation/dayTwo/disruption";
import { ExitCode } from "../../automation/errors";
import { cleanupRepos } from "../automation/helpers";
import { NODES, dayTwoFixture, foundationOutputs, stackYaml } from "./helpers";

const VM = "proxmoxve:index/vmLegacy:VmLegacy";
const APPLY = "talos:machine/configurationApply:ConfigurationApply";

/** A preview step of one resource of the cluster `staging`. */
function step(op: OpType, type: string, name: string, diffs: string[] = []): EngineEvent {
  const parent = "platform:talos:Cluster$platform:proxmox:Node";
  return {
    sequence: 0,
    timestamp: 0,
    resourcePreEvent: {
      metadata: {
        op,
        urn: `urn:pulumi:staging::talos-platform::${parent}$${type}::${name}`,
        type,
        provider: "",
        ...(diffs.length > 0 ? { diffs } : {}),
      },
    },
  };
}

function input(overrides: Partial<DisruptionInput> = {}): DisruptionInput {
  return {
    env: "staging",
    stack: {
      name: "staging",
      talosVersion: "v1.13.9",
      kubernetesVersion: "1.36.3",
      nodes: NODES.map(({ name, role }) => ({ name, role })),
    },
    applyMode: "staged_if_needing_reboot",
    maxUnavailableWorkers: 2,
    outputs: foundationOutputs(),
    events: [],
    ...overrides,
  };
}

const withVersions = (talosVersion: string, kubernetesVersion: string) =>
  input({ stack: { ...input().stack, talosVersion, kubernetesVersion } });

describe("the disruption plan of up", () => {
  afterEach(cleanupRepos);

  it("says nothing about a cluster that does not run yet, and that nothing is disrupted when nothing is", () => {
    assert.equal(planDisruption(input({ outputs: {} })), undefined);
    assert.deepEqual(planDisruption(input()), []);
  });

  it("orders a Talos and a Kubernetes bump as up runs them: control planes one at a time, workers in batches", () => {
    const steps = planDisruption(withVersions("v1.14.1", "1.37.1"))!;
    assert.equal(steps.length, 2);
    assert.equal(
      steps[0],
      "Talos v1.13.9 → v1.14.1: an etcd snapshot, then each node drained, upgraded and rebooted: 3 control planes one at a time (cp-1, cp-2, cp-3), then 3 workers in 2 batches of at most 2 (w-1 w-2 | w-3)",
    );
    assert.match(
      steps[1],
      /^Kubernetes 1\.36\.3 → 1\.37\.1 \(talosctl upgrade-k8s\): an etcd snapshot; kube-apiserver, kube-controller-manager and kube-scheduler restarted on cp-1, cp-2, cp-3 one node at a time, then kube-proxy, then the kubelet of each of the 6 nodes one at a time; no node reboots$/,
    );
  });

  it("never plans a downgrade: an older version in the stack file disrupts nothing", () => {
    assert.deepEqual(planDisruption(withVersions("v1.13.0", "1.35.0")), []);
  });

  it("lists the etcd membership changes around the engine run: removals before it, joins after it", () => {
    const cp4 = { name: "cp-4", role: "controlplane" as const };
    const cp5 = { name: "cp-5", role: "controlplane" as const };
    const grown = input({
      stack: { ...input().stack, nodes: [...input().stack.nodes, cp4, cp5] },
      events: [step("create", VM, "staging-cp-4-vm"), step("create", APPLY, "staging-cp-4-config")],
    });
    assert.deepEqual(planDisruption(grown), [
      "the engine run: creates and configures cp-4",
      "etcd: cp-4 joins in the engine run, then cp-5, one engine run each, each once the one before is a voting member and the cluster healthy",
    ]);
    const shrunk = input({
      stack: {
        ...input().stack,
        nodes: input().stack.nodes.filter((n) => n.name !== "cp-3" && n.name !== "cp-2"),
      },
      events: [step("delete", VM, "staging-cp-2-vm"), step("delete", VM, "staging-cp-3-vm")],
    });
    assert.deepEqual(planDisruption(shrunk), [
      "drain: cp-2, cp-3 cordoned and drained (kubectl; their pods move to the other nodes, disruption budgets respected)",
      "etcd: cp-2, cp-3 leave one after the other (an etcd snapshot first; quorum without each checked, leadership handed over); a single control plane stays, which needs --allow-single-control-plane",
      "the engine run: deletes cp-2, cp-3 (machine and config)",
      "kubernetes: the Node objects of cp-2, cp-3 deleted, then the cluster's health checked (the engine run cannot check it while Kubernetes lists them)",
    ]);
  });

  it("names each node's machine change from the preview, and the nodes a staged change reboots after it", () => {
    const steps = planDisruption(
      input({
        events: [
          step("replace", VM, "staging-w-2-vm", ["vmId"]),
          step("update", VM, "staging-cp-1-vm", ["cpu"]),
          step("update", VM, "staging-w-1-vm", ["memory"]),
          step("update", APPLY, "staging-cp-1-config"),
          step("update", APPLY, "staging-w-3-config"),
          // Same-named nodes must not be confused: cp-1 is not cp-10, and the install push ignores changes.
          step("update", APPLY, "staging-cp-2-install"),
          step("same", VM, "staging-cp-3-vm"),
        ],
      }),
    )!;
    assert.deepEqual(steps, [
      "the engine run: replaces the machine of w-2 (vmId): the old one deleted first, the new one installed and configured (its workloads restart elsewhere); updates the machine of cp-1 (cpu), w-1 (memory) in place, without a reboot (docs/platforms.md: what takes effect when); pushes a changed config to cp-1, w-3: applied at once where Talos can, staged where it needs a reboot",
      "rollout: of cp-1, w-3, the nodes whose change needs a reboot (Talos decides when the config is applied; the others take it at once) are drained and rebooted (up --no-rollout leaves them for a later rollout): 1 control plane one at a time (cp-1), then 1 worker one at a time (w-3)",
    ]);
  });

  it("prints the plan after a preview and puts it in the pull-request summary", async () => {
    const f = dayTwoFixture({ stack: stackYaml("v1.14.1", "1.36.3") });
    (f.ctx.env as Record<string, string>).PROXMOX_VE_API_TOKEN =
      "root@pam!ci=00000000-0000-0000-0000-000000000000";
    f.ctx.workspaces.runs.preview = {
      events: [step("update", APPLY, "staging-w-1-config")],
    };
    const summary = path.join(f.root, "summary.md");
    assert.equal(
      await runCli(["preview", "staging", "--summary", summary], f.ctx),
      ExitCode.ok,
      f.ctx.stderr.text,
    );
    assert.match(
      f.ctx.stdout.text,
      /up foundation\/staging would, in order \(versions as the state records them; up asks the nodes first\):\n {2}1\. Talos v1\.13\.9 → v1\.14\.1: .*\n {2}2\. the engine run: pushes a changed config to w-1.*\n {2}3\. rollout: of w-1, /,
    );
    const markdown = fs.readFileSync(summary, "utf8");
    assert.match(markdown, /\*\*Disruption: what `up` does to the running cluster, in order\*\*/);
    assert.match(
      markdown,
      /\n1\. Talos v1\.13\.9 → v1\.14\.1: an etcd snapshot, then each node drained, upgraded and rebooted: 3 control planes one at a time \(cp-1, cp-2, cp-3\), then 3 workers one at a time \(w-1, w-2, w-3\)\n/,
    );
    assert.deepEqual(f.talos.log, [], "a preview asks no node");
  });
});
