// `rollout <env>`: reboots the nodes whose config waits for a reboot, so no `up` ever reboots a node
// itself (`up` runs this roll after its engine run: rolloutWithinUp): a config `up` staged (Talos 1.13's staged_if_needing_reboot), or, on Talos 1.14, which
// applies every change at once, one whose boot-time fields differ from those the node booted with
// (rebootState.ts). It is the upgrade roll's procedure with a reboot instead of an upgrade: the
// cluster must be healthy first; control planes one at a time, each only while etcd keeps quorum
// without it; then workers, at most cluster.rollout.maxUnavailableWorkers at once; after each node
// (or batch) the node must answer again, run the config it was to boot, and the cluster must be
// healthy before anything else is touched.
// Unless --no-drain, each node (every node of a batch) is cordoned and drained with kubectl before
// its reboot (Talos' reboot sequence stops pods without evicting them), and uncordoned once it is back
// on its config and its Kubernetes node reports Ready, as talosctl's own reboot and upgrade do
// (uncordonNodes: WaitForNodeReady, then Uncordon); only then the cluster health gate, since Talos'
// health check fails while any node is unschedulable ("all k8s nodes to report schedulable").
import type { OutputMap } from "@pulumi/pulumi/automation";
import { compareMinor, minorOf, parseVersion } from "../../components/talos/versions";
import type { CliContext } from "../context";
import { ExitCode, type ExitCodeValue, UserError, errorReason } from "../errors";
import type { ClusterNode } from "./cluster";
import { formatDuration } from "./clock";
import { configDifferences } from "./configCompare";
import type { DayTwoDeps } from "./deps";
import { healthGate, quorumGate, waitForNode } from "./gates";
import { type NodeDrainer, kubectlDrainer, kubernetesNodeName, withKubeconfig } from "./kubectl";
import {
  DEFAULT_DRAIN_TIMEOUT_MS,
  DEFAULT_ROLLOUT_TIMEOUTS,
  type RolloutTimeouts,
} from "./options";
import { type DayTwoSession, runDayTwo } from "./run";
import { KIND_WORDS, type PendingNode, pendingNodes } from "./rolloutPending";
import { rollBatches, workerBatchSize } from "./batches";

/** `rollout` as asked. */
interface RolloutRequest {
  readonly env: string;
  /** Workers rebooted at once; at most the stack's cluster.rollout.maxUnavailableWorkers. */
  readonly maxUnavailable?: number;
  /** List the nodes whose config waits for a reboot (and what waits) without rebooting any. */
  readonly dryRun: boolean;
  readonly installCli: boolean;
  /** Cordon and drain each node before its reboot, uncordon it after (default true). */
  readonly drain?: boolean;
  /** How long `kubectl drain` may take per node (default DEFAULT_DRAIN_TIMEOUT_MS). */
  readonly drainTimeoutMs?: number;
  readonly timeouts?: Partial<RolloutTimeouts>;
}

/** Runs `rollout`. */
export async function rollout(ctx: CliContext, request: RolloutRequest): Promise<ExitCodeValue> {
  const maxUnavailable = workerBatchSize(ctx.repoRoot, request.env, request.maxUnavailable);
  return runDayTwo(
    ctx,
    {
      command: "rollout",
      env: request.env,
      installCli: request.installCli,
      // A dry run reboots nothing, so CI may run it; the roll itself is an operator's.
      readOnly: request.dryRun,
      commandLine: `rollout ${request.env}${request.drain === false ? " --no-drain" : ""}`,
    },
    (session) => roll(session, request, maxUnavailable),
  );
}

