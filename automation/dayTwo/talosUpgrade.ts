// `upgrade talos <env> --to vX.Y.Z`: the rolling Talos upgrade. Preflight, an etcd snapshot, then
// the control planes one at a time in stack-file order, then the workers in batches; after each
// node (or batch) the node must answer again, report the target version and the cluster must be
// healthy before anything else is touched. The stack file's talosVersion is bumped only at the end.
import * as path from "node:path";
import type { CliContext } from "../context";
import { ExitCode, type ExitCodeValue, UserError, errorReason } from "../errors";
import {
  compareMinor,
  GENERATOR_MACHINERY,
  minorOf,
  parseVersion,
} from "../../components/talos/versions";
import {
  type ClusterNode,
  type DeployedCluster,
  type StackCluster,
  readStackCluster,
} from "./cluster";
import { formatDuration } from "./clock";
import { healthGate, quorumGate, sameVersion, versionGate, waitForNode } from "./gates";
import {
  DEFAULT_DRAIN_TIMEOUT_MS,
  DEFAULT_ROLLOUT_TIMEOUTS,
  type RolloutTimeouts,
  talosTarget,
} from "./options";
import { rollBatches, workerBatchSize } from "./batches";
import { DrainFailedError } from "./talosClient";
import { type DayTwoSession, runDayTwo } from "./run";
import { retagImage } from "./talosctlOutput";
import { applyBump, describeBump, planBump } from "./versionBump";

/** `upgrade talos` as asked. */
interface TalosUpgradeRequest {
  readonly env: string;
  /** `v1.14.1` (a leading v is added when missing). */
  readonly to: string;
  /** Workers upgraded at once; at most (and by default) cluster.rollout.maxUnavailableWorkers. */
  readonly maxUnavailable?: number;
  /** Continue a roll that stopped: nodes already on the target are skipped. */
  readonly resume: boolean;
  /** Update the stack file at the end (false: print the line to commit). */
  readonly write: boolean;
  readonly keepSnapshots: number;
  readonly installCli: boolean;
  readonly timeouts?: Partial<RolloutTimeouts>;
  /** How long talosctl may drain each node before its reboot. @default DEFAULT_DRAIN_TIMEOUT_MS */
  readonly drainTimeoutMs?: number;
}

/** Where a roll stopped. */
interface Stop {
  readonly node: ClusterNode;
  readonly step:
    "interrupted" | "quorum" | "upgrade" | "drain" | "come back" | "version" | "health";
  readonly reason: string;
}

function resumeCommand(request: TalosUpgradeRequest, to: string): string {
  const extra =
    request.maxUnavailable !== undefined ? ` --max-unavailable ${request.maxUnavailable}` : "";
  return `npm run platform -- upgrade talos ${request.env} --to ${to}${extra} --resume`;
}

/** One Talos roll: where to, how many workers at once, the waits, and how it is resumed. */
export interface TalosRoll {
  readonly env: string;
  /** `v1.14.1`. */
  readonly to: string;
  /** A previous roll stopped partway: nodes already on the target are skipped. */
  readonly resume: boolean;
  readonly maxUnavailable: number;
  readonly keepSnapshots: number;
  readonly timeouts?: Partial<RolloutTimeouts>;
  readonly drainTimeoutMs?: number;
  /** The command that resumes a stopped roll, for messages. */
  readonly resumeCommand: string;
  /** What the stack file says afterwards, for the summary of a stop. */
  readonly stackFileNote: string;
  /**
   * A schematic change (extensions, kernel arguments): the image each listed node is upgraded to,
   * on the version `to` it runs already; nodes not listed are left alone, and a listed node that
   * booted its image already (`booted`, asked before the roll) is skipped.
   */
  readonly images?: ReadonlyMap<string, string>;
  readonly booted?: (node: ClusterNode, image: string) => Promise<boolean>;
}

