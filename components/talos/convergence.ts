// What one run of the program may change on a running cluster. The stack file is the desired state;
// the last `up`'s outputs record what the cluster runs. A change that disrupts nodes (a Kubernetes
// or Talos version, a new schematic, etcd membership) is made by the CLI's `platform up` through its
// sequenced, gated steps, which tell the program here what they reached (TALOS_PLATFORM_CONVERGE);
// until then the program keeps generating configs for what the cluster runs and says what waits.
// So a bare `pulumi up` never restarts every kubelet at once, never downgrades, never adds etcd
// members in parallel and never removes a control plane that is still an etcd member.
// Pure: the CLI applies the same rules to plan and to print the disruption ahead.
import type { BootRecord } from "./bootRecords";
import { compareMinor, minorOf, parseVersion } from "./versions";

/** The environment variable the CLI's `platform up` sets for the steps it completed (JSON). */
export const CONVERGE_ENV = "TALOS_PLATFORM_CONVERGE";

/** What the CLI's sequenced steps have brought the cluster to, for the engine run that follows. */
export interface ConvergeRequest {
  /** Every node runs this Kubernetes version (`talosctl upgrade-k8s` finished). */
  readonly kubernetesVersion?: string;
  /** Every node runs this Talos version (the roll finished). */
  readonly talosVersion?: string;
  /** The installer image each node runs now (after a roll, or as the CLI found it), by name. */
  readonly installers?: Readonly<Record<string, string>>;
  /** Control planes that left etcd, which this run may remove. */
  readonly leftEtcd?: readonly string[];
  /**
   * What each node booted with, by name, as the CLI read it before this run pushes (bootRecords.ts);
   * the run exports them over the last outputs' records.
   */
  readonly bootRecords?: Readonly<Record<string, BootRecord>>;
}

/** The converge request of this run; none outside the CLI's `platform up`. */
export function convergeRequest(
  env: Readonly<Record<string, string | undefined>> = process.env,
): ConvergeRequest {
  const raw = env[CONVERGE_ENV];
  if (raw === undefined || raw === "") return {};
  try {
    const parsed = JSON.parse(raw) as ConvergeRequest;
    return parsed !== null && typeof parsed === "object" ? parsed : {};
  } catch {
    throw new Error(`${CONVERGE_ENV}: not JSON; it is set by the platform CLI, unset it`);
  }
}

/** What the last `up` recorded, read from its outputs. */
export interface LastDeployment {
  /** False before the first `up` that registered the cluster. */
  readonly exists: boolean;
  readonly talosVersion?: string;
  readonly kubernetesVersion?: string;
  readonly controlPlanes: readonly string[];
  readonly workers: readonly string[];
  /** Each node's installer image as its config carried it, by name. */
  readonly installerImages: Readonly<Record<string, string>>;
}

const stringOr = (value: unknown) => (typeof value === "string" ? value : undefined);
const keysOf = (value: unknown) =>
  value !== null && typeof value === "object" ? Object.keys(value) : [];

/** The last deployment, from the values of the stack's outputs (a StackReference, `stack output`). */
export function lastDeployment(outputs: Readonly<Record<string, unknown>>): LastDeployment {
  const nodes = outputs.nodes as { controlplane?: unknown; worker?: unknown } | undefined;
  const images = outputs.installerImages;
  return {
    exists: keysOf(nodes?.controlplane).length > 0,
    ...(stringOr(outputs.talosVersion) ? { talosVersion: stringOr(outputs.talosVersion) } : {}),
    ...(stringOr(outputs.kubernetesVersion)
      ? { kubernetesVersion: stringOr(outputs.kubernetesVersion) }
      : {}),
    controlPlanes: keysOf(nodes?.controlplane),
    workers: keysOf(nodes?.worker),
    installerImages:
      images !== null && typeof images === "object"
        ? Object.fromEntries(
            Object.entries(images as Record<string, unknown>).filter(
              (entry): entry is [string, string] => typeof entry[1] === "string",
            ),
          )
        : {},
  };
}

