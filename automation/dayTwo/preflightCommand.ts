// `preflight <env>`: the live preflight on its own, against the stack file's versions (or the ones
// given), so an operator sees every problem before planning a change.
import type { CliContext } from "../context";
import { ExitCode, type ExitCodeValue } from "../errors";
import { loadCluster } from "./cluster";
import { dayTwoDeps } from "./deps";
import { PREFLIGHT_HEALTH_TIMEOUT_MS, formatReport, liveChecks, observeCluster } from "./preflight";
import { withTalos } from "./session";
import { talosTarget } from "./talosUpgrade";
import { kubernetesTarget } from "./kubernetesUpgrade";

/** `preflight` as asked. */
export interface PreflightCommand {
  readonly env: string;
  /** Check a Talos upgrade to this version instead of the stack file's. */
  readonly talos?: string;
  /** Check a Kubernetes upgrade to this version instead of the stack file's. */
  readonly kubernetes?: string;
  readonly installCli: boolean;
  /** How long `talosctl health` may wait (default {@link PREFLIGHT_HEALTH_TIMEOUT_MS}). */
  readonly healthTimeoutMs?: number;
}

/** Runs `preflight`: 0 when every check passed, 3 otherwise. */
export async function preflight(
  ctx: CliContext,
  request: PreflightCommand,
): Promise<ExitCodeValue> {
  const talos = request.talos !== undefined ? talosTarget(request.talos) : undefined;
  const kubernetes =
    request.kubernetes !== undefined ? kubernetesTarget(request.kubernetes) : undefined;
  const deps = dayTwoDeps(ctx);
  const cluster = await loadCluster(ctx, request.env, request.installCli);
  const target = {
    talos: talos ?? cluster.stack.talosVersion,
    kubernetes: kubernetes ?? cluster.stack.kubernetesVersion,
  };
  const result = await withTalos(deps, cluster, async (client) =>
    liveChecks(
      cluster,
      await observeCluster(client, cluster, {
        healthTimeoutMs: request.healthTimeoutMs ?? PREFLIGHT_HEALTH_TIMEOUT_MS,
      }),
      {
        ...target,
        needsInstallerImages: true,
        env: request.env,
      },
    ),
  );
  ctx.stdout.write(
    formatReport(
      `preflight foundation/${request.env}: Talos ${target.talos}, Kubernetes ${target.kubernetes}`,
      result,
    ),
  );
  return result.ok ? ExitCode.ok : ExitCode.refused;
}