async function roll(
  session: DayTwoSession,
  request: RolloutRequest,
  maxUnavailable: number,
): Promise<ExitCodeValue> {
  const { ctx, deps, client, cluster, out } = session;
  const pending = await pendingNodes(client, cluster);
  if (pending.length === 0) {
    out(
      `rollout ${request.env}: no node has a staged change or a boot-time change since it booted; nothing to reboot`,
    );
    return ExitCode.ok;
  }
  out(
    `rollout ${request.env}: waiting for a reboot: ${pending.map((p) => `${p.node.name} (${KIND_WORDS[p.state.kind]})`).join(", ")}`,
  );
  for (const { node, differences } of pending) {
    out(
      `  ${node.name}: ${differences.slice(0, 5).join("; ")}${differences.length > 5 ? "; …" : ""}`,
    );
  }
  const foreign = pending.filter((p) => p.notTheStacks.length > 0);
  for (const { node, state, notTheStacks } of foreign) {
    out(
      `  ${node.name}: its ${state.kind === "staged" ? "staged" : "running"} config is not the stack's (${notTheStacks.slice(0, 3).join("; ")}${notTheStacks.length > 3 ? "; …" : ""})`,
    );
  }
  if (request.dryRun) {
    out("--dry-run: no node was rebooted");
    return ExitCode.ok;
  }
  if (foreign.length > 0) {
    throw new UserError(
      {
        what: `rollout ${request.env}`,
        problem: `${foreign.map((p) => p.node.name).join(", ")} ${foreign.length === 1 ? "has" : "have"} a ${foreign.every((p) => p.state.kind === "staged") ? "staged config" : "config to boot"} that is not the one the stack generated, so no node was rebooted`,
        got: JSON.stringify(foreign[0].notTheStacks[0]),
        fix: `Push the stack's config with \`npm run platform -- up ${request.env}\` (it replaces what is there), then run rollout again`,
      },
      ExitCode.refused,
    );
  }
  const rollWith = (drainer: NodeDrainer | undefined) =>
    rollNodes(session, request, maxUnavailable, pending, drainer);
  if (request.drain === false) {
    out("--no-drain: nodes are rebooted without a drain (pods are stopped, not evicted)");
    return rollWith(undefined);
  }
  if (!cluster.kubeconfig) {
    throw new UserError(
      {
        what: `foundation/${request.env}`,
        problem:
          "the outputs hold no kubeconfig to drain the nodes with (the cluster was never bootstrapped?), so no node was rebooted",
        got: JSON.stringify("kubeconfig"),
        fix: `Run npm run platform -- up ${request.env} first, or pass --no-drain to reboot without draining`,
      },
      ExitCode.refused,
    );
  }
  return withKubeconfig(deps, cluster.kubeconfig, async (file) => {
    const drainer = kubectlDrainer(
      ctx,
      deps,
      file,
      "it drains each node before its reboot; no node was rebooted",
    );
    // Refused before anything is touched when kubectl is missing.
    await drainer.check();
    return rollWith(drainer);
  });
}

async function rollNodes(
  session: DayTwoSession,
  request: RolloutRequest,
  maxUnavailable: number,
  pending: readonly PendingNode[],
  drainer: NodeDrainer | undefined,
): Promise<ExitCodeValue> {
  const { deps, client, cluster } = session;
  const timeouts = { ...DEFAULT_ROLLOUT_TIMEOUTS, ...request.timeouts };
  const drainTimeoutMs = request.drainTimeoutMs ?? DEFAULT_DRAIN_TIMEOUT_MS;
  const { out } = session;
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
  const boots = new Map(pending.map((p) => [p.node, { config: p.nextBoot, bootId: p.bootId }]));
  const done: ClusterNode[] = [];
  for (const batch of rollBatches(nodes, maxUnavailable)) {
    const stop = await rebootBatch(
      session,
      batch,
      timeouts,
      drainer ? { drainer, timeoutMs: drainTimeoutMs } : undefined,
      boots,
    );
    if (stop) {
      const untouched = nodes.filter((n) => !done.includes(n) && !batch.includes(n));
      const cordoned = stop.cordoned.map(kubernetesNodeName);
      out(
        [
          `rollout ${request.env}: stopped at ${stop.node.name} (${stop.step}); no further node was touched`,
          `  rebooted:    ${(stop.step === "uncordon" || stop.step === "node ready" ? [...done, ...batch] : done).map((n) => n.name).join(", ") || "(none)"}`,
          `  stopped at:  ${stop.node.name}: ${stop.reason}`,
          `  not touched: ${untouched.map((n) => n.name).join(", ") || "(none)"}`,
          ...(cordoned.length > 0
            ? [
                `  cordoned:    ${cordoned.join(", ")} (left unschedulable; ${uncordonCommands(cordoned, request.env)})`,
              ]
            : []),
        ].join("\n"),
      );
      throw new UserError(
        {
          what: `rollout ${request.env}`,
          problem: `stopped at ${stop.node.name} (${stop.step})${cordoned.length > 0 ? `; ${cordoned.join(", ")} stay${cordoned.length === 1 ? "s" : ""} cordoned` : ""}`,
          got: JSON.stringify(stop.reason),
          fix: `${stopFix(stop)}, then run rollout again: rebooted nodes are skipped (docs/day-two.md#rollout)`,
        },
        ExitCode.failed,
      );
    }
    done.push(...batch);
  }
  out(
    `rollout ${request.env}: ${done.length} node${done.length === 1 ? "" : "s"} rebooted into their configs in ${formatDuration(deps.clock.now() - started)}`,
  );
  return ExitCode.ok;
}

