// Preflight: every check that can fail before a change touches a machine, run together and reported
// together. Two parts: the config part (the stack file against what was deployed; no cluster
// needed, so `up` runs it first) and the live part (talosctl, the nodes, etcd), which the upgrade
// commands run before their first change.
import type { OutputMap } from "@pulumi/pulumi/automation";
import * as path from "node:path";
import { compareMinor, minorOf, parseVersion } from "../../components/talos/versions";
import { ExitCode, UserError, formatProblem } from "../errors";
import type { StackFile } from "../layers";
import type { ClusterNode, DeployedCluster } from "./cluster";
import { controlPlanes, healthAddress } from "./cluster";
import type { EtcdMember, TalosClient } from "./talosClient";
import { imageTag } from "./talosctlOutput";
import {
  type StepVerdict,
  kubernetesStep,
  kubernetesSupported,
  talosStep,
  talosctlCompatible,
} from "./upgradePath";
import { PREFLIGHT_HEALTH_TIMEOUT_MS } from "./options";

export { PREFLIGHT_HEALTH_TIMEOUT_MS };

/** The outcome of one check. */
export interface CheckResult {
  /** Stable identifier, e.g. `talos-path`. */
  readonly id: string;
  readonly status: "ok" | "failed" | "skipped";
  /** One line: what was found, or `<what>: <problem>; got <value>. <fix>` when it failed. */
  readonly detail: string;
}

/** Every check of one preflight, plus notes that do not fail it. */
export interface PreflightReport {
  readonly checks: readonly CheckResult[];
  readonly notes: readonly string[];
  readonly ok: boolean;
}

function fromVerdict(id: string, verdict: StepVerdict): CheckResult {
  return verdict.ok
    ? { id, status: "ok", detail: verdict.summary }
    : { id, status: "failed", detail: formatProblem(verdict.problem) };
}

function report(checks: CheckResult[], notes: string[] = []): PreflightReport {
  return { checks, notes, ok: checks.every((check) => check.status !== "failed") };
}

/** The version pair a change starts from or goes to. */
export interface Versions {
  readonly talos: string;
  readonly kubernetes: string;
}

/**
 * The version checks, from `current` to `target`: the Talos path, the Kubernetes path and whether
 * the target Talos supports both Kubernetes versions (Talos goes first, so it runs both).
 */
export function versionChecks(current: Versions, target: Versions, env = "<env>"): CheckResult[] {
  return [
    fromVerdict("talos-path", talosStep(current.talos, target.talos, env)),
    fromVerdict("kubernetes-path", kubernetesStep(current.kubernetes, target.kubernetes)),
    fromVerdict(
      "kubernetes-supported",
      kubernetesSupported(target.talos, [current.kubernetes, target.kubernetes]),
    ),
  ];
}

/** The cluster key of the foundation project in a stack file. */
const CLUSTER_KEY = "talos-platform:cluster";

/**
 * A move of the config contract (the Talos version whose machine-config defaults and features are
 * generated: `configContract`, which defaults to `talosVersion`) to a newer minor than the one last
 * deployed. Nodes must run at least that minor before `up` pushes configs of the new contract.
 */
export interface ContractMove {
  /** The contract last deployed (the `configContract` output; `talosVersion` before it existed). */
  readonly from: string;
  /** The contract the stack file asks for now. */
  readonly to: string;
  /** Whether the stack file sets `configContract` itself (else it follows `talosVersion`). */
  readonly pinned: boolean;
}

/** The contract a stack file asks for: `configContract`, else `talosVersion`; undefined when unset. */
export function stackContract(
  stackFile: StackFile,
): { readonly contract: string; readonly pinned: boolean } | undefined {
  const cluster = stackFile.config[CLUSTER_KEY] as
    { talosVersion?: unknown; configContract?: unknown } | undefined;
  if (cluster?.configContract !== undefined && cluster.configContract !== null) {
    return { contract: String(cluster.configContract), pinned: true };
  }
  if (cluster?.talosVersion === undefined || cluster.talosVersion === null) return undefined;
  return { contract: String(cluster.talosVersion), pinned: false };
}

