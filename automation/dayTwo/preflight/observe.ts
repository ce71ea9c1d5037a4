// What the live preflight asks the cluster, all of it, before any check judges: talosctl's version,
// each node's Talos and kubelet versions, the etcd members and each member's service, and Talos'
// own health check. An unhealthy cluster is an observation, never an error.
import { errorReason } from "../../errors";
import { PREFLIGHT_HEALTH_TIMEOUT_MS } from "../options";
import { type ClusterNode, type DeployedCluster, controlPlanes, healthAddress } from "../cluster";
import { type RebootState, rebootState } from "../rebootState";
import type { EtcdMember, TalosClient } from "../talosClient";

/** What one node reported. */
interface NodeObservation {
  readonly node: ClusterNode;
  readonly talos?: string;
  readonly kubernetes?: string;
  /**
   * What waits for the node's next reboot (rebootState.ts): a staged config, boot-time fields of an
   * applied one, or `unknown`; absent when nothing does or it could not be read.
   */
  readonly reboot?: Exclude<RebootState["kind"], "none">;
  /** Why the node could not be read. */
  readonly error?: string;
}

/** What preflight learnt from the cluster. */
export interface Observation {
  readonly talosctl: { readonly version?: string; readonly error?: Error };
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

/** What waits for the node's next reboot; undefined when nothing does or it cannot be read. */
async function rebootWait(
  client: TalosClient,
  cluster: DeployedCluster,
  node: ClusterNode,
): Promise<NodeObservation["reboot"]> {
  try {
    const { state } = await rebootState(client, node.address, cluster.bootRecords[node.name]);
    return state.kind === "none" ? undefined : state.kind;
  } catch {
    return undefined;
  }
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
      let kubernetes: string;
      try {
        kubernetes = await client.kubeletVersion(node.address);
      } catch (error) {
        nodes.push({ node, talos, error: `kubelet: ${errorReason(error)}` });
        continue;
      }
      const reboot = await rebootWait(client, cluster, node);
      nodes.push({ node, talos, kubernetes, ...(reboot ? { reboot } : {}) });
    } catch (error) {
      nodes.push({ node, error: errorReason(error) });
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
      membersError = errorReason(error);
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
      etcd.push({ node: cp.name, healthy: false, detail: errorReason(error) });
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
      health = { ok: false, detail: errorReason(error) };
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
