// The talosctl-backed TalosClient: one talosctl process per call, always with the cluster's own
// talosconfig (a 0600 temp file), the control planes as endpoints and exactly the node it targets,
// so the operator's ~/.talos/config and its current context never matter. Every call has a time-out
// after which talosctl is stopped. talosctl runs in a process group of its own: a Ctrl-C in the
// terminal reaches the CLI (which finishes the step under way) but never an upgrade half-way.
import { spawn } from "node:child_process";
import { signalGroup, trackChildGroup } from "../childGroups";
import { ExitCode, UserError } from "../errors";
import { formatDuration, goDuration } from "./clock";
import type {
  EtcdMember,
  HealthCheck,
  ServiceStatus,
  TalosClient,
  TalosConnection,
} from "./talosClient";
import {
  parseClientVersion,
  parseEtcdMembers,
  parseKubeletVersion,
  parseHealthFailure,
  parseMachineConfig,
  parseServerVersion,
  parseServiceStatus,
} from "./talosctlOutput";

/** What a finished process left. */
export interface CommandResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
  /** The run was stopped because it took longer than its time-out. */
  readonly timedOut: boolean;
  /** The signal that ended it, when one did. */
  readonly signal?: NodeJS.Signals;
}

/** How one process runs. */
export interface RunOptions {
  readonly timeoutMs: number;
  /** Receives output as it arrives (progress of long commands); never used for secret output. */
  readonly onOutput?: (text: string) => void;
}

/** Runs a program; rejects only when it cannot be started (ENOENT when it is missing). */
export type CommandRunner = (
  command: string,
  args: readonly string[],
  options: RunOptions,
) => Promise<CommandResult>;

/** Output beyond this is dropped (a runaway process must not exhaust memory). */
const MAX_OUTPUT = 16 * 1024 * 1024;
/** After SIGTERM on time-out, how long talosctl gets before SIGKILL. */
const KILL_GRACE_MS = 5_000;

/**
 * The real runner: child_process.spawn, no shell, stdin closed, in a process group of its own
 * (`detached`: a new session on POSIX), so signals meant for the CLI's group never reach it.
 */
export const spawnRunner: CommandRunner = (command, args, options) =>
  new Promise((resolve, reject) => {
    const child = spawn(command, [...args], { stdio: ["ignore", "pipe", "pipe"], detached: true });
    const untrack = child.pid === undefined ? () => {} : trackChildGroup(child.pid);
    const stop = (signal: NodeJS.Signals) => {
      if (child.pid === undefined || !signalGroup(child.pid, signal)) child.kill(signal);
    };
    let stdout = "";
    let stderr = "";
    let timedOut = false;
    const collect = (which: "out" | "err") => (chunk: Buffer) => {
      const text = chunk.toString("utf8");
      options.onOutput?.(text);
      if (which === "out" && stdout.length < MAX_OUTPUT) stdout += text;
      if (which === "err" && stderr.length < MAX_OUTPUT) stderr += text;
    };
    child.stdout.on("data", collect("out"));
    child.stderr.on("data", collect("err"));
    let killer: NodeJS.Timeout | undefined;
    const timer = setTimeout(() => {
      timedOut = true;
      stop("SIGTERM");
      killer = setTimeout(() => stop("SIGKILL"), KILL_GRACE_MS);
    }, options.timeoutMs);
    child.on("error", (error) => {
      clearTimeout(timer);
      if (killer) clearTimeout(killer);
      untrack();
      reject(error);
    });
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      if (killer) clearTimeout(killer);
      untrack();
      resolve({ code, stdout, stderr, timedOut, ...(signal ? { signal } : {}) });
    });
  });

/** Time-outs of each kind of call. */
export const TALOSCTL_TIMEOUTS = {
  /** version, get, service, etcd members/leave/remove-member. */
  query: 60_000,
  etcdSnapshot: 10 * 60_000,
  reset: 15 * 60_000,
  bootstrap: 5 * 60_000,
  /** Added to the time-outs talosctl is given itself, so it reports before it is killed. */
  margin: 2 * 60_000,
} as const;

/** Options of the talosctl client. */
export interface TalosctlOptions {
  readonly connection: TalosConnection;
  /** The talosctl program (TALOSCTL, else `talosctl` on PATH). */
  readonly binary?: string;
  readonly run?: CommandRunner;
  /** Progress of long commands (upgrade, upgrade-k8s, health) goes here. */
  readonly progress?: (text: string) => void;
  /** The cluster's Talos version, for the install hint when talosctl is missing. */
  readonly clusterTalosVersion?: string;
}

