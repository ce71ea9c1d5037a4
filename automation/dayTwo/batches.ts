// The order every roll takes the nodes in: control planes one at a time in stack-file order, then
// workers in batches of at most the stack's cluster.rollout.maxUnavailableWorkers.
import { UserError } from "../errors";
import { readStackFile, resolveLayer } from "../layers";
import { type ClusterNode, controlPlanes, workers } from "./cluster";

/** The stack file's cluster.rollout.maxUnavailableWorkers (default 1). */
function maxUnavailableWorkers(repoRoot: string, env: string): number {
  const layer = resolveLayer(repoRoot, "foundation");
  const cluster = readStackFile(layer, env).config[`${layer.project}:cluster`] as
    { rollout?: { maxUnavailableWorkers?: unknown } } | undefined;
  const value = cluster?.rollout?.maxUnavailableWorkers;
  return typeof value === "number" && Number.isInteger(value) && value >= 1 ? value : 1;
}

/**
 * How many workers a roll takes down at once: `--max-unavailable` when given, else the stack's
 * cluster.rollout.maxUnavailableWorkers, never more than the stack allows.
 */
export function workerBatchSize(repoRoot: string, env: string, requested?: number): number {
  const allowed = maxUnavailableWorkers(repoRoot, env);
  const size = requested ?? allowed;
  if (size > allowed) {
    throw new UserError({
      what: "--max-unavailable",
      problem: `is more than the stack allows (cluster.rollout.maxUnavailableWorkers is ${allowed})`,
      got: String(size),
      fix: `Use at most ${allowed}, or raise cluster.rollout.maxUnavailableWorkers in Pulumi.${env}.yaml`,
    });
  }
  return size;
}

/** Control planes one per batch, then workers `maxUnavailable` per batch, in stack-file order. */
export function rollBatches(
  nodes: readonly ClusterNode[],
  maxUnavailable: number,
): ClusterNode[][] {
  const batches = controlPlanes({ nodes }).map((cp) => [cp]);
  const ws = workers({ nodes });
  for (let i = 0; i < ws.length; i += maxUnavailable) batches.push(ws.slice(i, i + maxUnavailable));
  return batches;
}
