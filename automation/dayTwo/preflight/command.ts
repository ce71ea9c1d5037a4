// `preflight <env>`: the live preflight on its own, against the stack file's versions (or the ones
// given), so an operator sees every problem before planning a change. Changes nothing.
import type { CliContext } from "../../context";
import { ExitCode, type ExitCodeValue } from "../../errors";
import { PREFLIGHT_HEALTH_TIMEOUT_MS, kubernetesTarget, talosTarget } from "../options";
import { runDayTwo } from "../run";
import { liveChecks } from "./checks";
import { observeCluster } from "./observe";
import { formatPreflight } from "./report";

/** `preflight` as asked. */
interface PreflightCommand {
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
  return runDayTwo(
    ctx,
    { command: "preflight", env: request.env, installCli: request.installCli },
    async ({ client, cluster }) => {
      const target = {
        talos:
          request.talos !== undefined ? talosTarget(request.talos) : cluster.stack.talosVersion,
        kubernetes:
          request.kubernetes !== undefined
            ? kubernetesTarget(request.kubernetes)
            : cluster.stack.kubernetesVersion,
      };
      const observed = await observeCluster(client, cluster, {
        healthTimeoutMs: request.healthTimeoutMs ?? PREFLIGHT_HEALTH_TIMEOUT_MS,
      });
      const result = liveChecks(cluster, observed, {
        ...target,
        needsInstallerImages: true,
        env: request.env,
      });
      ctx.stdout.write(
        formatPreflight(
          `preflight foundation/${request.env}: Talos ${target.talos}, Kubernetes ${target.kubernetes}`,
          result,
        ),
      );
      return result.ok ? ExitCode.ok : ExitCode.refused;
    },
  );
}