/** The install hint when talosctl is missing: the release of the cluster's Talos version. */
export function installHint(talosVersion: string | undefined): string {
  const minor = talosVersion ? /^v?(\d+\.\d+)/.exec(talosVersion)?.[1] : undefined;
  const version = talosVersion ? `v${talosVersion.replace(/^v/, "")}` : undefined;
  return minor && version
    ? `Install talosctl v${minor} (the cluster runs Talos ${version}): https://github.com/siderolabs/talos/releases/download/${version}/talosctl-$(uname -s | tr A-Z a-z)-amd64 (or arm64), made executable on PATH, or set TALOSCTL to its path`
    : "Install talosctl of the cluster's Talos minor (https://github.com/siderolabs/talos/releases) on PATH, or set TALOSCTL to its path";
}

/** A TalosClient that runs talosctl. */
export class TalosctlClient implements TalosClient {
  private readonly binary: string;
  private readonly run: CommandRunner;

  constructor(private readonly options: TalosctlOptions) {
    this.binary = options.binary ?? "talosctl";
    this.run = options.run ?? spawnRunner;
  }

  /** The flags every cluster call carries. */
  private connectionArgs(node: string): string[] {
    return [
      "--talosconfig",
      this.options.connection.talosconfig,
      "--endpoints",
      this.options.connection.endpoints.join(","),
      "--nodes",
      node,
    ];
  }