/** Runs `upgrade talos`. */
export async function upgradeTalos(
  ctx: CliContext,
  request: TalosUpgradeRequest,
): Promise<ExitCodeValue> {
  const to = talosTarget(request.to);
  refuseUnpinnedContract(readStackCluster(ctx.repoRoot, request.env), to);
  const maxUnavailable = workerBatchSize(ctx.repoRoot, request.env, request.maxUnavailable);
  return runDayTwo(
    ctx,
    {
      command: "upgrade talos",
      env: request.env,
      installCli: request.installCli,
      commandLine: `upgrade talos ${request.env} --to ${to}${request.resume ? " --resume" : ""}`,
    },
    async (session) => {
      const { cluster } = session;
      await rollTalos(session, {
        env: request.env,
        to,
        resume: request.resume,
        maxUnavailable,
        keepSnapshots: request.keepSnapshots,
        ...(request.timeouts ? { timeouts: request.timeouts } : {}),
        ...(request.drainTimeoutMs !== undefined ? { drainTimeoutMs: request.drainTimeoutMs } : {}),
        resumeCommand: resumeCommand(request, to),
        stackFileNote: `${path.basename(cluster.stack.file)} was not changed (it still says talosVersion ${cluster.stack.talosVersion})`,
      });
      finishStackFile(session.ctx, cluster, to, request.write, "talosVersion");
      session.out(
        `next: commit ${path.basename(cluster.stack.file)}, then \`npm run platform -- up ${request.env}\`: it records the nodes' ${to} in the stack's state`,
      );
      return ExitCode.ok;
    },
  );
}

/**
 * A stack file without configContract takes talosVersion's: bumping it past what the provider's
 * generator knows (GENERATOR_MACHINERY) would leave a stack file that no longer validates after a
 * whole roll. Refused before anything is touched.
 */
function refuseUnpinnedContract(stack: StackCluster, to: string): void {
  const target = parseVersion(to);
  if (stack.configContract !== undefined || !target) return;
  if (compareMinor(minorOf(target), GENERATOR_MACHINERY) <= 0) return;
  throw new UserError(
    {
      what: `${path.basename(stack.file)} cluster.configContract`,
      problem: `is not set, so moving talosVersion to ${to} would move the config contract to ${minorOf(target)}, which the Talos provider's config generator (Talos machinery ${GENERATOR_MACHINERY}) does not know: the stack file would no longer validate`,
      got: JSON.stringify(stack.talosVersion),
      fix: `Pin cluster.configContract to the version the cluster was created with (${stack.talosVersion} if it was), commit it, then rerun; nothing was changed`,
    },
    ExitCode.refused,
  );
}

/**
 * Rolls Talos `to` a version: preflight, an etcd snapshot, then control planes one at a time, then
 * workers in batches, each node gated on coming back on the target and the cluster's health. Resolves
 * to the image each upgraded node now runs; throws (exit 1, where it stopped) when a gate fails.
 */
