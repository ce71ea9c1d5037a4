// Registers `rollout <env>` on the CLI's commander program; the work is in automation/dayTwo/rollout.ts,
// loaded only when the command runs.
import { type Command, Option } from "commander";
import type { CliContext } from "../context";
import type { ExitCodeValue } from "../errors";
import { DEFAULT_DRAIN_TIMEOUT_MS, parseMaxUnavailable } from "../dayTwo/options";
import { waitOption } from "./dayTwo";

/** Examples for the CLI's help. */
export const ROLLOUT_EXAMPLES = ["rollout staging --dry-run", "rollout prod"];

/** Adds `rollout`; `done` receives its exit code. */
export function registerRolloutCommand(
  program: Command,
  ctx: CliContext,
  done: (code: ExitCodeValue) => void,
): void {
  program
    .command("rollout")
    .description(
      "reboot the nodes whose config up staged: control planes one at a time, then workers, gated on quorum and health",
    )
    .argument("<env>", "environment: the stack name (a Pulumi.<env>.yaml of the foundation layer)")
    .addOption(
      new Option(
        "--max-unavailable <n>",
        "workers rebooted at once (default and maximum: cluster.rollout.maxUnavailableWorkers)",
      ).argParser(parseMaxUnavailable),
    )
    .option("--dry-run", "list the nodes with a staged change, and where, without rebooting any")
    .option(
      "--no-drain",
      "reboot without `kubectl drain` first (pods are stopped, not evicted; disruption budgets are not consulted)",
    )
    .addOption(
      waitOption(
        "--drain-timeout",
        "how long `kubectl drain` may take to evict a node's pods before the roll stops",
        DEFAULT_DRAIN_TIMEOUT_MS,
      ),
    )
    .addOption(
      new Option(
        "--install-cli",
        "install the Pulumi CLI into ~/.pulumi/versions/<sdk version> when it is missing",
      ),
    )
    .action(
      async (
        env: string,
        options: {
          maxUnavailable?: number;
          dryRun?: boolean;
          installCli?: boolean;
          drain: boolean;
          drainTimeout: number;
        },
      ) => {
        const { rollout } = await import("../dayTwo/rollout");
        done(
          await rollout(ctx, {
            env,
            dryRun: options.dryRun === true,
            installCli: options.installCli === true,
            drain: options.drain,
            drainTimeoutMs: options.drainTimeout,
            ...(options.maxUnavailable !== undefined
              ? { maxUnavailable: options.maxUnavailable }
              : {}),
          }),
        );
      },
    );
}
