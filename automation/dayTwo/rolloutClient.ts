// What `rollout` asks of Talos beyond the day-two client: a node's staged (persistent) machine config,
// and a reboot that waits for the node. Production runs talosctl, with the same connection flags and
// time-outs as the day-two client; tests use a fake.
import { ExitCode, UserError } from "../errors";
import { goDuration } from "./clock";
import { installHint, spawnRunner, TALOSCTL_TIMEOUTS, type CommandRunner } from "./talosctl";
import type { TalosConnection } from "./talosClient";
import { parseMachineConfig } from "./talosctlOutput";

/** The calls `rollout` makes besides those of TalosClient. */
export interface RolloutClient {
  /**
   * The config the node keeps on disk (MachineConfig `persistent`): ahead of the running one
   * (`v1alpha1`) when a change was staged for the next reboot. A secret: never print it.
   */
  stagedConfig(node: string): Promise<string>;
  /** Reboots one node and waits until it is back (talosctl reboot --wait). */
  reboot(node: string, timeoutMs: number): Promise<void>;
}

/** Creates the rollout client of one cluster. */
export type RolloutClientFactory = (connection: TalosConnection) => RolloutClient;

/** Options of the talosctl-backed rollout client. */
export interface TalosctlRolloutOptions {
  readonly connection: TalosConnection;
  readonly binary?: string;
  readonly run?: CommandRunner;
  readonly progress?: (text: string) => void;
}

/** A RolloutClient that runs talosctl. */
export class TalosctlRolloutClient implements RolloutClient {
  private readonly binary: string;
  private readonly run: CommandRunner;

  constructor(private readonly options: TalosctlRolloutOptions) {
    this.binary = options.binary ?? "talosctl";
    this.run = options.run ?? spawnRunner;
  }

  private async exec(args: string[], node: string, timeoutMs: number, stream: boolean) {
    const { connection } = this.options;
    const full = [
      ...args,
      "--talosconfig",
      connection.talosconfig,
      "--endpoints",
      connection.endpoints.join(","),
      "--nodes",
      node,
    ];
    let result;
    try {
      result = await this.run(this.binary, full, {
        timeoutMs,
        ...(stream && this.options.progress ? { onOutput: this.options.progress } : {}),
      });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") {
        throw new UserError(
          {
            what: "talosctl",
            problem: "could not be started (not found)",
            got: JSON.stringify(this.binary),
            fix: installHint(connection.clusterTalosVersion),
          },
          ExitCode.missingCli,
        );
      }
      throw error;
    }
    if (result.timedOut || result.code !== 0) {
      const last = (result.stderr || result.stdout).trim().split("\n").pop() ?? "(no output)";
      throw new Error(
        `talosctl ${args[0]} --nodes ${node} ${result.timedOut ? "timed out" : `failed (exit ${result.code})`}: ${last.slice(0, 300)}`,
      );
    }
    return result.stdout;
  }

  async stagedConfig(node: string): Promise<string> {
    return parseMachineConfig(
      await this.exec(
        ["get", "machineconfig", "persistent", "--output", "yaml"],
        node,
        TALOSCTL_TIMEOUTS.query,
        false,
      ),
    );
  }

  async reboot(node: string, timeoutMs: number): Promise<void> {
    await this.exec(
      ["reboot", "--wait", "--timeout", goDuration(timeoutMs)],
      node,
      timeoutMs + TALOSCTL_TIMEOUTS.margin,
      true,
    );
  }
}
