// `up` changing etcd's membership: control planes the stack file adds join one engine run at a time,
// each a voting member before the next; those it drops leave etcd before the run that deletes their
// machines. Through the command line, with the fake cluster and a fake engine that registers what
// the program's own rules (components/talos/convergence.ts) let a run register.
import { strict as assert } from "node:assert";
import type { OutputMap } from "@pulumi/pulumi/automation";
import { runCli } from "../../automation/cli";
import { SECRETS_TYPE } from "../../automation/dayTwo/preflight/up";
import { ExitCode } from "../../automation/errors";
import { type ConvergeRequest, converge, lastDeployment } from "../../components/talos/convergence";
import { cleanupRepos } from "../automation/helpers";
import { fakeKubectl } from "./fakeKubectl";
import {
  type DayTwoFixture,
  NODES,
  dayTwoFixture as fixture,
  foundationOutputs,
  stackYaml,
} from "./helpers";

type Node = (typeof NODES)[number];

const CP4: Node = { name: "cp-4", address: "192.0.2.14", role: "controlplane" };
const CP5: Node = { name: "cp-5", address: "192.0.2.15", role: "controlplane" };
const WORKERS = NODES.filter((n) => n.role === "worker");
const cps = (...names: string[]) =>
  [...NODES, CP4, CP5].filter((n) => n.role === "controlplane" && names.includes(n.name));

const THREE = [...cps("cp-1", "cp-2", "cp-3"), ...WORKERS];
const FIVE = [...cps("cp-1", "cp-2", "cp-3", "cp-4", "cp-5"), ...WORKERS];

/** A resource of the state, as `pulumi stack export` lists it. */
function resource(type: string, name: string) {
  return { urn: `urn:pulumi:staging::talos-platform::${type}::${name}`, type };
}

/** The state of the deployed nodes: each one's machine and config, as the program names them. */
function stateOf(nodes: readonly Node[]) {
  return [
    resource("pulumi:pulumi:Stack", "talos-platform-staging"),
    resource(`platform:talos:Cluster$${SECRETS_TYPE}`, "staging-secrets"),
    ...nodes.flatMap((n) => [
      resource("platform:nodes:ProxmoxNode", `staging-${n.name}`),
      resource("platform:nodes:ProxmoxNode$proxmoxve:index/vm:Vm", `staging-${n.name}-vm`),
      resource("talos:machine/configurationApply:ConfigurationApply", `staging-${n.name}-config`),
    ]),
  ];
}

/** What one fake engine run did. */
interface EngineRun {
  readonly added: string[];
  readonly removed: string[];
  /** The etcd voters when the run began. */
  readonly voters: string[];
}

/**
 * A deployed cluster of `deployed` whose stack file asks for `wanted`, and an engine that registers
 * what the program's rules let it: the new nodes boot (a control plane joins etcd as a learner),
 * the dropped ones are deleted.
 */
function membershipFixture(
  deployed: readonly Node[],
  wanted: readonly Node[],
  options: { talosctl?: boolean } = {},
) {
  const f = fixture({
    nodes: deployed,
    stack: stackYaml("v1.13.9", "1.36.3", wanted),
    ...options,
  });
  (f.ctx.env as Record<string, string>).PROXMOX_VE_API_TOKEN =
    "root@pam!ci=00000000-0000-0000-0000-000000000000";
  // kubectl drains the nodes the stack file drops and deletes their Node objects afterwards.
  const kubectl = fakeKubectl(f.talos.log);
  Object.assign(f.ctx.dayTwo!, { kubectl: kubectl.run });
  let current = [...deployed];
  f.ctx.workspaces.state = stateOf(current);
  const runs: EngineRun[] = [];
  f.ctx.workspaces.during = (operation, request) => {
    if (operation !== "up") return;
    const values = Object.fromEntries(
      Object.entries(f.ctx.workspaces.outputs).map(([k, o]) => [k, o.value]),
    );
    const plan = converge(
      {
        talosVersion: "v1.13.9",
        kubernetesVersion: "1.36.3",
        configContract: "v1.13.9",
        nodes: wanted,
      },
      lastDeployment(values),
      (request ?? {}) as ConvergeRequest,
      "staging",
    );
    if (plan.refusals.length > 0) throw new Error(plan.refusals.join("; "));
    const next = wanted.filter((n) => plan.registered.has(n.name));
    const added = next.filter((n) => !current.includes(n));
    const removed = current.filter((n) => !next.includes(n));
    runs.push({
      added: added.map((n) => n.name),
      removed: removed.map((n) => n.name),
      voters: f.talos.members.filter((m) => !m.learner).map((m) => m.hostname),
    });
    for (const n of removed) f.talos.remove(n.name);
    for (const n of added) f.talos.join(n);
    current = next;
    f.ctx.workspaces.outputs = foundationOutputs(current);
    f.ctx.workspaces.state = stateOf(current);
  };
  return { f, runs, kubectl, deployed: () => current.map((n) => n.name) };
}