  /** Runs talosctl; rejects only when it cannot be started (with the install hint). */
  private async start(
    args: readonly string[],
    call: { readonly node?: string; readonly timeoutMs: number; readonly stream?: boolean },
  ): Promise<CommandResult> {
    const fullArgs =
      call.node === undefined ? [...args] : [...args, ...this.connectionArgs(call.node)];
    try {
      return await this.run(this.binary, fullArgs, {
        timeoutMs: call.timeoutMs,
        ...(call.stream && this.options.progress ? { onOutput: this.options.progress } : {}),
      });
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === "ENOENT" || code === "EACCES") {
        throw new UserError(
          {
            what: "talosctl",
            problem: `could not be started (${code === "ENOENT" ? "not found" : "not executable"})`,
            got: JSON.stringify(this.binary),
            fix: installHint(this.options.clusterTalosVersion),
          },
          ExitCode.missingCli,
        );
      }
      throw error;
    }
  }

  private async exec(
    args: readonly string[],
    call: { readonly node?: string; readonly timeoutMs: number; readonly stream?: boolean },
  ): Promise<string> {
    const result = await this.start(args, call);
    const shown = shownCommand(args, call.node);
    if (result.timedOut) {
      throw new UserError(
        {
          what: shown,
          problem: `did not finish within ${formatDuration(call.timeoutMs)} and was stopped`,
          got: JSON.stringify(lastLine(result.stderr || result.stdout)),
          fix: "Check that the node is reachable on port 50000 and look at `talosctl dmesg` / `talosctl logs` on it",
        },
        ExitCode.failed,
      );
    }
    if (result.code !== 0) {
      throw new UserError(
        {
          what: shown,
          problem:
            result.code === null
              ? `was killed (${result.signal ?? "by a signal"}) before it finished`
              : `failed with exit code ${result.code}`,
          got: JSON.stringify(lastLine(result.stderr || result.stdout)),
          fix: "Fix the cause (the node's state, its reachability) and rerun",
        },
        ExitCode.failed,
      );
    }
    return result.stdout;
  }

  async clientVersion(): Promise<string> {
    return parseClientVersion(
      await this.exec(["version", "--client", "--short"], { timeoutMs: TALOSCTL_TIMEOUTS.query }),
    );
  }

  async nodeVersion(node: string): Promise<string> {
    return parseServerVersion(
      await this.exec(["version"], { node, timeoutMs: TALOSCTL_TIMEOUTS.query }),
    );
  }

  async kubeletVersion(node: string): Promise<string> {
    return parseKubeletVersion(
      await this.exec(["get", "kubeletspec", "--output", "yaml"], {
        node,
        timeoutMs: TALOSCTL_TIMEOUTS.query,
      }),
    );
  }

  async machineConfig(node: string): Promise<string> {
    return parseMachineConfig(
      await this.exec(["get", "machineconfig", "v1alpha1", "--output", "yaml"], {
        node,
        timeoutMs: TALOSCTL_TIMEOUTS.query,
      }),
    );
  }

  async health(check: HealthCheck): Promise<void> {
    const args = ["health", "--wait-timeout", goDuration(check.timeoutMs)];
    if (check.controlPlanes.length > 0)
      args.push("--control-plane-nodes", check.controlPlanes.join(","));
    if (check.workers.length > 0) args.push("--worker-nodes", check.workers.join(","));
    const result = await this.start(args, {
      node: check.via,
      timeoutMs: check.timeoutMs + TALOSCTL_TIMEOUTS.margin,
      stream: true,
    });
    if (result.code === 0 && !result.timedOut) return;
    // talosctl retries a failing check until --wait-timeout, printing its error each time; its
    // final line is only the gRPC deadline. The check it last reported failing says what is wrong.
    const failure = parseHealthFailure(`${result.stderr}\n${result.stdout}`);
    throw new UserError(
      {
        what: shownCommand(args, check.via),
        problem: failure
          ? `the check "${failure.check}" did not pass (waited up to ${formatDuration(check.timeoutMs)})`
          : result.timedOut
            ? `did not finish within ${formatDuration(check.timeoutMs + TALOSCTL_TIMEOUTS.margin)} and was stopped`
            : `failed with exit code ${result.code ?? "(killed)"} before any check reported`,
        got: JSON.stringify(failure ? failure.reason : lastLine(result.stderr || result.stdout)),
        fix: "Fix what it names (talosctl -n <node> dmesg, kubectl get nodes), or, if it only needs longer, give the command a larger --health-timeout",
      },
      ExitCode.failed,
    );
  }

  async etcdMembers(via: string): Promise<EtcdMember[]> {
    return parseEtcdMembers(
      await this.exec(["etcd", "members"], { node: via, timeoutMs: TALOSCTL_TIMEOUTS.query }),
    );
  }

  async service(node: string, id: string): Promise<ServiceStatus> {
    return parseServiceStatus(
      await this.exec(["service", id], { node, timeoutMs: TALOSCTL_TIMEOUTS.query }),
    );
  }

  async etcdSnapshot(via: string, file: string): Promise<void> {
    // talosctl writes <file>.part with mode 0600 and renames it when the checksum is present.
    await this.exec(["etcd", "snapshot", file], {
      node: via,
      timeoutMs: TALOSCTL_TIMEOUTS.etcdSnapshot,
    });
  }

  async upgrade(node: string, image: string, timeoutMs: number): Promise<void> {
    // --wait follows the node through its reboot until it is ready again; --timeout bounds that.
    await this.exec(["upgrade", "--image", image, "--wait", "--timeout", goDuration(timeoutMs)], {
      node,
      timeoutMs: timeoutMs + TALOSCTL_TIMEOUTS.margin,
      stream: true,
    });
  }

  async upgradeKubernetes(
    via: string,
    to: string,
    dryRun: boolean,
    timeoutMs: number,
  ): Promise<string> {
    const args = ["upgrade-k8s", "--to", to.replace(/^v/, "")];
    if (dryRun) args.push("--dry-run");
    return this.exec(args, {
      node: via,
      timeoutMs,
      stream: !dryRun,
    });
  }

  async etcdLeave(node: string): Promise<void> {
    await this.exec(["etcd", "leave"], { node, timeoutMs: TALOSCTL_TIMEOUTS.query });
  }

  async etcdRemoveMember(via: string, memberId: string): Promise<void> {
    await this.exec(["etcd", "remove-member", memberId], {
      node: via,
      timeoutMs: TALOSCTL_TIMEOUTS.query,
    });
  }

  async wipeEphemeral(node: string): Promise<void> {
    await this.exec(
      ["reset", "--graceful=false", "--reboot", "--system-labels-to-wipe=EPHEMERAL"],
      { node, timeoutMs: TALOSCTL_TIMEOUTS.reset, stream: true },
    );
  }

  async bootstrapRecover(node: string, snapshot: string, skipHashCheck: boolean): Promise<void> {
    const args = ["bootstrap", `--recover-from=${snapshot}`];
    if (skipHashCheck) args.push("--recover-skip-hash-check");
    await this.exec(args, { node, timeoutMs: TALOSCTL_TIMEOUTS.bootstrap });
  }
}

/** The command as shown in messages: its arguments and the node, never the talosconfig path. */
function shownCommand(args: readonly string[], node: string | undefined): string {
  return `talosctl ${args.join(" ")}${node === undefined ? "" : ` --nodes ${node}`}`;
}

function lastLine(text: string): string {
  const lines = text
    .trim()
    .split("\n")
    .filter((line) => line.trim() !== "");
  const line = lines[lines.length - 1] ?? "(no output)";
  return line.length > 300 ? `${line.slice(0, 300)}…` : line;
}
