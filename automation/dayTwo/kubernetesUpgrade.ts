// `upgrade kubernetes <env> --to X.Y.Z`: preflight, an etcd snapshot, `talosctl upgrade-k8s
// --dry-run`, the real upgrade (it rolls the control-plane components and every kubelet, and is
// safe to re-run), the health check, every kubelet on the target, then the stack file bump.
import * as path from "node:path";
import type { CliContext } from "../context";
import { ExitCode, type ExitCodeValue, UserError, errorReason } from "../errors";
import { controlPlanes } from "./cluster";
import { formatDuration } from "./clock";
import { healthGate } from "./gates";
import { DEFAULT_KUBERNETES_TIMEOUTS, kubernetesTarget } from "./options";
import { type DayTwoSession, runDayTwo } from "./run";
import { finishStackFile } from "./talosUpgrade";

/** `upgrade kubernetes` as asked. */
interface KubernetesUpgradeRequest {
  readonly env: string;
  /** `1.37.1` (a leading v is dropped). */
  readonly to: string;
  readonly write: boolean;
  readonly keepSnapshots: number;
  readonly installCli: boolean;
  /** The health check of preflight and after the upgrade (default {@link DEFAULT_KUBERNETES_TIMEOUTS}). */
  readonly healthTimeoutMs?: number;
  /** `talosctl upgrade-k8s` as a whole (default {@link DEFAULT_KUBERNETES_TIMEOUTS}). */
  readonly upgradeTimeoutMs?: number;
}

/** Runs `upgrade kubernetes`. */
export async function upgradeKubernetes(
  ctx: CliContext,
  request: KubernetesUpgradeRequest,
): Promise<ExitCodeValue> {
  const to = kubernetesTarget(request.to);
  return runDayTwo(
    ctx,
    {
      command: "upgrade kubernetes",
      env: request.env,
      installCli: request.installCli,
      commandLine: `upgrade kubernetes ${request.env} --to ${to}`,
    },
    async (session) => {
      await upgradeKubernetesSteps(session, { ...request, to });
      const { cluster } = session;
      finishStackFile(session.ctx, cluster, to, request.write, "kubernetesVersion");
      session.out(
        `next: commit ${path.basename(cluster.stack.file)}, then \`npm run platform -- up ${request.env}\`: it records Kubernetes ${to} in the stack's state`,
      );
      return ExitCode.ok;
    },
  );
}

/**
 * Upgrades Kubernetes `to` a version: preflight, an etcd snapshot, `upgrade-k8s --dry-run`, the
 * upgrade, the health gate and every kubelet on the target; throws (exit 1) when a step fails.
 */
export async function upgradeKubernetesSteps(
  session: DayTwoSession,
  request: Omit<KubernetesUpgradeRequest, "write" | "installCli">,
): Promise<void> {
  const { ctx, deps, client, cluster, out } = session;
  const { to } = request;
  const healthMs = request.healthTimeoutMs ?? DEFAULT_KUBERNETES_TIMEOUTS.healthMs;
  const upgradeMs = request.upgradeTimeoutMs ?? DEFAULT_KUBERNETES_TIMEOUTS.upgradeMs;
  const rerun = `npm run platform -- upgrade kubernetes ${request.env} --to ${to}`;
  const fail = (problem: string, got: string, fix: string): never => {
    throw new UserError(
      { what: `upgrade kubernetes ${request.env}`, problem, got, fix },
      ExitCode.failed,
    );
  };

  await session.preflight(
    `preflight foundation/${request.env} for Kubernetes ${to}:`,
    { kubernetes: to, env: request.env },
    healthMs,
  );
  const started = deps.clock.now();
  const snapshot = await session.snapshot(request.keepSnapshots);

  const via = controlPlanes(cluster)[0];
  out(`talosctl upgrade-k8s --to ${to} --dry-run (on ${via.name}):`);
  let plan: string;
  try {
    plan = await client.upgradeKubernetes(via.address, to, true, upgradeMs);
  } catch (error) {
    return fail(
      "the dry run failed; nothing was changed",
      JSON.stringify(errorReason(error)),
      "Fix what it reports (e.g. removed APIs still in use) and rerun",
    );
  }
  for (const line of plan.trimEnd().split("\n")) if (line.trim() !== "") out(`    ${line}`);

  out(`talosctl upgrade-k8s --to ${to} (on ${via.name}):`);
  try {
    await client.upgradeKubernetes(via.address, to, false, upgradeMs);
  } catch (error) {
    return fail(
      "upgrade-k8s failed partway",
      JSON.stringify(errorReason(error)),
      `It is safe to re-run once the cause is fixed: ${rerun} (snapshot from before: ${path.relative(ctx.repoRoot, snapshot.file)})`,
    );
  }
  const health = await healthGate(client, cluster, healthMs);
  if (!health.ok) {
    return fail(
      "the cluster is not healthy after the upgrade",
      JSON.stringify(health.reason),
      `Fix it, then re-run: ${rerun}`,
    );
  }
  const behind: string[] = [];
  for (const node of cluster.nodes) {
    try {
      const version = await client.kubeletVersion(node.address);
      if (version !== to) behind.push(`${node.name} ${version}`);
    } catch (error) {
      behind.push(`${node.name} (${errorReason(error)})`);
    }
  }
  if (behind.length > 0) {
    return fail("kubelets are not on the target version", behind.join(", "), `Re-run: ${rerun}`);
  }
  out(
    `upgrade kubernetes ${request.env}: ${to} on every node, cluster healthy, in ${formatDuration(deps.clock.now() - started)}`,
  );
}
