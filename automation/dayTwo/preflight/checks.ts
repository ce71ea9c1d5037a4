// The live preflight: one named check per thing that must hold before a change touches a machine,
// in one ordered list (the shape of the stack-file rules), each judging what the cluster reported
// (observe.ts). Every check runs, so the report names every problem at once.
import { parseVersion } from "../../../components/talos/versions";
import { formatProblem } from "../../errors";
import { type DeployedCluster, controlPlanes } from "../cluster";
import { quorum } from "../gates";
import { imageTag } from "../talosctlOutput";
import {
  kubernetesStep,
  kubernetesSupported as supportsBoth,
  talosStep,
  talosctlCompatible,
} from "../upgradePath";
import type { Observation } from "./observe";
import { type CheckResult, type PreflightReport, fromVerdict, report } from "./report";

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

/** What every check sees: the cluster, what it reported, the target, and the versions derived. */
interface LiveInput {
  readonly cluster: DeployedCluster;
  readonly observed: Observation;
  readonly target: LiveTarget;
  /** The distinct Talos versions the nodes run, and those not yet on the target. */
  readonly talosVersions: readonly string[];
  readonly pendingTalos: readonly string[];
  /** The change, from the lowest version running to the target; undefined when none reported. */
  readonly versions?: {
    readonly from: { readonly talos: string; readonly kubernetes: string };
    readonly to: { readonly talos: string; readonly kubernetes: string };
  };
}

/** One check: its verdict, or undefined when it does not apply to this change. */
interface LiveCheck {
  readonly id: string;
  /** It asks talosctl's answers: skipped when talosctl is missing. */
  readonly needsTalosctl?: boolean;
  judge(input: LiveInput): Omit<CheckResult, "id"> | undefined;
}

/** The lowest of some versions (the one a change starts from); undefined when none parses. */
function lowestVersion(values: readonly (string | undefined)[]): string | undefined {
  const parsed = values
    .map((value) => (value === undefined ? undefined : parseVersion(value)))
    .filter((v): v is NonNullable<typeof v> => v !== undefined);
  if (parsed.length === 0) return undefined;
  return parsed.reduce((low, v) => (v.compare(low) < 0 ? v : low)).version;
}

const ok = (detail: string) => ({ status: "ok" as const, detail });
const failed = (problem: Parameters<typeof formatProblem>[0]) => ({
  status: "failed" as const,
  detail: formatProblem(problem),
});
const unread = { status: "skipped" as const, detail: "not checked: no node reported its versions" };

/** A version rule's verdict, without its id. */
function verdict(rule: Parameters<typeof fromVerdict>[1]): Omit<CheckResult, "id"> {
  const { status, detail } = fromVerdict("", rule);
  return { status, detail };
}

const talosPath: LiveCheck = {
  id: "talos-path",
  judge: ({ versions, target }) =>
    versions ? verdict(talosStep(versions.from.talos, versions.to.talos, target.env)) : unread,
};

const kubernetesPath: LiveCheck = {
  id: "kubernetes-path",
  judge: ({ versions }) =>
    versions ? verdict(kubernetesStep(versions.from.kubernetes, versions.to.kubernetes)) : unread,
};

/** The target Talos supports both Kubernetes versions (Talos goes first, so it runs both). */
const kubernetesSupported: LiveCheck = {
  id: "kubernetes-supported",
  judge: ({ versions }) =>
    versions
      ? verdict(supportsBoth(versions.to.talos, [versions.from.kubernetes, versions.to.kubernetes]))
      : unread,
};

const talosUniform: LiveCheck = {
  id: "talos-uniform",
  judge: ({ observed, target, talosVersions, pendingTalos }) => {
    if (talosVersions.length === 1) {
      return ok(`every node runs Talos v${talosVersions[0].replace(/^v/, "")}`);
    }
    if (talosVersions.length === 0) return undefined;
    const list = observed.nodes
      .filter((n) => n.talos !== undefined)
      .map((n) => `${n.node.name} ${n.talos}`)
      .join(", ");
    if (target.resume && pendingTalos.length <= 1) return ok(`resuming a roll: ${list}`);
    return failed({
      what: "Talos versions",
      problem: "the nodes run different versions (a roll stopped partway)",
      got: list,
      fix: target.resume
        ? "Only the version before and the target may be mixed; finish or undo the other roll first"
        : `Resume it: npm run platform -- upgrade talos ${target.env} --to ${target.talos ?? "<version>"} --resume`,
    });
  },
};