/** The contract move `up` would make, or undefined when it stays on (or below) the deployed minor. */
export function contractMove(
  stackFile: StackFile,
  deployed: OutputMap | undefined,
): ContractMove | undefined {
  const wanted = stackContract(stackFile);
  const before = deployed?.configContract?.value ?? deployed?.talosVersion?.value;
  if (!wanted || typeof before !== "string") return undefined;
  const to = parseVersion(wanted.contract);
  const from = parseVersion(before);
  if (!to || !from || compareMinor(minorOf(to), minorOf(from)) <= 0) return undefined;
  return { from: before, to: wanted.contract, pinned: wanted.pinned };
}

/**
 * The config part of preflight, for `up`: the stack file's versions against those the stack last
 * deployed (its `talosVersion` and `kubernetesVersion` outputs). Needs no cluster and no talosctl.
 * With no outputs yet (a first `up`) only Kubernetes support by the stack's Talos is checked. A
 * change of `talosVersion` under a pinned `configContract` passes with a note: `up` does not upgrade
 * nodes, `upgrade talos` does. A newer config contract is checked against the nodes themselves
 * (see {@link contractMove} and upPreflight.ts).
 */
export function preflightForUp(
  stackFile: StackFile,
  deployed: OutputMap | undefined,
): PreflightReport {
  const display = path.basename(stackFile.path);
  const cluster = stackFile.config[CLUSTER_KEY] as
    { talosVersion?: unknown; kubernetesVersion?: unknown } | undefined;
  const desired = {
    talos: String(cluster?.talosVersion ?? ""),
    kubernetes: String(cluster?.kubernetesVersion ?? ""),
  };
  if (desired.talos === "" || desired.kubernetes === "") {
    // The program's own validation names the missing keys; nothing to compare here.
    return report([
      {
        id: "stack-versions",
        status: "skipped",
        detail: `${display} sets no ${CLUSTER_KEY} talosVersion/kubernetesVersion`,
      },
    ]);
  }
  const before = {
    talos: deployed?.talosVersion?.value,
    kubernetes: deployed?.kubernetesVersion?.value,
  };
  if (typeof before.talos !== "string" || typeof before.kubernetes !== "string") {
    return report([
      fromVerdict("kubernetes-supported", kubernetesSupported(desired.talos, [desired.kubernetes])),
    ]);
  }
  const current = { talos: before.talos, kubernetes: before.kubernetes };
  const env = /^Pulumi\.(.+)\.ya?ml$/.exec(display)?.[1] ?? "<env>";
  const notes: string[] = [];
  const a = parseVersion(current.talos);
  const b = parseVersion(desired.talos);
  if (a && b && a.compare(b) !== 0 && contractMove(stackFile, deployed) === undefined) {
    notes.push(
      `${display} moves talosVersion from ${current.talos} (deployed) to ${desired.talos}: \`up\` does not upgrade nodes. ` +
        `If they do not run ${desired.talos} yet (\`npm run platform -- preflight ${env}\` shows it), run \`npm run platform -- upgrade talos ${env} --to ${desired.talos}\` first`,
    );
  }
  const k = parseVersion(current.kubernetes);
  const l = parseVersion(desired.kubernetes);
  if (k && l && k.compare(l) !== 0) {
    notes.push(
      `${display} moves kubernetesVersion from ${current.kubernetes} (deployed) to ${desired.kubernetes}: ` +
        `the control plane is upgraded by \`npm run platform -- upgrade kubernetes ${env} --to ${desired.kubernetes}\`, not by \`up\``,
    );
  }
  return report(versionChecks(current, desired, env), notes);
}

/** Throws a refusal listing every failed check of a report (the form `up` prints). */
export function assertPreflight(target: string, result: PreflightReport): void {
  if (result.ok) return;
  throw preflightError(target, result);
}