/** The commands that make cordoned nodes schedulable again, with where the kubeconfig comes from. */
function uncordonCommands(names: readonly string[], env: string): string {
  return `${names.map((name) => `kubectl uncordon ${name}`).join("; ")} (kubeconfig: npm run platform -- kubeconfig ${env})`;
}

function stopFix(stop: Stop): string {
  return stop.step === "drain"
    ? "Fix what blocks the eviction (kubectl get pdb -A; a pod without a controller, which kubectl drain never deletes without --force), or give it a larger --drain-timeout"
    : stop.step === "uncordon"
      ? "Fix the cause (kubectl get node)"
      : stop.step === "node ready"
        ? `Fix the cause (kubectl describe node ${kubernetesNodeName(stop.node)}; talosctl -n ${stop.node.address} service kubelet)`
        : `Fix the cause (talosctl -n ${stop.node.address} dmesg)`;
}

interface Stop {
  readonly node: ClusterNode;
  readonly step:
    | "interrupted"
    | "quorum"
    | "drain"
    | "reboot"
    | "come back"
    | "config"
    | "node ready"
    | "uncordon"
    | "health";
  readonly reason: string;
  /** Nodes this batch cordoned that are still cordoned. */
  readonly cordoned: readonly ClusterNode[];
}

/** The drain of a roll: who drains, and how long one drain may take. */
interface Drain {
  readonly drainer: NodeDrainer;
  readonly timeoutMs: number;
}

/**
 * Cordons every node of the batch first (so pods evicted from one do not land on a batch mate),
 * then drains them all at once; resolves to the first failure.
 */
async function drainBatch(
  out: (line: string) => void,
  batch: readonly ClusterNode[],
  drain: Drain,
): Promise<{ node: ClusterNode; reason: string } | undefined> {
  for (const node of batch) {
    try {
      await drain.drainer.cordon(kubernetesNodeName(node));
    } catch (error) {
      return { node, reason: errorReason(error) };
    }
  }
  const results = await Promise.allSettled(
    batch.map((node) => {
      out(
        `${node.name}: draining (kubectl drain --ignore-daemonsets --delete-emptydir-data, up to ${formatDuration(drain.timeoutMs)})`,
      );
      return drain.drainer.drain(kubernetesNodeName(node), drain.timeoutMs);
    }),
  );
  for (const [i, node] of batch.entries()) {
    const result = results[i];
    if (result.status === "rejected") return { node, reason: errorReason(result.reason) };
  }
  return undefined;
}

/** Reboots one batch (a control plane, or up to maxUnavailable workers) through every gate. */
async function rebootBatch(
  session: DayTwoSession,
  batch: readonly ClusterNode[],
  timeouts: RolloutTimeouts,
  drain: Drain | undefined,
  /** The config each node is to boot, and its BootID before the reboot (when it has one). */
  boots: ReadonlyMap<ClusterNode, { readonly config: string; readonly bootId?: string }>,
): Promise<Stop | undefined> {
  const { deps, client, cluster, out } = session;
  const stopReason = session.stopReason();
  if (stopReason) {
    return { node: batch[0], step: "interrupted", reason: stopReason, cordoned: [] };
  }
  if (batch[0].role === "controlplane") {
    const gate = await quorumGate(client, cluster, batch[0]);
    if (!gate.ok) return { node: batch[0], step: "quorum", reason: gate.reason, cordoned: [] };
    out(`${batch[0].name}: ${gate.detail}`);
  }
  // From here on, a stop leaves the batch cordoned (a half-drained node must not take pods back
  // before someone looked at it).
  const cordoned = drain ? batch : [];
  if (drain) {
    const failed = await drainBatch(out, batch, drain);
    if (failed) return { node: failed.node, step: "drain", reason: failed.reason, cordoned };
    out(`${batch.map((n) => n.name).join(", ")}: drained`);
    const afterDrain = session.stopReason();
    if (afterDrain) {
      return { node: batch[0], step: "interrupted", reason: afterDrain, cordoned };
    }
  }
  const results = await Promise.allSettled(
    batch.map((node) => {
      out(`${node.name} (${node.address}): rebooting into its config`);
      return client.reboot(node.address, timeouts.upgradeMs);
    }),
  );
  for (const [i, node] of batch.entries()) {
    const result = results[i];
    if (result.status === "rejected") {
      return {
        node,
        step: "reboot",
        reason: errorReason(result.reason),
        cordoned,
      };
    }
    const back = await waitForNode(client, deps.clock, node, {
      timeoutMs: timeouts.nodeMs,
      pollMs: timeouts.pollMs,
    });
    if (!back.ok) return { node, step: "come back", reason: back.reason, cordoned };
    // Booted: it runs the config it was to boot, and (Talos 1.14) it is another boot, so the
    // boot-time fields were taken up.
    const boot = boots.get(node)!;
    const left = configDifferences(
      boot.config,
      (await client.machineConfigs(node.address)).running,
    );
    if (left.length > 0) {
      return {
        node,
        step: "config",
        reason: `it came back without the config it was to boot (${left.slice(0, 3).join("; ")})`,
        cordoned,
      };
    }
    if (boot.bootId !== undefined && (await client.bootId(node.address)) === boot.bootId) {
      return {
        node,
        step: "config",
        reason: `it answers with the BootID it had before the reboot (${boot.bootId}): it did not reboot`,
        cordoned,
      };
    }
  }
  // Uncordoned before the health gate: Talos' health check waits for every node to be schedulable,
  // so a cordoned node would fail it until its timeout.
  if (drain) {
    for (const [i, node] of batch.entries()) {
      const ready = await waitForKubernetesReady(deps, drain.drainer, node, timeouts);
      if (!ready.ok) {
        return { node, step: "node ready", reason: ready.reason, cordoned: batch.slice(i) };
      }
      try {
        await drain.drainer.uncordon(kubernetesNodeName(node));
      } catch (error) {
        return { node, step: "uncordon", reason: errorReason(error), cordoned: batch.slice(i) };
      }
    }
    out(`${batch.map((n) => n.name).join(", ")}: Ready in Kubernetes; uncordoned`);
  }
  const health = await healthGate(client, cluster, timeouts.healthMs, batch[0]);
  if (!health.ok) {
    return { node: batch[batch.length - 1], step: "health", reason: health.reason, cordoned: [] };
  }
  out(
    `${batch.map((n) => n.name).join(", ")}: running the config it was to boot; ${health.detail}`,
  );
  return undefined;
}

