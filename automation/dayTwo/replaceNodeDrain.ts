// The drain of a planned replacement: a node that still runs has its pods moved off it before its
// etcd member leaves and its machine goes, as Kubernetes' own node maintenance does (`kubectl
// drain`: cordon, then evict every pod but DaemonSet and mirror pods through the eviction API, so
// PodDisruptionBudgets hold). Talos drains by itself only in upgrade, shutdown and a graceful reset
// (talosctl v1.13), so this is kubectl's, as rollout's. A node that does not answer is not drained:
// kubectl would wait for a kubelet that never confirms an eviction; `kubectl delete node` removes
// its pods.
import { ExitCode, UserError, errorReason } from "../errors";
import type { ClusterNode } from "./cluster";
import { formatDuration } from "./clock";
import { type NodeDrainer, kubectlDrainer, kubernetesNodeName, withKubeconfig } from "./kubectl";
import type { DayTwoSession } from "./run";

/** How the node is drained. */
export interface DrainOptions {
  /** False: `--no-drain`. */
  readonly drain: boolean;
  readonly drainTimeoutMs: number;
}

/**
 * Runs `fn` with a kubectl drainer for the cluster when `wanted`, else with none. Refused before
 * anything changes when there is no kubeconfig (exit 3) or no kubectl (exit 5).
 */
export async function withNodeDrainer<T>(
  session: DayTwoSession,
  what: string,
  wanted: boolean,
  fn: (drainer: NodeDrainer | undefined) => Promise<T>,
  options: {
    /** How to go on without a kubeconfig (default: `--no-drain`). */
    readonly fixWithoutKubeconfig?: string;
    /** What a missing kubectl means for the command. */
    readonly whenMissing?: string;
  } = {},
): Promise<T> {
  const { ctx, deps, cluster } = session;
  if (!wanted) return fn(undefined);
  if (!cluster.kubeconfig) {
    throw new UserError(
      {
        what,
        problem:
          "the outputs hold no kubeconfig to drain the node with (the cluster was never bootstrapped?); nothing was changed",
        got: JSON.stringify("kubeconfig"),
        fix:
          options.fixWithoutKubeconfig ??
          "Rerun with --no-drain to go on without moving its pods first",
      },
      ExitCode.refused,
    );
  }
  return withKubeconfig(deps, cluster.kubeconfig, async (file) => {
    const drainer = kubectlDrainer(
      ctx,
      deps,
      file,
      options.whenMissing ?? "it drains the node before it is removed; nothing was changed",
    );
    await drainer.check();
    return fn(drainer);
  });
}

/**
 * Cordons and drains the node; a node whose Kubernetes node is not Ready is left alone (its pods
 * cannot be evicted gracefully). Throws (exit 1) when the drain fails: the node stays cordoned.
 */
export async function drainNode(
  session: DayTwoSession,
  drainer: NodeDrainer,
  node: ClusterNode,
  options: { readonly what: string; readonly drainTimeoutMs: number },
): Promise<void> {
  const { out } = session;
  const name = kubernetesNodeName(node);
  let ready: boolean;
  try {
    ready = await drainer.ready(name);
  } catch (error) {
    throw new UserError(
      {
        what: options.what,
        problem:
          "could not ask Kubernetes whether the node is Ready, to drain it; nothing was changed",
        got: JSON.stringify(errorReason(error)),
        fix: "Check the API (kubectl get nodes; credentials: npm run platform -- kubeconfig <env>) and rerun, or rerun with --no-drain",
      },
      ExitCode.failed,
    );
  }
  if (!ready) {
    out(
      `  kubernetes: ${name} is not Ready, so it is not drained (its pods cannot be evicted gracefully; kubectl delete node removes them)`,
    );
    return;
  }
  out(
    `  kubernetes: draining ${name} (kubectl cordon, then kubectl drain --ignore-daemonsets --delete-emptydir-data, up to ${formatDuration(options.drainTimeoutMs)})`,
  );
  try {
    await drainer.cordon(name);
    await drainer.drain(name, options.drainTimeoutMs);
  } catch (error) {
    throw new UserError(
      {
        what: options.what,
        problem: `the drain failed; ${name} stays cordoned and nothing else was changed`,
        got: JSON.stringify(errorReason(error)),
        fix: `Fix what blocks the eviction (kubectl get pdb -A; a pod without a controller, which kubectl drain never deletes without --force), or give it a larger --drain-timeout, then rerun; to undo: kubectl uncordon ${name}`,
      },
      ExitCode.failed,
    );
  }
  out(`  kubernetes: ${name} drained (cordoned: no new pods land on it)`);
}