/** A refused preflight: one message naming every failed check; exit code 3. */
export class PreflightError extends UserError {
  constructor(
    readonly target: string,
    readonly failed: readonly CheckResult[],
  ) {
    const noun = failed.length === 1 ? "check" : "checks";
    const lines = failed.map((check) => `  - ${check.detail}`).join("\n");
    super(
      {
        what: `preflight ${target}`,
        problem: `${failed.length} ${noun} failed; nothing was changed`,
        got: lines,
        fix: "Fix each one and run it again",
      },
      ExitCode.refused,
    );
    // A list reads better than the one-line form: the same layout as a failed operation.
    this.message = `preflight ${target}: ${failed.length} ${noun} failed; nothing was changed; got:\n${lines}\nFix each one and run it again.`;
    this.name = "PreflightError";
  }
}

/** The refusal of a report that failed. */
export function preflightError(target: string, result: PreflightReport): PreflightError {
  return new PreflightError(
    target,
    result.checks.filter((check) => check.status === "failed"),
  );
}

/** What one node reported. */
export interface NodeObservation {
  readonly node: ClusterNode;
  readonly talos?: string;
  readonly kubernetes?: string;
  /** Why the node could not be read. */
  readonly error?: string;
}

/** What preflight learnt from the cluster. */
export interface Observation {
  readonly talosctl: { readonly version?: string; readonly error?: UserError | Error };
  readonly nodes: readonly NodeObservation[];
  readonly members?: readonly EtcdMember[];
  readonly membersError?: string;
  /** etcd service state per control plane. */
  readonly etcd: readonly {
    readonly node: string;
    readonly healthy: boolean;
    readonly detail: string;
  }[];
  /** `talosctl health`; absent when not run (a node did not answer). */
  readonly health?: { readonly ok: boolean; readonly detail: string };
}

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Asks the cluster everything the live checks need; never throws for an unhealthy cluster. */
export async function observeCluster(
  client: TalosClient,
  cluster: DeployedCluster,
  options: { readonly healthTimeoutMs?: number } = {},
): Promise<Observation> {
  let talosctl: Observation["talosctl"];
  try {
    talosctl = { version: await client.clientVersion() };
  } catch (error) {
    // Without talosctl nothing else can be asked.
    return {
      talosctl: { error: error instanceof Error ? error : new Error(String(error)) },
      nodes: cluster.nodes.map((node) => ({ node, error: "not checked: talosctl is missing" })),
      etcd: [],
    };
  }
  const nodes: NodeObservation[] = [];
  for (const node of cluster.nodes) {
    try {
      const talos = await client.nodeVersion(node.address);
      try {
        nodes.push({ node, talos, kubernetes: await client.kubeletVersion(node.address) });
      } catch (error) {
        nodes.push({ node, talos, error: `kubelet: ${message(error)}` });
      }
    } catch (error) {
      nodes.push({ node, error: message(error) });
    }
  }
  const cps = controlPlanes(cluster);
  const answering = cps.filter((cp) => nodes.find((n) => n.node === cp)?.talos !== undefined);
  let members: EtcdMember[] | undefined;
  let membersError: string | undefined;
  if (answering.length === 0) membersError = "no control plane answers";
  else {
    try {
      members = await client.etcdMembers(answering[0].address);
    } catch (error) {
      membersError = message(error);
    }
  }
  const etcd: { node: string; healthy: boolean; detail: string }[] = [];
  for (const cp of cps) {
    try {
      const status = await client.service(cp.address, "etcd");
      etcd.push({
        node: cp.name,
        healthy: status.state === "Running" && status.health === "OK",
        detail: `${status.state}${status.health ? `/${status.health}` : ""}`,
      });
    } catch (error) {
      etcd.push({ node: cp.name, healthy: false, detail: message(error) });
    }
  }
  let health: Observation["health"];
  if (nodes.every((n) => n.talos !== undefined) && answering.length > 0) {
    try {
      await client.health({
        via: answering[0].address,
        controlPlanes: cps.map(healthAddress),
        workers: cluster.nodes.filter((n) => n.role === "worker").map(healthAddress),
        timeoutMs: options.healthTimeoutMs ?? PREFLIGHT_HEALTH_TIMEOUT_MS,
      });
      health = { ok: true, detail: "talosctl health passed" };
    } catch (error) {
      health = { ok: false, detail: message(error) };
    }
  }
  return {
    talosctl,
    nodes,
    ...(members ? { members } : {}),
    ...(membersError ? { membersError } : {}),
    etcd,
    ...(health ? { health } : {}),
  };
}