/** A version the stack file asks for that this run does not deploy. */
export interface VersionChange {
  readonly from: string;
  readonly to: string;
}

/** What the stack file asks for beyond this run: the disruption a `platform up` sequences. */
export interface PendingChanges {
  readonly kubernetes?: VersionChange;
  readonly talos?: VersionChange;
  /** Control planes that join etcd one per run, after the one this run adds. */
  readonly addControlPlanes: readonly string[];
  /** Control planes gone from the stack file that must leave etcd first. */
  readonly removeControlPlanes: readonly string[];
}

/** A node as the rules need it. */
export interface ConvergeNode {
  readonly name: string;
  readonly role: "controlplane" | "worker";
}

/** What the stack asks for, as the rules need it. */
export interface DesiredCluster {
  readonly talosVersion: string;
  readonly kubernetesVersion: string;
  readonly configContract: string;
  readonly nodes: readonly ConvergeNode[];
}

/** What this run generates and registers. */
export interface Convergence {
  /** The Kubernetes version every config is generated for. */
  readonly kubernetesVersion: string;
  /** The Talos version the cluster runs (what `talosVersion` records). */
  readonly talosVersion: string;
  /** The config contract: never newer than the Talos the cluster runs. */
  readonly configContract: string;
  /**
   * The installer image each existing node runs (its config keeps it until the CLI's roll upgrades
   * the node), by name; a node not listed is new and installs the stack's.
   */
  readonly runningInstallers: Readonly<Record<string, string>>;
  /** The names of the nodes this run registers (control planes joining later are left out). */
  readonly registered: ReadonlySet<string>;
  /**
   * The nodes the last `up` recorded that this run deletes (gone from the stack file): until their
   * machines are gone Kubernetes still lists them, so no health check can pass during this run.
   */
  readonly removing: readonly string[];
  readonly pending: PendingChanges;
  /** One line per change the stack asks for that waits for `platform up`. */
  readonly warnings: readonly string[];
  /** One line per change this run must not make; the program stops before registering anything. */
  readonly refusals: readonly string[];
}

/** Compares two versions (`v1.13.9`, `1.36.3`); undefined when either does not parse. */
function compare(a: string, b: string): number | undefined {
  const x = parseVersion(a);
  const y = parseVersion(b);
  return x && y ? x.compare(y) : undefined;
}

/** The version this run uses: the CLI's, else the recorded one, never a downgrade, never an upgrade. */
function effectiveVersion(
  wanted: string,
  recorded: string | undefined,
  converged: string | undefined,
): { version: string; change?: VersionChange; older?: boolean } {
  const running = converged ?? recorded;
  if (running === undefined) return { version: wanted };
  const order = compare(wanted, running);
  if (order === undefined || order === 0) return { version: order === 0 ? wanted : running };
  return order > 0
    ? { version: running, change: { from: running, to: wanted } }
    : { version: running, older: true };
}

/** `v1.13` minor of a Talos version, for the contract comparison. */
function minor(version: string): string | undefined {
  const parsed = parseVersion(version);
  return parsed ? minorOf(parsed) : undefined;
}

/**
 * The rules of one run: `desired` is the stack file, `last` the last `up`'s outputs, `converge` what
 * the CLI's sequenced steps completed. `env` names the stack in the commands the lines give.
 */