/** The URNs `up` unprotected. */
function unprotected(f: DayTwoFixture): string[] {
  return f.ctx.workspaces.calls.flatMap((c) => (c.kind === "unprotect" ? c.urns : []));
}

/** The names of the resources of those URNs. */
const names = (urns: readonly string[]) => urns.map((urn) => urn.slice(urn.lastIndexOf("::") + 2));

/** The converge requests the engine runs were given. */
function requests(f: DayTwoFixture): Record<string, unknown>[] {
  return f.ctx.workspaces
    .callsOf("operation")
    .filter((c) => c.operation === "up")
    .map((c) => (c.converge ?? {}) as Record<string, unknown>);
}

const outputsNames = (outputs: OutputMap) =>
  Object.keys((outputs.nodes.value as { controlplane: object }).controlplane);

describe("up changes etcd's membership one control plane at a time", () => {
  afterEach(cleanupRepos);

  it("adds control planes one per engine run, each a voting member before the next joins (3 → 5)", async () => {
    const { f, runs } = membershipFixture(THREE, FIVE);
    assert.equal(await runCli(["up", "staging"], f.ctx), ExitCode.ok, f.ctx.stderr.text);
    assert.deepEqual(runs, [
      { added: ["cp-4"], removed: [], voters: ["cp-1", "cp-2", "cp-3"] },
      { added: ["cp-5"], removed: [], voters: ["cp-1", "cp-2", "cp-3", "cp-4"] },
    ]);
    assert.deepEqual(outputsNames(f.ctx.workspaces.outputs), [
      "cp-1",
      "cp-2",
      "cp-3",
      "cp-4",
      "cp-5",
    ]);
    // The last run's members were waited for too, and the cluster's health after each join.
    assert.ok(f.talos.members.every((m) => !m.learner));
    assert.ok(f.clock.slept > 0, "waited while a learner caught up");
    assert.equal(f.talos.callsOf("health").length >= 3, true);
    assert.match(f.ctx.stdout.text, /cp-4 joins etcd in this engine run[\s\S]*cp-5 joins etcd/);
    assert.deepEqual(unprotected(f), []);
  });

  it("grows a single control plane to three the same way, one member per engine run (1 → 3)", async () => {
    const { f, runs } = membershipFixture([...cps("cp-1"), ...WORKERS], THREE);
    assert.equal(await runCli(["up", "staging"], f.ctx), ExitCode.ok, f.ctx.stderr.text);
    assert.deepEqual(runs, [
      { added: ["cp-2"], removed: [], voters: ["cp-1"] },
      { added: ["cp-3"], removed: [], voters: ["cp-1", "cp-2"] },
    ]);
    assert.ok(f.talos.members.every((m) => !m.learner));
  });

  it("stops before the next control plane joins when the last one never becomes a voter", async () => {
    const { f, runs } = membershipFixture(THREE, FIVE);
    const join = f.talos.join.bind(f.talos);
    f.talos.join = (node) => join(node, Number.MAX_SAFE_INTEGER);
    assert.equal(await runCli(["up", "staging"], f.ctx), ExitCode.failed);
    assert.deepEqual(
      runs.map((r) => r.added),
      [["cp-4"]],
    );
    assert.match(
      f.ctx.stderr.text,
      /etcd did not make every control plane a voting member within 15 minutes; got cp-4/,
    );
  });

  it("takes the dropped control planes out of etcd one after the other, then one run deletes their machines (5 → 3)", async () => {
    const { f, runs, deployed, kubectl } = membershipFixture(FIVE, THREE);
    let beforeEngine: string[] = [];
    const engine = f.ctx.workspaces.during!;
    f.ctx.workspaces.during = (operation, request) => {
      beforeEngine = [...f.talos.log];
      return engine(operation, request);
    };
    assert.equal(await runCli(["up", "staging"], f.ctx), ExitCode.ok, f.ctx.stderr.text);
    const etcd = beforeEngine.filter((l) => /^(snapshot|etcd )/.test(l));
    assert.deepEqual(etcd, [
      "snapshot via cp-1",
      "etcd forfeit-leadership cp-4",
      "etcd leave cp-4",
      "etcd forfeit-leadership cp-5",
      "etcd leave cp-5",
    ]);
    assert.deepEqual(runs, [
      { added: [], removed: ["cp-4", "cp-5"], voters: ["cp-1", "cp-2", "cp-3"] },
    ]);
    assert.deepEqual(requests(f)[0].leftEtcd, ["cp-4", "cp-5"]);
    assert.deepEqual(names(unprotected(f)).sort(), [
      "staging-cp-4",
      "staging-cp-4-config",
      "staging-cp-4-vm",
      "staging-cp-5",
      "staging-cp-5-config",
      "staging-cp-5-vm",
    ]);
    assert.deepEqual(deployed(), ["cp-1", "cp-2", "cp-3", "w-1", "w-2", "w-3"]);
    // Each drained before it leaves etcd; their Node objects deleted after the run, then health.
    const log = f.talos.log;
    for (const name of ["cp-4", "cp-5"]) {
      assert.ok(
        log.indexOf(`drain ${name}`) >= 0 &&
          log.indexOf(`drain ${name}`) < log.indexOf(`etcd leave ${name}`),
      );
      assert.ok(log.indexOf(`delete node ${name}`) > log.indexOf("etcd leave cp-5"));
    }
    assert.equal(log.at(-1), "health via cp-1");
    assert.deepEqual(kubectl.deleted, ["cp-4", "cp-5"]);
  });

  it("drains a worker the stack file drops, deletes its Node object after the run, then checks health", async () => {
    const wanted = [...cps("cp-1", "cp-2", "cp-3"), ...WORKERS.filter((n) => n.name !== "w-3")];
    const { f, runs, kubectl } = membershipFixture(THREE, wanted);
    let drainedBeforeRun = false;
    const engine = f.ctx.workspaces.during!;
    f.ctx.workspaces.during = (operation, request) => {
      drainedBeforeRun = f.talos.log.includes("drain w-3");
      return engine(operation, request);
    };
    assert.equal(await runCli(["up", "staging"], f.ctx), ExitCode.ok, f.ctx.stderr.text);
    assert.ok(drainedBeforeRun, "drained before the engine run");
    assert.deepEqual(runs, [{ added: [], removed: ["w-3"], voters: ["cp-1", "cp-2", "cp-3"] }]);
    assert.deepEqual(kubectl.deleted, ["w-3"]);
    assert.deepEqual(f.talos.callsOf("etcd"), [], "no etcd change for a worker");
    assert.match(f.ctx.stdout.text, /up foundation\/staging: w-3 removed; cluster healthy/);
  });

  it("runs the same steps through the real talosctl client, in talosctl's own output formats", async () => {
    const { f, runs } = membershipFixture(FIVE, THREE, { talosctl: true });
    assert.equal(await runCli(["up", "staging"], f.ctx), ExitCode.ok, f.ctx.stderr.text);
    assert.deepEqual(runs[0].removed, ["cp-4", "cp-5"]);
    const etcd = f.talosctlCalls
      .map((c) => c.args)
      .filter((args) => args[0] === "etcd" && args[1] !== "members")
      .map((args) => `${args.slice(0, 2).join(" ")} ${args[args.indexOf("--nodes") + 1]}`);
    assert.deepEqual(etcd, [
      "etcd snapshot 192.0.2.11",
      "etcd forfeit-leadership 192.0.2.14",
      "etcd leave 192.0.2.14",
      "etcd forfeit-leadership 192.0.2.15",
      "etcd leave 192.0.2.15",
    ]);
  });

  it("previews a removal as up runs it: the program told the node left, its protected resources left out", async () => {
    const { f } = membershipFixture(FIVE, THREE);
    assert.equal(await runCli(["preview", "staging"], f.ctx), ExitCode.ok, f.ctx.stderr.text);
    const [preview] = f.ctx.workspaces.callsOf("operation");
    assert.deepEqual(preview.converge, { leftEtcd: ["cp-4", "cp-5"] });
    assert.deepEqual(names(preview.exclude ?? []).sort(), [
      "staging-cp-4",
      "staging-cp-4-config",
      "staging-cp-4-vm",
      "staging-cp-5",
      "staging-cp-5-config",
      "staging-cp-5-vm",
    ]);
    assert.match(
      f.ctx.stderr.text,
      /note: the preview leaves out the 6 resources of cp-4, cp-5, which up deletes once they have left etcd/,
    );
    assert.match(
      f.ctx.stdout.text,
      /1\. drain: cp-4, cp-5 cordoned and drained.*\n {2}2\. etcd: cp-4, cp-5 leave one after the other/,
    );
    assert.deepEqual(
      f.talos.log.filter((l) => l.startsWith("etcd")),
      [],
      "a preview changes nothing",
    );
  });

  it("replaces a control plane: the old member leaves before the new one joins", async () => {
    const wanted = [...cps("cp-1", "cp-2", "cp-4"), ...WORKERS];
    const { f, runs } = membershipFixture(THREE, wanted);
    assert.equal(await runCli(["up", "staging"], f.ctx), ExitCode.ok, f.ctx.stderr.text);
    assert.deepEqual(runs, [{ added: ["cp-4"], removed: ["cp-3"], voters: ["cp-1", "cp-2"] }]);
    assert.deepEqual(
      f.talos.members.map((m) => [m.hostname, m.learner]),
      [
        ["cp-1", false],
        ["cp-2", false],
        ["cp-4", false],
      ],
    );
  });

  it("refuses a removal before changing anything when kubectl, which drains the node, is missing", async () => {
    const wanted = [...cps("cp-1", "cp-2", "cp-3"), ...WORKERS.filter((n) => n.name !== "w-3")];
    const { f, runs, kubectl } = membershipFixture(THREE, wanted);
    kubectl.missing = true;
    assert.equal(await runCli(["up", "staging"], f.ctx), ExitCode.missingCli);
    assert.deepEqual(runs, []);
    assert.match(f.ctx.stderr.text, /it drains a node before up removes it; nothing was changed/);
  });

  it("removes the member of a control plane that cannot leave by itself through another one", async () => {
    const wanted = [...cps("cp-1", "cp-2"), ...WORKERS];
    const { f, runs } = membershipFixture(THREE, wanted);
    f.talos.byName("cp-3").up = false;
    assert.equal(await runCli(["up", "staging"], f.ctx), ExitCode.ok, f.ctx.stderr.text);
    assert.deepEqual(f.talos.callsOf("etcd remove-member"), [
      "etcd remove-member 8a1b2c3d4e5f6003 via cp-1",
    ]);
    assert.deepEqual(runs[0].removed, ["cp-3"]);
  });

  it("refuses a removal that would leave etcd without quorum, before changing anything", async () => {
    const wanted = [...cps("cp-1", "cp-2"), ...WORKERS];
    const { f, runs } = membershipFixture(THREE, wanted);
    f.talos.byName("cp-2").etcd = { state: "Running", health: "Fail" };
    assert.equal(await runCli(["up", "staging"], f.ctx), ExitCode.refused);
    assert.match(
      f.ctx.stderr.text,
      /removing cp-3 from etcd would leave 1 healthy members of 2; quorum needs 2; got 1 healthy\. Bring the other control planes back first; nothing was changed/,
    );
    assert.deepEqual(runs, []);
    assert.deepEqual(f.talos.callsOf("etcd leave"), []);
    assert.deepEqual(unprotected(f), []);
  });

  it("leaves a single control plane only with --allow-single-control-plane (3 → 1)", async () => {
    const wanted = [...cps("cp-1"), ...WORKERS];
    const refused = membershipFixture(THREE, wanted);
    assert.equal(await runCli(["up", "staging"], refused.f.ctx), ExitCode.refused);
    assert.match(
      refused.f.ctx.stderr.text,
      /the stack file keeps a single control plane.*; got 3 → 1 \(removing cp-2, cp-3\)\. Rerun with --allow-single-control-plane/s,
    );
    assert.deepEqual(
      refused.f.talos.log.filter((line) => !/^(version|kubelet) /.test(line)),
      [],
      "only asked the nodes what they run",
    );
    assert.deepEqual(refused.runs, []);

    const allowed = membershipFixture(THREE, wanted);
    assert.equal(
      await runCli(["up", "staging", "--allow-single-control-plane"], allowed.f.ctx),
      ExitCode.ok,
      allowed.f.ctx.stderr.text,
    );
    assert.deepEqual(allowed.f.talos.callsOf("etcd leave"), ["etcd leave cp-2", "etcd leave cp-3"]);
    assert.deepEqual(allowed.deployed(), ["cp-1", "w-1", "w-2", "w-3"]);
  });
});
