// Starts and drives the Talos node emulator (test/emulator/talos-emulator) from Node: the tools built by
// test/emulator/talos-emulator/build.sh, the emulator process on loopback addresses, and its control API
// (faults, configs changed behind the program's back, status). Used by the emulator smoke test and
// meant for the engine tier's lifecycle test.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import * as path from "node:path";
import * as readline from "node:readline";

/** The repository root (this file lives in test/emulator). */
export const repoRoot = path.resolve(__dirname, "..", "..");

/** The programs build.sh produced. */
export interface EmulatorTools {
  /** talosctl built from its Go module (the version of the provider's machinery module). */
  readonly talosctl: string;
  readonly emulator: string;
}

/**
 * Builds (or finds cached in .engine-tools/bin) talosctl and the emulator. Rejects with build.sh's own
 * one-line message when Go is missing.
 */
export function buildEmulatorTools(timeoutMs = 45 * 60_000): EmulatorTools {
  const result = spawnSync(
    "bash",
    [path.join(repoRoot, "test", "emulator", "talos-emulator", "build.sh")],
    {
      cwd: repoRoot,
      encoding: "utf8",
      timeout: timeoutMs,
      stdio: ["ignore", "pipe", "inherit"],
    },
  );
  if (result.error) throw result.error;
  if (result.status !== 0) {
    throw new Error(`test/emulator/talos-emulator/build.sh failed with exit code ${result.status}`);
  }
  const value = (key: string): string => {
    const line = result.stdout.split("\n").find((l) => l.startsWith(`${key}=`));
    if (!line) throw new Error(`build.sh printed no ${key}= line`);
    return line.slice(key.length + 1);
  };
  return { talosctl: value("TALOSCTL"), emulator: value("TALOS_EMULATOR") };
}

/** One emulated node: its name and loopback address (its Talos API's). */
export interface EmulatedNodeSpec {
  readonly name: string;
  readonly address: string;
  /**
   * Other addresses it holds (a dual-stack node's other family), only shown: etcd's advertised
   * address and the kubelet's node IPs are picked among all of them by Talos' rules.
   */
  readonly extra?: readonly string[];
}

/** Faults the control API injects into a node (all off unless set). */
export interface Faults {
  readonly upgradeFails?: boolean;
  readonly upgradeRollback?: boolean;
  readonly unhealthy?: boolean;
  readonly down?: boolean;
  readonly snapshotFails?: boolean;
  /** etcd's NOSPACE alarm raised for the node's member. */
  readonly etcdNoSpace?: boolean;
}

/** A node as the control API reports it. */
export interface NodeStatus {
  readonly name: string;
  readonly address: string;
  /** off, booting, maintenance, running */
  readonly phase: string;
  readonly stage: string;
  readonly version: string;
  readonly bootId: string;
  readonly hostname?: string;
  readonly type?: string;
  readonly cluster?: string;
  readonly installed: boolean;
  readonly etcdData: boolean;
  readonly faults: Required<Faults>;
  /** Services not (yet) running healthy. */
  readonly unmet?: string[];
}

/** A cluster's etcd as the control API reports it. */
export interface ClusterStatus {
  readonly name: string;
  readonly bootstrapped: boolean;
  readonly revision: number;
  readonly keys: number;
  readonly members: {
    id: string;
    hostname: string;
    address: string;
    /** What its etcd advertises (https://host:2380). */
    peerURL: string;
    learner: boolean;
    /** The member the voters follow. */
    leader: boolean;
    /** Its database file and the part in use, in bytes (talosctl etcd status). */
    dbSize: number;
    dbSizeInUse: number;
  }[];
  readonly kubernetes?: string;
  /** Every member's `etcd defrag`, in the order they ran. */
  readonly defragmentations: {
    hostname: string;
    memberID: string;
    at: string;
    dbSizeBefore: number;
    dbSizeAfter: number;
  }[];
}

/** Options of {@link startTalosEmulator}. */
export interface StartOptions {
  readonly binary: string;
  readonly nodes: readonly EmulatedNodeSpec[];
  /** The version nodes run until upgraded. @default "v1.13.0" */
  readonly talosVersion?: string;
  /** The emulator stops by itself after this long. @default 20 minutes */
  readonly timeoutMs?: number;
  /** Multiplies the emulated delays (boot, install, etcd join). @default 1 */
  readonly timingScale?: number;
  /** Receives the emulator's log lines. */
  readonly log?: (line: string) => void;
  /** How long stop() waits after each step (shutdown request, SIGTERM) before the next. @default 5000 */
  readonly stopStepMs?: number;
}

/** A running emulator. */
export interface RunningEmulator {
  readonly control: string;
  readonly nodes: readonly { name: string; address: string; endpoint: string }[];
  status(): Promise<NodeStatus[]>;
  node(name: string): Promise<NodeStatus>;
  setFaults(name: string, faults: Faults): Promise<NodeStatus>;
  /** Patches a node's config behind the program's back (a Talos config patch, YAML). */
  patchConfig(name: string, patch: string): Promise<NodeStatus>;
  reboot(name: string): Promise<NodeStatus>;
  clusters(): Promise<ClusterStatus[]>;
  /** Stops the emulator (control API, then SIGTERM, then SIGKILL) and waits for it to exit. */
  stop(): Promise<void>;
}