export function converge(
  desired: DesiredCluster,
  last: LastDeployment,
  request: ConvergeRequest,
  env: string,
): Convergence {
  const upCommand = `npm run platform -- up ${env}`;
  const warnings: string[] = [];
  const refusals: string[] = [];

  const kubernetes = effectiveVersion(
    desired.kubernetesVersion,
    last.kubernetesVersion,
    request.kubernetesVersion,
  );
  if (kubernetes.change) {
    warnings.push(
      `cluster.kubernetesVersion: the stack file asks for ${kubernetes.change.to}; the cluster runs ${kubernetes.change.from}, which every config keeps. \`${upCommand}\` upgrades it (control planes one at a time, then the kubelets)`,
    );
  } else if (kubernetes.older) {
    warnings.push(
      `cluster.kubernetesVersion: the stack file asks for ${desired.kubernetesVersion}, older than the ${kubernetes.version} the cluster runs; nothing is downgraded. Set it to ${kubernetes.version}`,
    );
  }
  const talos = effectiveVersion(desired.talosVersion, last.talosVersion, request.talosVersion);
  if (talos.change) {
    warnings.push(
      `cluster.talosVersion: the stack file asks for ${talos.change.to}; the cluster runs ${talos.change.from}. \`${upCommand}\` upgrades it (node by node, control planes first)`,
    );
  } else if (talos.older) {
    warnings.push(
      `cluster.talosVersion: the stack file asks for ${desired.talosVersion}, older than the ${talos.version} the cluster runs; nothing is downgraded. Set it to ${talos.version}`,
    );
  }
  // A config contract newer than the Talos the nodes run would hand them configs they do not know.
  const contractMinor = minor(desired.configContract);
  const runningMinor = minor(talos.version);
  const configContract =
    contractMinor && runningMinor && compareMinor(contractMinor, runningMinor) > 0
      ? talos.version
      : desired.configContract;

  const runningInstallers = Object.fromEntries(
    desired.nodes.flatMap((node) => {
      const image = request.installers?.[node.name] ?? last.installerImages[node.name];
      return image === undefined ? [] : [[node.name, image]];
    }),
  );

  const desiredCps = desired.nodes.filter((n) => n.role === "controlplane").map((n) => n.name);
  const recorded = new Set(last.controlPlanes);
  // A new cluster forms its etcd from all its control planes; a running one takes one per run.
  const adding = last.exists ? desiredCps.filter((name) => !recorded.has(name)) : [];
  const addControlPlanes = adding.slice(1);
  if (addControlPlanes.length > 0) {
    warnings.push(
      `nodes: control planes join etcd one at a time: this run adds ${adding[0]}; ${addControlPlanes.join(", ")} ${addControlPlanes.length === 1 ? "waits" : "wait"} for the next. \`${upCommand}\` adds each once the one before is a healthy voting member`,
    );
  }
  const removing = last.controlPlanes.filter((name) => !desiredCps.includes(name));
  const left = new Set(request.leftEtcd ?? []);
  const stillMembers = removing.filter((name) => !left.has(name));
  if (stillMembers.length > 0) {
    refusals.push(
      `nodes: removing control plane ${stillMembers.join(", ")} would take ${stillMembers.length === 1 ? "an etcd member" : "etcd members"} away without leaving etcd; got no etcd leave. Run \`${upCommand}\`: it takes one control plane at a time out of etcd, then removes its machine`,
    );
  }

  const deferred = new Set(addControlPlanes);
  const wantedNames = new Set(desired.nodes.map((n) => n.name));
  const removingNodes = [...last.controlPlanes, ...last.workers].filter(
    (name) => !wantedNames.has(name),
  );
  if (removingNodes.length > 0 && refusals.length === 0) {
    warnings.push(
      `nodes: this run deletes ${removingNodes.join(", ")}, which Kubernetes lists until ${removingNodes.length === 1 ? "its machine is" : "their machines are"} gone, so the health check is skipped; \`${upCommand}\` drains ${removingNodes.length === 1 ? "it" : "them"} first, then deletes ${removingNodes.length === 1 ? "its" : "their"} Kubernetes ${removingNodes.length === 1 ? "node" : "nodes"} and checks the cluster's health after the run`,
    );
  }
  return {
    kubernetesVersion: kubernetes.version,
    talosVersion: talos.version,
    configContract,
    runningInstallers,
    registered: new Set(desired.nodes.map((n) => n.name).filter((name) => !deferred.has(name))),
    removing: removingNodes,
    pending: {
      ...(kubernetes.change ? { kubernetes: kubernetes.change } : {}),
      ...(talos.change ? { talos: talos.change } : {}),
      addControlPlanes,
      removeControlPlanes: removing,
    },
    warnings,
    refusals,
  };
}
