// The gates a roll passes between nodes: etcd keeps quorum without the next control plane, the
// upgraded node answers again, it runs the target version (a silent A/B rollback boots the old
// image and looks healthy), and the whole cluster is healthy. Each gate returns a reason to stop
// instead of throwing, so the roll can report where it stopped.
import { errorReason } from "../errors";
import type { ClusterNode, DeployedCluster } from "./cluster";
import { controlPlanes, healthAddress, workers } from "./cluster";
import { type DayTwoClock, formatDuration } from "./clock";
import type { TalosClient } from "./talosClient";
import { normalizeTag } from "./talosctlOutput";

/** etcd's quorum for `members` voting members. */
export function quorum(members: number): number {
  return Math.floor(members / 2) + 1;
}

/** A gate's verdict: pass with what it saw, or stop with why. */
type GateResult =
  { readonly ok: true; readonly detail: string } | { readonly ok: false; readonly reason: string };

/**
 * Before a control plane goes down: the other members must still form a quorum of the whole
 * membership (Talos would refuse too, but only once the node is being touched).
 */
export async function quorumGate(
  client: TalosClient,
  cluster: DeployedCluster,
  node: ClusterNode,
): Promise<GateResult> {
  const others = controlPlanes(cluster).filter((cp) => cp.name !== node.name);
  if (others.length === 0) {
    return { ok: true, detail: "single control plane: the API is down while it reboots" };
  }
  let voters: number | undefined;
  let lastError = "";
  for (const cp of others) {
    try {
      voters = (await client.etcdMembers(cp.address)).filter((m) => !m.learner).length;
      break;
    } catch (error) {
      lastError = errorReason(error);
    }
  }
  if (voters === undefined) {
    return { ok: false, reason: `no other control plane lists the etcd members (${lastError})` };
  }
  let healthy = 0;
  const states: string[] = [];
  for (const cp of others) {
    try {
      const status = await client.service(cp.address, "etcd");
      const ok = status.state === "Running" && status.health === "OK";
      if (ok) healthy++;
      states.push(`${cp.name} ${status.state}/${status.health || "?"}`);
    } catch (error) {
      states.push(`${cp.name} unreachable`);
      lastError = errorReason(error);
    }
  }
  const need = quorum(Math.max(voters, controlPlanes(cluster).length));
  if (healthy < need) {
    return {
      ok: false,
      reason: `without ${node.name}, ${healthy} healthy etcd members remain and quorum needs ${need} (${states.join(", ")})`,
    };
  }
  return { ok: true, detail: `etcd keeps quorum without it (${healthy} healthy, ${need} needed)` };
}

/** How long to wait for a node and how often to ask. */
interface WaitOptions {
  readonly timeoutMs: number;
  readonly pollMs: number;
}

/** Waits until the node answers; resolves to the Talos version it reports. */
export async function waitForNode(
  client: TalosClient,
  clock: DayTwoClock,
  node: ClusterNode,
  options: WaitOptions,
): Promise<{ ok: true; version: string } | { ok: false; reason: string }> {
  const start = clock.now();
  let lastError = "";
  for (;;) {
    try {
      return { ok: true, version: await client.nodeVersion(node.address) };
    } catch (error) {
      lastError = errorReason(error);
    }
    if (clock.now() - start >= options.timeoutMs) {
      return {
        ok: false,
        reason: `did not answer within ${formatDuration(options.timeoutMs)} (last: ${lastError})`,
      };
    }
    await clock.sleep(options.pollMs);
  }
}

/** True when two Talos versions are the same release (`v1.14.1` = `1.14.1`). */
export function sameVersion(a: string, b: string): boolean {
  const x = normalizeTag(a);
  return x !== undefined && x === normalizeTag(b);
}

/** The node must report the target version; anything else is a (silent) rollback. */
export function versionGate(reported: string, target: string): GateResult {
  return sameVersion(reported, target)
    ? { ok: true, detail: `reports ${target}` }
    : {
        ok: false,
        reason: `came back on ${reported}, not ${target}: Talos rolled back to its previous image (the new one failed to boot or to start)`,
      };
}

/** `talosctl health` over the whole cluster, run on a control plane other than `avoid` when possible. */
export async function healthGate(
  client: TalosClient,
  cluster: DeployedCluster,
  timeoutMs: number,
  avoid?: ClusterNode,
): Promise<GateResult> {
  const cps = controlPlanes(cluster);
  const via = cps.find((cp) => cp.name !== avoid?.name) ?? cps[0];
  try {
    await client.health({
      via: via.address,
      controlPlanes: cps.map(healthAddress),
      workers: workers(cluster).map(healthAddress),
      timeoutMs,
    });
    return { ok: true, detail: "cluster healthy" };
  } catch (error) {
    return { ok: false, reason: `the cluster health check failed: ${errorReason(error)}` };
  }
}