const talosctl: LiveCheck = {
  id: "talosctl",
  judge: ({ observed, versions }) => {
    const version = observed.talosctl.version;
    if (version === undefined) {
      return {
        status: "failed",
        detail: observed.talosctl.error?.message ?? "talosctl: not found",
      };
    }
    const against = versions ? [versions.from.talos, versions.to.talos] : [];
    const bad = against.map((v) => talosctlCompatible(version, v)).find((v) => !v.ok);
    return bad ? verdict(bad) : ok(`talosctl ${version}`);
  },
};

const nodesHealthy: LiveCheck = {
  id: "nodes-healthy",
  needsTalosctl: true,
  judge: ({ observed }) => {
    const silent = observed.nodes.filter((n) => n.error !== undefined);
    if (silent.length > 0) {
      return failed({
        what: "nodes",
        problem: `${silent.length} of ${observed.nodes.length} did not answer`,
        got: silent.map((n) => `${n.node.name} (${n.node.address}): ${n.error}`).join("; "),
        fix: "Bring them back (or replace them: npm run platform -- replace-node) before changing the cluster",
      });
    }
    if (observed.health && !observed.health.ok) {
      return failed({
        what: "cluster health",
        problem: "talosctl health did not pass",
        got: JSON.stringify(observed.health.detail),
        fix: "Fix what it names before changing the cluster",
      });
    }
    return ok(
      `${observed.nodes.length} nodes answer; ${observed.health?.detail ?? "health not run"}`,
    );
  },
};

const etcdQuorum: LiveCheck = {
  id: "etcd-quorum",
  needsTalosctl: true,
  judge: ({ cluster, observed }) => {
    if (observed.members === undefined) {
      return failed({
        what: "etcd",
        problem: "the member list could not be read",
        got: JSON.stringify(observed.membersError ?? "unknown"),
        fix: "Check the control planes (talosctl service etcd); with quorum lost, restore: npm run platform -- etcd restore",
      });
    }
    const voters = observed.members.filter((m) => !m.learner);
    const healthy = observed.etcd.filter((e) => e.healthy).length;
    const size = Math.max(voters.length, controlPlanes(cluster).length);
    const need = quorum(size);
    const tolerates = healthy - need;
    if (healthy < need || (size > 1 && tolerates < 1)) {
      return failed({
        what: "etcd quorum",
        problem:
          healthy < need
            ? `only ${healthy} of ${size} members are healthy; quorum needs ${need}`
            : `${healthy} of ${size} members are healthy; taking one down for a change would lose quorum (${need} needed)`,
        got: observed.etcd.map((e) => `${e.node} ${e.detail}`).join(", "),
        fix: "Bring the unhealthy members back first",
      });
    }
    return ok(
      size === 1
        ? "1 of 1 member healthy (a single control plane: etcd and the API are down while it reboots)"
        : `${healthy} of ${size} members healthy; quorum ${need}, tolerates ${tolerates} down`,
    );
  },
};

const etcdMembers: LiveCheck = {
  id: "etcd-members",
  needsTalosctl: true,
  judge: ({ cluster, observed }) => {
    if (observed.members === undefined) {
      return { status: "skipped", detail: "not checked: no member list" };
    }
    const cps = controlPlanes(cluster);
    const names = new Set(cps.map((cp) => cp.name));
    const memberNames = new Set(observed.members.map((m) => m.hostname));
    const extra = observed.members.filter((m) => !names.has(m.hostname));
    const missing = cps.filter((cp) => !memberNames.has(cp.name));
    const learners = observed.members.filter((m) => m.learner);
    if (extra.length + missing.length + learners.length === 0) {
      return ok(`members = control planes (${cps.map((cp) => cp.name).join(", ")})`);
    }
    const parts = [
      ...(missing.length ? [`missing ${missing.map((cp) => cp.name).join(", ")}`] : []),
      ...(extra.length
        ? [`extra ${extra.map((m) => `${m.hostname || "(unstarted)"} [${m.id}]`).join(", ")}`]
        : []),
      ...(learners.length ? [`learners ${learners.map((m) => m.hostname).join(", ")}`] : []),
    ];
    return failed({
      what: "etcd members",
      problem: "the members are not the control planes",
      got: parts.join("; "),
      fix: extra.length
        ? `Remove a stale member of a node that is gone: talosctl -n ${cps[0]?.address ?? "<control plane>"} etcd remove-member <ID> (for a deployed node: npm run platform -- replace-node)`
        : "Wait for the missing control planes to join (or learners to be promoted), then rerun",
    });
  },
};

/**
 * No config change waits for a reboot: an upgrade's reboot would activate it unannounced (Talos),
 * and upgrade-k8s applies each node's running config patched, replacing what was staged. On Talos
 * 1.14 nothing is staged, but an applied change of a boot-time field waits just the same
 * (rebootState.ts); a node whose boot was not recorded may be waiting, and is named as such.
 */