/** How long the emulator may take to print its ready line. */
const READY_TIMEOUT_MS = 30_000;

/** Starts the emulator and resolves once every node listens. */
export async function startTalosEmulator(options: StartOptions): Promise<RunningEmulator> {
  const args = [
    ...options.nodes.flatMap((n) => [
      "--node",
      `${n.name}=${[n.address, ...(n.extra ?? [])].join("+")}`,
    ]),
    "--talos-version",
    options.talosVersion ?? "v1.13.0",
    "--timeout",
    `${Math.ceil((options.timeoutMs ?? 20 * 60_000) / 1000)}s`,
    "--timing-scale",
    String(options.timingScale ?? 1),
    // If this process dies, the emulator's stdin closes and it stops.
    "--stop-on-stdin-close",
  ];
  const child = spawn(options.binary, args, { stdio: ["pipe", "pipe", "pipe"] });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  // The last lines it printed say why it stopped (an address in use: another run on this machine).
  const lastErrors: string[] = [];
  readline.createInterface({ input: child.stderr! }).on("line", (line) => {
    lastErrors.push(line);
    if (lastErrors.length > 5) lastErrors.shift();
    options.log?.(line);
  });

  const ready = await new Promise<{
    control: string;
    nodes: { name: string; address: string; endpoint: string }[];
  }>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`talos-emulator printed no ready line within ${READY_TIMEOUT_MS} ms`));
    }, READY_TIMEOUT_MS);
    const lines = readline.createInterface({ input: child.stdout! });
    lines.once("line", (line) => {
      clearTimeout(timer);
      try {
        resolve(JSON.parse(line));
      } catch (error) {
        reject(
          new Error(`talos-emulator: unreadable ready line ${JSON.stringify(line)}: ${error}`),
        );
      }
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      // stderr may still hold its last words when the exit event comes first.
      setImmediate(() =>
        reject(
          new Error(
            `talos-emulator exited with code ${code} before it was ready` +
              (lastErrors.length > 0 ? `: ${lastErrors.join(" | ")}` : ""),
          ),
        ),
      );
    });
  });

  const call = async <T>(method: string, route: string, body?: string): Promise<T> => {
    const response = await fetch(`${ready.control}${route}`, {
      method,
      body,
      signal: AbortSignal.timeout(30_000),
    });
    const text = await response.text();
    if (!response.ok) {
      throw new Error(`talos-emulator ${method} ${route}: ${response.status} ${text.trim()}`);
    }
    return JSON.parse(text) as T;
  };

  return {
    control: ready.control,
    nodes: ready.nodes,
    status: () => call<NodeStatus[]>("GET", "/nodes"),
    node: (name) => call<NodeStatus>("GET", `/nodes/${encodeURIComponent(name)}`),
    setFaults: (name, faults) =>
      call<NodeStatus>("PUT", `/nodes/${encodeURIComponent(name)}/faults`, JSON.stringify(faults)),
    patchConfig: (name, patch) =>
      call<NodeStatus>("PATCH", `/nodes/${encodeURIComponent(name)}/config`, patch),
    reboot: (name) => call<NodeStatus>("POST", `/nodes/${encodeURIComponent(name)}/reboot`),
    clusters: () => call<ClusterStatus[]>("GET", "/clusters"),
    stop: () =>
      stopProcess(child, exited, options.stopStepMs ?? 5_000, () => call("POST", "/shutdown")),
  };
}

/** Asks the emulator to stop, then escalates to SIGTERM and SIGKILL, each after `stepMs`. */
async function stopProcess(
  child: ChildProcess,
  exited: Promise<void>,
  stepMs: number,
  shutdown: () => Promise<unknown>,
): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const within = async (ms: number) => {
    let timer: NodeJS.Timeout | undefined;
    const done = await Promise.race([
      exited.then(() => true),
      new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), ms))),
    ]);
    clearTimeout(timer);
    return done;
  };
  await shutdown().catch(() => undefined);
  if (await within(stepMs)) return;
  child.kill("SIGTERM");
  if (await within(stepMs)) return;
  child.kill("SIGKILL");
  await within(stepMs);
}

/** Retries `check` until it resolves, or rejects with its last error after `timeoutMs`. */
export async function waitFor<T>(
  what: string,
  check: () => Promise<T>,
  timeoutMs = 60_000,
  intervalMs = 200,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await check();
    } catch (error) {
      if (Date.now() > deadline) {
        throw new Error(`waiting for ${what}: ${(error as Error).message}`);
      }
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/** Waits until each named node of `emulator` is in maintenance mode (up, before any config). */
export async function waitForMaintenance(
  emulator: RunningEmulator,
  names: readonly string[],
): Promise<void> {
  for (const name of names) {
    await waitFor(`${name} in maintenance mode`, async () => {
      const status = await emulator.node(name);
      if (status.phase !== "maintenance") throw new Error(status.phase);
    });
  }
}
