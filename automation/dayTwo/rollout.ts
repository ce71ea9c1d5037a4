// `rollout <env>`: reboots the nodes whose config `up` staged (a change that needs a reboot, applied
// with staged_if_needing_reboot), so no `up` ever reboots a node itself. It is the upgrade roll's
// procedure with a reboot instead of an upgrade: the cluster must be healthy first; control planes
// one at a time, each only while etcd keeps quorum without it; then workers, at most
// cluster.rollout.maxUnavailableWorkers at once; after each node (or batch) the node must answer
// again, run the staged config, and the cluster must be healthy before anything else is touched.
import { readStackFile, resolveLayer } from "../layers";
import type { CliContext } from "../context";
import { ExitCode, type ExitCodeValue, UserError } from "../errors";
import { checkDayTwoGuard } from "../guards";
import { type ClusterNode, type DeployedCluster, loadCluster } from "./cluster";
import { formatDuration } from "./clock";
import { configDifferences } from "./configCompare";
import { type DayTwoContext, dayTwoDeps } from "./deps";
import { healthGate, quorumGate, waitForNode } from "./gates";
import { withFoundationLock } from "./lock";
import {
  type RolloutClient,
  type RolloutClientFactory,
  TalosctlRolloutClient,
} from "./rolloutClient";
import { withTalos } from "./session";
import type { TalosClient } from "./talosClient";
import { DEFAULT_ROLLOUT_TIMEOUTS, type RolloutTimeouts, upgradeBatches } from "./talosUpgrade";

/** A CliContext that may carry a fake rollout client (tests). */
export interface RolloutContext extends DayTwoContext {
  readonly rolloutTalos?: RolloutClientFactory;
}

/** `rollout` as asked. */
export interface RolloutRequest {
  readonly env: string;
  /** Workers rebooted at once; at most the stack's cluster.rollout.maxUnavailableWorkers. */
  readonly maxUnavailable?: number;
  /** List the nodes with a staged change (and where they differ) without rebooting any. */
  readonly dryRun: boolean;
  readonly installCli: boolean;
  readonly timeouts?: Partial<RolloutTimeouts>;
}

/** A node whose staged config differs from the one it runs. */
export interface PendingNode {
  readonly node: ClusterNode;
  /** Where the configs differ (paths only: configs hold keys). */
  readonly differences: readonly string[];
}

/** The stack file's cluster.rollout.maxUnavailableWorkers (default 1). */
export function maxUnavailableWorkers(repoRoot: string, env: string): number {
  const layer = resolveLayer(repoRoot, "foundation");
  const cluster = readStackFile(layer, env).config[`${layer.project}:cluster`] as
    { rollout?: { maxUnavailableWorkers?: unknown } } | undefined;
  const value = cluster?.rollout?.maxUnavailableWorkers;
  return typeof value === "number" && Number.isInteger(value) && value >= 1 ? value : 1;
}

/** Nodes whose staged config differs from the running one, in stack order. */
export async function pendingNodes(
  talos: TalosClient,
  rollout: RolloutClient,
  nodes: readonly ClusterNode[],
): Promise<PendingNode[]> {
  const pending: PendingNode[] = [];
  for (const node of nodes) {
    const differences = configDifferences(
      await rollout.stagedConfig(node.address),
      await talos.machineConfig(node.address),
    ).map((d) =>
      d
        .replace("(only in the stack)", "(only in the staged config)")
        .replace("(only on the node)", "(only in the running config)"),
    );
    if (differences.length > 0) pending.push({ node, differences });
  }
  return pending;
}

function rolloutFactory(ctx: CliContext): RolloutClientFactory {
  const given = (ctx as RolloutContext).rolloutTalos;
  if (given) return given;
  const binary = ctx.env.TALOSCTL;
  return (connection) =>
    new TalosctlRolloutClient({
      connection,
      ...(binary ? { binary } : {}),
      progress: (text) => ctx.stderr.write(text),
    });
}

/** Runs `rollout`. */
export async function rollout(ctx: CliContext, request: RolloutRequest): Promise<ExitCodeValue> {
  // A dry run reboots nothing, so CI may run it; the roll itself is an operator's.
  if (request.dryRun !== true) checkDayTwoGuard("rollout", request.env, ctx.env);
  const allowed = maxUnavailableWorkers(ctx.repoRoot, request.env);
  const maxUnavailable = request.maxUnavailable ?? allowed;
  if (maxUnavailable > allowed) {
    throw new UserError({
      what: "--max-unavailable",
      problem: `is more than the stack allows (cluster.rollout.maxUnavailableWorkers is ${allowed})`,
      got: String(maxUnavailable),
      fix: `Use at most ${allowed}, or raise cluster.rollout.maxUnavailableWorkers in Pulumi.${request.env}.yaml`,
    });
  }
  const deps = dayTwoDeps(ctx);
  const commandLine = `rollout ${request.env}${request.dryRun ? " --dry-run" : ""}`;
  return withFoundationLock(ctx, request.env, commandLine, async () => {
    const cluster = await loadCluster(ctx, request.env, request.installCli);
    return withTalos(deps, cluster, (client, connection) =>
      roll(ctx, client, rolloutFactory(ctx)(connection), cluster, request, maxUnavailable),
    );
  });
}