/** etcd's quorum for `members` voting members. */
export function quorum(members: number): number {
  return Math.floor(members / 2) + 1;
}

/** The lowest of some versions (the one a change starts from); undefined when none parses. */
export function lowestVersion(values: readonly (string | undefined)[]): string | undefined {
  const parsed = values
    .map((value) => (value === undefined ? undefined : parseVersion(value)))
    .filter((v): v is NonNullable<typeof v> => v !== undefined);
  if (parsed.length === 0) return undefined;
  return parsed.reduce((low, v) => (v.compare(low) < 0 ? v : low)).version;
}

/** What the live preflight checks against. */
export interface LiveTarget {
  /** The Talos version to end on; the nodes' own when not changing it. */
  readonly talos?: string;
  /** The Kubernetes version to end on; the kubelets' own when not changing it. */
  readonly kubernetes?: string;
  /** A previous roll stopped partway: nodes already on the target Talos are fine. */
  readonly resume?: boolean;
  /** Every node needs an installer image (a Talos upgrade). */
  readonly needsInstallerImages?: boolean;
  readonly env: string;
}

/** The checks over what the cluster reported, all of them, each with its own verdict. */
export function liveChecks(
  cluster: DeployedCluster,
  observed: Observation,
  target: LiveTarget,
): PreflightReport {
  const checks: CheckResult[] = [];
  const notes: string[] = [...cluster.notes];
  const talosVersions = observed.nodes
    .map((n) => n.talos)
    .filter((v): v is string => v !== undefined);
  const targetTalos = target.talos === undefined ? undefined : parseVersion(target.talos);
  const distinct = [...new Set(talosVersions.map((v) => parseVersion(v)?.version ?? v))];
  const pending = targetTalos
    ? distinct.filter((v) => parseVersion(v)?.compare(targetTalos) !== 0)
    : distinct;
  const fromTalos = lowestVersion(target.resume ? pending : distinct) ?? lowestVersion(distinct);
  const fromKubernetes = lowestVersion(observed.nodes.map((n) => n.kubernetes));
  const toTalos = target.talos ?? (fromTalos === undefined ? undefined : `v${fromTalos}`);
  const toKubernetes = target.kubernetes ?? fromKubernetes;
  const unread = (what: string): CheckResult[] => [
    { id: `${what}`, status: "skipped", detail: "not checked: no node reported its versions" },
  ];

  // Versions.
  if (fromTalos !== undefined && fromKubernetes !== undefined && toTalos && toKubernetes) {
    checks.push(
      ...versionChecks(
        { talos: fromTalos, kubernetes: fromKubernetes },
        { talos: toTalos, kubernetes: toKubernetes },
        target.env,
      ),
    );
  } else {
    checks.push(
      ...unread("talos-path"),
      ...unread("kubernetes-path"),
      ...unread("kubernetes-supported"),
    );
  }
  if (distinct.length > 1) {
    const allowed = target.resume && pending.length <= 1;
    const list = observed.nodes
      .filter((n) => n.talos !== undefined)
      .map((n) => `${n.node.name} ${n.talos}`)
      .join(", ");
    checks.push(
      allowed
        ? { id: "talos-uniform", status: "ok", detail: `resuming a roll: ${list}` }
        : {
            id: "talos-uniform",
            status: "failed",
            detail: formatProblem({
              what: "Talos versions",
              problem: "the nodes run different versions (a roll stopped partway)",
              got: list,
              fix: target.resume
                ? "Only the version before and the target may be mixed; finish or undo the other roll first"
                : `Resume it: npm run platform -- upgrade talos ${target.env} --to ${target.talos ?? "<version>"} --resume`,
            }),
          },
    );
  } else if (distinct.length === 1) {
    checks.push({
      id: "talos-uniform",
      status: "ok",
      detail: `every node runs Talos v${distinct[0].replace(/^v/, "")}`,
    });
  }
  const kubelets = [
    ...new Set(observed.nodes.map((n) => n.kubernetes).filter((v) => v !== undefined)),
  ];
  if (kubelets.length > 1) {
    notes.push(`kubelets run different Kubernetes versions: ${kubelets.join(", ")}`);
  }

  // talosctl.
  if (observed.talosctl.version === undefined) {
    checks.push({
      id: "talosctl",
      status: "failed",
      detail: observed.talosctl.error?.message ?? "talosctl: not found",
    });
  } else {
    const against = [fromTalos, toTalos].filter((v): v is string => v !== undefined);
    const verdicts = against.map((v) => talosctlCompatible(observed.talosctl.version!, v));
    const bad = verdicts.find((v) => !v.ok);
    checks.push(
      bad
        ? fromVerdict("talosctl", bad)
        : { id: "talosctl", status: "ok", detail: `talosctl ${observed.talosctl.version}` },
    );
  }
  if (observed.talosctl.version === undefined) {
    for (const id of ["nodes-healthy", "etcd-quorum", "etcd-members"]) {
      checks.push({ id, status: "skipped", detail: "not checked: talosctl is missing" });
    }
    return report(checks, notes);
  }

  // Nodes.
  const silent = observed.nodes.filter((n) => n.error !== undefined);
  if (silent.length > 0) {
    checks.push({
      id: "nodes-healthy",
      status: "failed",
      detail: formatProblem({
        what: "nodes",
        problem: `${silent.length} of ${observed.nodes.length} did not answer`,
        got: silent.map((n) => `${n.node.name} (${n.node.address}): ${n.error}`).join("; "),
        fix: "Bring them back (or replace them: npm run platform -- replace-node) before changing the cluster",
      }),
    });
  } else if (observed.health && !observed.health.ok) {
    checks.push({
      id: "nodes-healthy",
      status: "failed",
      detail: formatProblem({
        what: "cluster health",
        problem: "talosctl health did not pass",
        got: JSON.stringify(observed.health.detail),
        fix: "Fix what it names before changing the cluster",
      }),
    });
  } else {
    checks.push({
      id: "nodes-healthy",
      status: "ok",
      detail: `${observed.nodes.length} nodes answer; ${observed.health?.detail ?? "health not run"}`,
    });
  }

  // etcd.
  const cps = controlPlanes(cluster);
  const voters = observed.members?.filter((m) => !m.learner) ?? [];
  const healthy = observed.etcd.filter((e) => e.healthy);
  if (observed.members === undefined) {
    checks.push({
      id: "etcd-quorum",
      status: "failed",
      detail: formatProblem({
        what: "etcd",
        problem: "the member list could not be read",
        got: JSON.stringify(observed.membersError ?? "unknown"),
        fix: "Check the control planes (talosctl service etcd); with quorum lost, restore: npm run platform -- etcd restore",
      }),
    });
  } else {
    const size = Math.max(voters.length, cps.length);
    const need = quorum(size);
    const tolerates = healthy.length - need;
    const states = observed.etcd.map((e) => `${e.node} ${e.detail}`).join(", ");
    if (healthy.length < need || (size > 1 && tolerates < 1)) {
      checks.push({
        id: "etcd-quorum",
        status: "failed",
        detail: formatProblem({
          what: "etcd quorum",
          problem:
            healthy.length < need
              ? `only ${healthy.length} of ${size} members are healthy; quorum needs ${need}`
              : `${healthy.length} of ${size} members are healthy; taking one down for a change would lose quorum (${need} needed)`,
          got: states,
          fix: "Bring the unhealthy members back first",
        }),
      });
    } else {
      checks.push({
        id: "etcd-quorum",
        status: "ok",
        detail:
          size === 1
            ? "1 of 1 member healthy (a single control plane: etcd and the API are down while it reboots)"
            : `${healthy.length} of ${size} members healthy; quorum ${need}, tolerates ${tolerates} down`,
      });
    }
  }
  if (observed.members !== undefined) {
    const names = new Set(cps.map((cp) => cp.name));
    const memberNames = new Set(observed.members.map((m) => m.hostname));
    const extra = observed.members.filter((m) => !names.has(m.hostname));
    const missing = cps.filter((cp) => !memberNames.has(cp.name));
    const learners = observed.members.filter((m) => m.learner);
    if (extra.length + missing.length + learners.length > 0) {
      const parts = [
        ...(missing.length ? [`missing ${missing.map((cp) => cp.name).join(", ")}`] : []),
        ...(extra.length
          ? [`extra ${extra.map((m) => `${m.hostname || "(unstarted)"} [${m.id}]`).join(", ")}`]
          : []),
        ...(learners.length ? [`learners ${learners.map((m) => m.hostname).join(", ")}`] : []),
      ];
      checks.push({
        id: "etcd-members",
        status: "failed",
        detail: formatProblem({
          what: "etcd members",
          problem: "the members are not the control planes",
          got: parts.join("; "),
          fix: extra.length
            ? `Remove a stale member of a node that is gone: talosctl -n ${cps[0]?.address ?? "<control plane>"} etcd remove-member <ID> (for a deployed node: npm run platform -- replace-node)`
            : "Wait for the missing control planes to join (or learners to be promoted), then rerun",
        }),
      });
    } else {
      checks.push({
        id: "etcd-members",
        status: "ok",
        detail: `members = control planes (${cps.map((cp) => cp.name).join(", ")})`,
      });
    }
  } else {
    checks.push({ id: "etcd-members", status: "skipped", detail: "not checked: no member list" });
  }

  if (target.needsInstallerImages) {
    const without = cluster.nodes.filter(
      (n) => n.installerImage === undefined || imageTag(n.installerImage) === undefined,
    );
    checks.push(
      without.length === 0
        ? {
            id: "installer-images",
            status: "ok",
            detail: "every node has an installer image in the outputs",
          }
        : {
            id: "installer-images",
            status: "failed",
            detail: formatProblem({
              what: "installerImages output",
              problem: "nodes lack a tagged installer image",
              got: without
                .map((n) => `${n.name}: ${JSON.stringify(n.installerImage ?? null)}`)
                .join(", "),
              fix: `Run npm run platform -- up ${target.env} with the current program (it exports installerImages)`,
            }),
          },
    );
  }
  if (cluster.undeployed.length > 0) {
    notes.push(
      `not deployed yet (created by the next up, on the stack file's versions): ${cluster.undeployed.map((n) => n.name).join(", ")}`,
    );
  }
  return report(checks, notes);
}

const MARK = { ok: "ok  ", failed: "FAIL", skipped: "skip" } as const;

/** The report as printed: one line per check, then the notes. */
export function formatReport(title: string, result: PreflightReport): string {
  const width = Math.max(...result.checks.map((c) => c.id.length));
  const lines = [title];
  for (const check of result.checks) {
    lines.push(`  ${MARK[check.status]}  ${check.id.padEnd(width)}  ${check.detail}`);
  }
  for (const note of result.notes) lines.push(`  note: ${note}`);
  const failed = result.checks.filter((c) => c.status === "failed").length;
  lines.push(
    failed === 0
      ? "preflight passed"
      : `preflight failed: ${failed} ${failed === 1 ? "check" : "checks"} failed; nothing was changed`,
  );
  return `${lines.join("\n")}\n`;
}