export async function rollTalos(
  session: DayTwoSession,
  request: TalosRoll,
): Promise<ReadonlyMap<string, string>> {
  const { ctx, deps, client, cluster, out } = session;
  const { to, maxUnavailable } = request;
  const timeouts = { ...DEFAULT_ROLLOUT_TIMEOUTS, ...request.timeouts };

  // Preflight: everything at once, before any change.
  const { observed } = await session.preflight(
    `preflight foundation/${request.env} for Talos ${to}:`,
    { talos: to, resume: request.resume, needsInstallerImages: true, env: request.env },
    timeouts.healthMs,
  );

  const versions = new Map(observed.nodes.map((n) => [n.node.name, n.talos ?? ""]));
  let already: ClusterNode[];
  let pending: ClusterNode[];
  let images: Map<string, string>;
  if (request.images) {
    const targets = request.images;
    const listed = cluster.nodes.filter((n) => targets.has(n.name));
    already = [];
    for (const node of listed) {
      if (await request.booted?.(node, targets.get(node.name)!)) already.push(node);
    }
    pending = listed.filter((n) => !already.includes(n));
    images = new Map(pending.map((n) => [n.name, targets.get(n.name)!]));
  } else {
    already = cluster.nodes.filter((n) => sameVersion(versions.get(n.name) ?? "", to));
    pending = cluster.nodes.filter((n) => !already.includes(n));
    images = new Map(pending.map((n) => [n.name, retagImage(n.installerImage!, to)!]));
  }
  const batches = rollBatches(pending, maxUnavailable);
  // What "done" means for this roll: the version, or (a schematic change) each node's image.
  const target = request.images ? "its new image" : to;
  if (already.length > 0) out(`already on ${target}: ${already.map((n) => n.name).join(", ")}`);

  const started = deps.clock.now();
  let snapshotFile: string | undefined;
  const done: ClusterNode[] = [];
  let stop: Stop | undefined;
  const touched = new Set<string>();
  /** The nodes of the batch under way and how far each got: what a forced stop leaves unverified. */
  const inFlight = new Map<ClusterNode, string>();
  const notTouched = () =>
    pending
      .filter((n) => !touched.has(n.name))
      .map((n) => n.name)
      .join(", ") || "(none)";
  const summary = () => [
    ...(already.length > 0
      ? [`  already on ${target} before this run: ${already.map((n) => n.name).join(", ")}`]
      : []),
    ...(snapshotFile
      ? [`  etcd snapshot from before the roll: ${path.relative(ctx.repoRoot, snapshotFile)}`]
      : []),
    `  ${request.stackFileNote}`,
  ];
  /** Said when the operator stops the run at once (a second interrupt) while a batch is under way. */
  const forcedStopReport = () => {
    const nodes = [...inFlight.keys()];
    const verified = done.filter((n) => !inFlight.has(n));
    return [
      `upgrade talos ${request.env}: stopped at once while ${nodes.map((n) => n.name).join(", ")} ${nodes.length === 1 ? "was" : "were"} being upgraded to ${to}`,
      `  upgraded:    ${verified.map((n) => n.name).join(", ") || "(none)"}`,
      ...nodes.map((n) => `  unverified:  ${n.name} (${n.address}): ${inFlight.get(n)}`),
      `  not touched: ${notTouched()}`,
      ...summary(),
      `  Check ${nodes.length === 1 ? "it" : "them"} first (${nodes.map((n) => `talosctl -n ${n.address} version`).join("; ")}; talosctl health), then resume: ${request.resumeCommand}`,
    ].join("\n");
  };

  if (pending.length > 0) {
    const cps = pending.filter((n) => n.role === "controlplane").length;
    const workerCount = pending.length - cps;
    out(
      `upgrade talos ${request.env} to ${to}: ${cps} control plane${cps === 1 ? "" : "s"} one at a time` +
        (workerCount > 0
          ? `, then ${workerCount} worker${workerCount === 1 ? "" : "s"} (${maxUnavailable} at a time)`
          : ""),
    );
    snapshotFile = (await session.snapshot(request.keepSnapshots)).file;

    let index = 0;
    batches: for (const batch of batches) {
      const label = (node: ClusterNode) =>
        `[${pending.indexOf(node) + 1}/${pending.length}] ${node.name}`;
      index += batch.length;
      // An interrupt (Ctrl-C, SIGTERM from a CI runner or kill) lets the batch under way finish and
      // be verified, then stops before the next one.
      const stopReason = session.stopReason();
      if (stopReason) {
        stop = {
          node: batch[0],
          step: "interrupted",
          reason: `${stopReason}; every node before it was upgraded and verified`,
        };
        break;
      }
      if (batch[0].role === "controlplane") {
        const gate = await quorumGate(client, cluster, batch[0]);
        if (!gate.ok) {
          stop = { node: batch[0], step: "quorum", reason: gate.reason };
          break;
        }
        out(`${label(batch[0])}: ${gate.detail}`);
      }
      for (const node of batch) {
        out(`${label(node)} (${node.address}): upgrading with ${images.get(node.name)}`);
        touched.add(node.name);
        inFlight.set(
          node,
          "mid-upgrade (talosctl upgrade was running); version and health not checked",
        );
      }
      // Until the batch is verified, a forced stop says how far each of its nodes got.
      const endStep = ctx.interrupts?.begin(
        `${batch.map((n) => n.name).join(", ")} ${batch.length === 1 ? "is" : "are"} being upgraded to ${to} and will be checked (version, health) first`,
        forcedStopReport,
      );
      const endBatch = () => {
        endStep?.();
        inFlight.clear();
      };
      const nodeStart = deps.clock.now();
      const results = await Promise.allSettled(
        batch.map((node) =>
          client.upgrade(
            node.address,
            images.get(node.name)!,
            timeouts.upgradeMs,
            request.drainTimeoutMs ?? DEFAULT_DRAIN_TIMEOUT_MS,
          ),
        ),
      );
      const stops: Stop[] = [];
      for (const [i, node] of batch.entries()) {
        const result = results[i];
        if (result.status === "rejected") {
          const drain = result.reason instanceof DrainFailedError;
          stops.push({
            node,
            step: drain ? "drain" : "upgrade",
            reason: drain ? (result.reason as DrainFailedError).reason : errorReason(result.reason),
          });
          continue;
        }
        inFlight.set(node, "upgrade command done; waiting for it to answer, version not checked");
        const back = await waitForNode(client, deps.clock, node, {
          timeoutMs: timeouts.nodeMs,
          pollMs: timeouts.pollMs,
        });
        if (!back.ok) {
          stops.push({ node, step: "come back", reason: back.reason });
          continue;
        }
        const version = versionGate(back.version, to);
        if (!version.ok) {
          stops.push({ node, step: "version", reason: version.reason });
          continue;
        }
        done.push(node);
        inFlight.set(node, `back on ${back.version}; the cluster's health was not checked`);
        out(
          `${label(node)}: back on ${back.version} after ${formatDuration(deps.clock.now() - nodeStart)}`,
        );
      }
      if (stops.length > 0) {
        endBatch();
        stop = stops[0];
        for (const extra of stops.slice(1))
          out(`  also failed: ${extra.node.name} (${extra.step}): ${extra.reason}`);
        break batches;
      }
      const health = await healthGate(client, cluster, timeouts.healthMs, batch[0]);
      endBatch();
      if (!health.ok) {
        stop = { node: batch[batch.length - 1], step: "health", reason: health.reason };
        break;
      }
      const batchLabel =
        batch.length === 1
          ? label(batch[0])
          : `[${index - batch.length + 1}-${index}/${pending.length}] ${batch.map((n) => n.name).join(", ")}`;
      out(`${batchLabel}: ${health.detail}`);
    }
  } else {
    out(`every node already runs ${target}; nothing to upgrade`);
  }

  if (stop) {
    const lines = [
      `upgrade talos ${request.env}: stopped at ${stop.node.name} (${stop.step}); no further node was touched`,
      `  upgraded:    ${done.map((n) => n.name).join(", ") || "(none)"}`,
      `  stopped at:  ${stop.node.name}: ${stop.reason}`,
      ...(stop.step === "upgrade"
        ? [
            `  unverified:  ${stop.node.name} may still be upgrading on its own (talosctl did not finish): check \`talosctl -n ${stop.node.address} version\` before resuming`,
          ]
        : []),
      ...(stop.step === "drain"
        ? [
            `  installed:   ${stop.node.name} has Talos ${to} installed but still runs the old one: its next reboot boots ${to}`,
            `  cordoned:    ${stop.node.name} (left unschedulable; kubectl uncordon ${stop.node.name}, kubeconfig: npm run platform -- kubeconfig ${request.env})`,
          ]
        : []),
      `  not touched: ${notTouched()}`,
      ...summary(),
    ];
    out(lines.join("\n"));
    throw new UserError(
      {
        what: `upgrade talos ${request.env}`,
        problem: `stopped at ${stop.node.name} (${stop.step})`,
        got: JSON.stringify(stop.reason),
        fix: `${
          stop.step === "drain"
            ? "Fix what blocks the eviction (kubectl get pdb -A), or give it a larger --drain-timeout"
            : `Fix the cause (talosctl -n ${stop.node.address} dmesg; talosctl -n ${stop.node.address} logs machined)`
        }, then resume: ${request.resumeCommand}`,
      },
      ExitCode.failed,
    );
  }

  if (pending.length > 0) {
    out(
      `upgrade talos ${request.env}: ${done.length} node${done.length === 1 ? "" : "s"} upgraded to ${to} in ${formatDuration(deps.clock.now() - started)}`,
    );
  }
  return new Map([...images].filter(([name]) => done.some((n) => n.name === name)));
}

/** Updates (or with --no-write, shows) the stack file line after a successful roll. */
export function finishStackFile(
  ctx: CliContext,
  cluster: DeployedCluster,
  to: string,
  write: boolean,
  key: "talosVersion" | "kubernetesVersion",
): void {
  const bump = planBump(cluster.stack.file, key, to);
  const where = describeBump(bump, ctx.repoRoot);
  if (!bump.changed) {
    ctx.stdout.write(`${path.basename(bump.file)} already says ${key} ${to} (${where})\n`);
  } else if (write) {
    applyBump(bump);
    ctx.stdout.write(`updated ${where} (was ${bump.from})\n`);
  } else {
    ctx.stdout.write(`--no-write: commit this line yourself (now ${bump.from}):\n  ${where}\n`);
  }
}