async function roll(
  ctx: CliContext,
  client: TalosClient,
  rolloutClient: RolloutClient,
  cluster: DeployedCluster,
  request: RolloutRequest,
  maxUnavailable: number,
): Promise<ExitCodeValue> {
  const deps = dayTwoDeps(ctx);
  const timeouts = { ...DEFAULT_ROLLOUT_TIMEOUTS, ...request.timeouts };
  const out = (line: string) => ctx.stdout.write(`${line}\n`);
  const pending = await pendingNodes(client, rolloutClient, cluster.nodes);
  if (pending.length === 0) {
    out(`rollout ${request.env}: no node has a staged change; nothing to reboot`);
    return ExitCode.ok;
  }
  out(`rollout ${request.env}: staged changes on ${pending.map((p) => p.node.name).join(", ")}`);
  for (const { node, differences } of pending) {
    out(
      `  ${node.name}: ${differences.slice(0, 5).join("; ")}${differences.length > 5 ? "; …" : ""}`,
    );
  }
  if (request.dryRun) {
    out("--dry-run: no node was rebooted");
    return ExitCode.ok;
  }

  const before = await healthGate(client, cluster, timeouts.healthMs);
  if (!before.ok) {
    throw new UserError(
      {
        what: `rollout ${request.env}`,
        problem: "the cluster is not healthy, so no node was rebooted",
        got: JSON.stringify(before.reason),
        fix: "Fix the cluster first (npm run platform -- preflight <env>), then run rollout again",
      },
      ExitCode.failed,
    );
  }

  const started = deps.clock.now();
  const nodes = pending.map((p) => p.node);
  const done: ClusterNode[] = [];
  for (const batch of upgradeBatches(nodes, maxUnavailable)) {
    const stop = await rebootBatch(ctx, client, rolloutClient, cluster, batch, timeouts);
    if (stop) {
      const untouched = nodes.filter((n) => !done.includes(n) && !batch.includes(n));
      out(
        [
          `rollout ${request.env}: stopped at ${stop.node.name} (${stop.step}); no further node was touched`,
          `  rebooted:    ${done.map((n) => n.name).join(", ") || "(none)"}`,
          `  stopped at:  ${stop.node.name}: ${stop.reason}`,
          `  not touched: ${untouched.map((n) => n.name).join(", ") || "(none)"}`,
        ].join("\n"),
      );
      throw new UserError(
        {
          what: `rollout ${request.env}`,
          problem: `stopped at ${stop.node.name} (${stop.step})`,
          got: JSON.stringify(stop.reason),
          fix: `Fix the cause (talosctl -n ${stop.node.address} dmesg), then run rollout again: nodes already rebooted have nothing staged and are skipped`,
        },
        ExitCode.failed,
      );
    }
    done.push(...batch);
  }
  out(
    `rollout ${request.env}: ${done.length} node${done.length === 1 ? "" : "s"} rebooted into their staged config in ${formatDuration(deps.clock.now() - started)}`,
  );
  return ExitCode.ok;
}

interface Stop {
  readonly node: ClusterNode;
  readonly step: "interrupted" | "quorum" | "reboot" | "come back" | "config" | "health";
  readonly reason: string;
}

/** Reboots one batch (a control plane, or up to maxUnavailable workers) through every gate. */
async function rebootBatch(
  ctx: CliContext,
  client: TalosClient,
  rolloutClient: RolloutClient,
  cluster: DeployedCluster,
  batch: readonly ClusterNode[],
  timeouts: RolloutTimeouts,
): Promise<Stop | undefined> {
  const deps = dayTwoDeps(ctx);
  const out = (line: string) => ctx.stdout.write(`${line}\n`);
  if (ctx.signal?.aborted) {
    return { node: batch[0], step: "interrupted", reason: "the run was asked to stop" };
  }
  if (batch[0].role === "controlplane") {
    const gate = await quorumGate(client, cluster, batch[0]);
    if (!gate.ok) return { node: batch[0], step: "quorum", reason: gate.reason };
    out(`${batch[0].name}: ${gate.detail}`);
  }
  const results = await Promise.allSettled(
    batch.map((node) => {
      out(`${node.name} (${node.address}): rebooting into its staged config`);
      return rolloutClient.reboot(node.address, timeouts.upgradeMs);
    }),
  );
  for (const [i, node] of batch.entries()) {
    const result = results[i];
    if (result.status === "rejected") {
      return {
        node,
        step: "reboot",
        reason: String((result.reason as Error)?.message ?? result.reason),
      };
    }
    const back = await waitForNode(client, deps.clock, node, {
      timeoutMs: timeouts.nodeMs,
      pollMs: timeouts.pollMs,
    });
    if (!back.ok) return { node, step: "come back", reason: back.reason };
    const left = configDifferences(
      await rolloutClient.stagedConfig(node.address),
      await client.machineConfig(node.address),
    );
    if (left.length > 0) {
      return {
        node,
        step: "config",
        reason: `it came back without its staged config (${left.slice(0, 3).join("; ")})`,
      };
    }
  }
  const health = await healthGate(client, cluster, timeouts.healthMs, batch[0]);
  if (!health.ok) return { node: batch[batch.length - 1], step: "health", reason: health.reason };
  out(`${batch.map((n) => n.name).join(", ")}: running the staged config; ${health.detail}`);
  return undefined;
}