/**
 * Waits (at most timeouts.nodeMs, asking every timeouts.pollMs) until the node's Kubernetes node
 * reports Ready, as talosctl's nodedrain.WaitForNodeReady does: errors while the API server comes
 * back count as not yet Ready.
 */
async function waitForKubernetesReady(
  deps: DayTwoDeps,
  drainer: NodeDrainer,
  node: ClusterNode,
  timeouts: RolloutTimeouts,
): Promise<{ ok: true } | { ok: false; reason: string }> {
  const clock = deps.clock;
  const start = clock.now();
  let last = "its Ready condition is not True";
  for (;;) {
    try {
      if (await drainer.ready(kubernetesNodeName(node))) return { ok: true };
      last = "its Ready condition is not True";
    } catch (error) {
      last = errorReason(error);
    }
    if (clock.now() - start >= timeouts.nodeMs) {
      return {
        ok: false,
        reason: `its Kubernetes node ${kubernetesNodeName(node)} did not report Ready within ${formatDuration(timeouts.nodeMs)} (last: ${last})`,
      };
    }
    await clock.sleep(timeouts.pollMs);
  }
}

/**
 * After `up`'s engine runs: the nodes whose config waits for a reboot are rebooted through the
 * roll above, gated as `rollout` is. On Talos 1.13 nothing is asked when no apply was staged (the
 * outputs' applyModes).
 */
export async function rolloutWithinUp(
  ctx: CliContext,
  input: { readonly env: string; readonly outputs: OutputMap; readonly installCli: boolean },
): Promise<void> {
  // Talos 1.13 stages what needs a reboot (applyModes says so); 1.14 applies everything at once and
  // only the nodes can tell what waits (rebootState.ts), so they are asked.
  const talos = parseVersion(String(input.outputs.talosVersion?.value ?? ""));
  const asksNodes = talos !== undefined && compareMinor(minorOf(talos), "1.14") >= 0;
  if (stagedNodes(input.outputs).length === 0 && !asksNodes) return;
  const maxUnavailable = workerBatchSize(ctx.repoRoot, input.env);
  await runDayTwo(
    ctx,
    { command: "up", env: input.env, installCli: input.installCli, withinUp: input },
    (session) =>
      roll(
        session,
        { env: input.env, dryRun: false, installCli: input.installCli },
        maxUnavailable,
      ),
  );
}

/** The nodes whose last config apply was staged (the applyModes output), in no particular order. */
export function stagedNodes(outputs: OutputMap): string[] {
  const modes = outputs.applyModes?.value as Record<string, unknown> | undefined;
  return Object.entries(modes ?? {})
    .filter(([, mode]) => mode === "staged")
    .map(([name]) => name);
}