const nothingStaged: LiveCheck = {
  id: "nothing-staged",
  needsTalosctl: true,
  judge: ({ observed, target }) => {
    const waiting = observed.nodes.filter((n) => n.reboot !== undefined);
    if (waiting.length === 0) return ok("no config change waits for a reboot");
    const named = waiting.map(
      (n) =>
        `${n.node.name}${n.reboot === "staged" ? "" : n.reboot === "bootTime" ? " (boot-time fields)" : " (booted config not recorded)"}`,
    );
    return failed({
      what: "staged configs",
      problem: `a config change waits${waiting.every((n) => n.reboot === "unknown") ? ", or may wait," : ""} for a reboot on ${waiting.length} node${waiting.length === 1 ? "" : "s"}; this change would reboot into it unannounced, or replace it`,
      got: named.join(", "),
      fix: `Roll it out first: npm run platform -- rollout ${target.env}`,
    });
  },
};

const installerImages: LiveCheck = {
  id: "installer-images",
  judge: ({ cluster, target }) => {
    if (!target.needsInstallerImages) return undefined;
    const without = cluster.nodes.filter(
      (n) => n.installerImage === undefined || imageTag(n.installerImage) === undefined,
    );
    if (without.length === 0) return ok("every node has an installer image in the outputs");
    return failed({
      what: "installerImages output",
      problem: "nodes lack a tagged installer image",
      got: without.map((n) => `${n.name}: ${JSON.stringify(n.installerImage ?? null)}`).join(", "),
      fix: `Run npm run platform -- up ${target.env} with the current program (it exports installerImages)`,
    });
  },
};

/** Every live check, in the order the report lists them. */
const LIVE_CHECKS: readonly LiveCheck[] = [
  talosPath,
  kubernetesPath,
  kubernetesSupported,
  talosUniform,
  talosctl,
  nodesHealthy,
  etcdQuorum,
  etcdMembers,
  nothingStaged,
  installerImages,
];

/** The versions a change goes from and to, as the nodes reported them and the target asks. */
function derive(observed: Observation, target: LiveTarget) {
  const reported = observed.nodes.map((n) => n.talos).filter((v): v is string => v !== undefined);
  const talosVersions = [...new Set(reported.map((v) => parseVersion(v)?.version ?? v))];
  const targetTalos = target.talos === undefined ? undefined : parseVersion(target.talos);
  const pendingTalos = targetTalos
    ? talosVersions.filter((v) => parseVersion(v)?.compare(targetTalos) !== 0)
    : talosVersions;
  const fromTalos =
    lowestVersion(target.resume ? pendingTalos : talosVersions) ?? lowestVersion(talosVersions);
  const fromKubernetes = lowestVersion(observed.nodes.map((n) => n.kubernetes));
  const toTalos = target.talos ?? (fromTalos === undefined ? undefined : `v${fromTalos}`);
  const toKubernetes = target.kubernetes ?? fromKubernetes;
  const versions =
    fromTalos !== undefined && fromKubernetes !== undefined && toTalos && toKubernetes
      ? {
          from: { talos: fromTalos, kubernetes: fromKubernetes },
          to: { talos: toTalos, kubernetes: toKubernetes },
        }
      : undefined;
  return { talosVersions, pendingTalos, ...(versions ? { versions } : {}) };
}

/** What the report says besides the checks: skewed kubelets, nodes not deployed yet. */
function liveNotes({ cluster, observed }: LiveInput): string[] {
  const notes = [...cluster.notes];
  const kubelets = [
    ...new Set(observed.nodes.map((n) => n.kubernetes).filter((v) => v !== undefined)),
  ];
  if (kubelets.length > 1) {
    notes.push(`kubelets run different Kubernetes versions: ${kubelets.join(", ")}`);
  }
  if (cluster.undeployed.length > 0) {
    notes.push(
      `not deployed yet (created by the next up, on the stack file's versions): ${cluster.undeployed.map((n) => n.name).join(", ")}`,
    );
  }
  return notes;
}

/** Runs every live check over what the cluster reported. */
export function liveChecks(
  cluster: DeployedCluster,
  observed: Observation,
  target: LiveTarget,
): PreflightReport {
  const input: LiveInput = { cluster, observed, target, ...derive(observed, target) };
  const noTalosctl = observed.talosctl.version === undefined;
  const checks: CheckResult[] = [];
  for (const check of LIVE_CHECKS) {
    if (check.needsTalosctl && noTalosctl) {
      checks.push({ id: check.id, status: "skipped", detail: "not checked: talosctl is missing" });
      continue;
    }
    const result = check.judge(input);
    if (result) checks.push({ id: check.id, ...result });
  }
  return report(checks, liveNotes(input));
}
