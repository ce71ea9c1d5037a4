// What `rollout` would reboot: every node whose config waits for a reboot (rebootState.ts), with
// what waits, as listed (paths and field names only, never values), and whether the config its
// reboot loads is the one the stack generated.
import type { ClusterNode, DeployedCluster } from "./cluster";
import { configDifferences } from "./configCompare";
import { type RebootState, rebootState } from "./rebootState";
import type { TalosClient } from "./talosClient";

/** A node whose config waits for a reboot. */
export interface PendingNode {
  readonly node: ClusterNode;
  readonly state: Exclude<RebootState, { kind: "none" }>;
  /** What waits (paths or field names only: configs hold keys). */
  readonly differences: readonly string[];
  /** The config its reboot loads (a secret). */
  readonly nextBoot: string;
  /** Its BootID before the reboot, when it has one: a reboot must change it. */
  readonly bootId?: string;
  /** Where that config differs from the one the stack generated (empty: it is the stack's). */
  readonly notTheStacks: readonly string[];
}

/** What waits, as listed: a staged config's paths, the boot-time fields, or why it cannot be told. */
function waiting(state: PendingNode["state"]): readonly string[] {
  switch (state.kind) {
    case "staged":
      return state.paths.map((d) =>
        d
          .replace("(only in the stack)", "(only in the staged config)")
          .replace("(only on the node)", "(only in the running config)"),
      );
    case "bootTime":
      return state.fields.map((field) => `boot-time ${field}`);
    case "unknown":
      return [`may need one: ${state.reason}`];
    default: {
      const unhandled: never = state;
      throw new Error(`unhandled reboot state ${JSON.stringify(unhandled)}`);
    }
  }
}

/** How a node's wait is named in the summary line. */
export const KIND_WORDS = {
  staged: "staged",
  bootTime: "boot-time fields",
  unknown: "unknown",
} as const;

/**
 * Nodes whose config waits for a reboot, in stack order, each compared with the config the stack
 * generated for it (the outputs' machineConfigurations). A node whose state cannot be told is
 * rolled too: a gated reboot is what makes it known, and a change left for the next unplanned
 * reboot is what rollout is there to prevent.
 */
export async function pendingNodes(
  talos: TalosClient,
  cluster: DeployedCluster,
): Promise<PendingNode[]> {
  const pending: PendingNode[] = [];
  for (const node of cluster.nodes) {
    const { state, nextBoot, bootId } = await rebootState(
      talos,
      node.address,
      cluster.bootRecords[node.name],
    );
    if (state.kind === "none") continue;
    const generated = cluster.machineConfigurations[node.name];
    const notTheStacks =
      generated === undefined
        ? ["(the outputs hold no generated config for it)"]
        : configDifferences(generated, nextBoot);
    pending.push({
      node,
      state,
      differences: waiting(state),
      nextBoot,
      ...(bootId !== undefined ? { bootId } : {}),
      notTheStacks,
    });
  }
  return pending;
}
