// Pure helpers of `npm run bench:engine` (bench/engine.ts), kept apart so the unit suite can check
// them without the engine: the stack of an emulated cluster of any size, the emulator's node list,
// and the analysis of a roll from the CLI's timed progress lines and the tool calls' intervals.

/** 3 control planes; the rest workers. */
export const CONTROL_PLANES = 3;

/** One emulated node: its stack name, role and loopback address. */
export interface BenchNode {
  readonly name: string;
  readonly role: "controlplane" | "worker";
  readonly address: string;
}

/**
 * The loopback /24 of the size at `index` in BENCH_ENGINE_SIZES: 127.16.(index+1).0/24, clear of
 * the engine tier's stacks (127.14.20, 127.15.20, 127.15.40, 127.15.60).
 */
export function benchSubnet(index: number): string {
  if (!Number.isInteger(index) || index < 0 || index > 253) {
    throw new Error(`bench:engine: no loopback subnet for size number ${index + 1}`);
  }
  return `127.16.${index + 1}`;
}

/** Control planes at .11-.13, workers from .21 on; the cluster endpoint is .10. */
export function benchNodes(size: number, subnet: string): BenchNode[] {
  if (!Number.isInteger(size) || size < CONTROL_PLANES + 1 || size > CONTROL_PLANES + 234) {
    throw new Error(
      `bench:engine: a cluster size is ${CONTROL_PLANES} control planes and 1 to 234 workers; got ${size}`,
    );
  }
  return Array.from({ length: size }, (_, i) =>
    i < CONTROL_PLANES
      ? { name: `cp-${i + 1}`, role: "controlplane", address: `${subnet}.${11 + i}` }
      : {
          name: `worker-${i - CONTROL_PLANES + 1}`,
          role: "worker",
          address: `${subnet}.${21 + i - CONTROL_PLANES}`,
        },
  );
}

/** What a bench cluster is made of. */
export interface BenchStackOptions {
  readonly name: string;
  readonly subnet: string;
  readonly nodes: readonly BenchNode[];
  readonly talosVersion: string;
  /** cluster.rollout.maxUnavailableWorkers: workers per roll step. */
  readonly batch: number;
  /** cluster.health.timeout of `up`'s health gate. */
  readonly healthTimeout: string;
}

/**
 * The foundation stack's `config:` (keys unprefixed, as validatePlatformConfig takes them): bare
 * metal, like test/engine/stacks/Pulumi.lifecycle.yaml, with `size` nodes.
 */
export function benchStackConfig(options: BenchStackOptions): Record<string, unknown> {
  const { subnet } = options;
  return {
    cluster: {
      name: options.name,
      endpoint: `${subnet}.10`,
      talosVersion: options.talosVersion,
      kubernetesVersion: "1.36.3",
      network: { nameservers: [`${subnet}.1`], ntpServers: [`${subnet}.1`] },
      rollout: { maxUnavailableWorkers: options.batch },
      health: { timeout: options.healthTimeout },
    },
    nodes: options.nodes.map((node) => ({
      name: node.name,
      role: node.role,
      platform: "baremetal",
      network: { interface: "eth0", addresses: [`${node.address}/24`], gateway: `${subnet}.1` },
      baremetal: { address: node.address },
    })),
  };
}

/** The same config with the project's prefix, as a stack file's `config:` holds it. */
export function benchStackFile(project: string, config: Record<string, unknown>): object {
  return {
    config: Object.fromEntries(Object.entries(config).map(([k, v]) => [`${project}:${k}`, v])),
  };
}

/** A roll's sequential steps by the goal: every control plane alone, then workers by the batch. */
export function expectedSteps(controlPlanes: number, workers: number, batch: number): number {
  return controlPlanes + Math.ceil(workers / batch);
}

/** A line the CLI printed, with when it was written (ms since the epoch). */
export interface TimedLine {
  readonly at: number;
  readonly text: string;
}

/** One run of talosctl or kubectl: from its start to its exit (ms since the epoch). */
export interface ToolCall {
  readonly start: number;
  readonly end: number;
  readonly tool: string;
  readonly command: string;
}

/** Parses the tool wrapper's log: `<start s.us> <end s.us> <exit> <tool> <subcommand>` per line. */
export function parseToolLog(text: string): ToolCall[] {
  return text
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => {
      const [start, end, , tool, command] = line.split(" ");
      return {
        start: Number(start) * 1000,
        end: Number(end) * 1000,
        tool: tool ?? "?",
        command: command ?? "",
      };
    });
}

/** Milliseconds of [from, to) during which at least one call ran (overlaps counted once). */
export function busyMs(calls: readonly ToolCall[], from: number, to: number): number {
  const spans = calls
    .map((c) => [Math.max(c.start, from), Math.min(c.end, to)] as const)
    .filter(([a, b]) => b > a)
    .sort((x, y) => x[0] - y[0]);
  let total = 0;
  let open = 0;
  let close = 0;
  for (const [i, [a, b]] of spans.entries()) {
    if (i === 0 || a > close) {
      total += close - open;
      [open, close] = [a, b];
    } else if (b > close) {
      close = b;
    }
  }
  return total + close - open;
}

/** The kind of roll, by the progress lines that mark where each step starts and ends. */
export type RollKind = "rollout" | "upgrade";

/**
 * The first line of a step (its quorum gate for a control plane, else its drain or reboot or
 * upgrade) and its last (the cluster healthy again after it), as automation/dayTwo/rollout.ts and
 * talosUpgrade.ts print them.
 */
const MARKERS: Record<RollKind, { readonly end: RegExp; readonly first: RegExp }> = {
  rollout: {
    end: /: running the config it was to boot; /,
    first: /^\S+: (etcd keeps quorum|single control plane|draining \()|^\S+ \(\S+\): rebooting/,
  },
  upgrade: {
    end: /^\[[\d-]+\/\d+\] .*: cluster healthy$/,
    first: /^\[\d+\/\d+\] \S+(: etcd keeps quorum|: single control plane| \(\S+\): upgrading)/,
  },
};

/** One step of a roll: its wall time, the time talosctl/kubectl ran, and the rest (the CLI's). */
export interface RollStep {
  readonly label: string;
  readonly wallMs: number;
  readonly toolMs: number;
  readonly calls: number;
  /** Wall time no tool ran: the CLI's own work, and its own sleeps between polls. */
  readonly cliMs: number;
}

/**
 * Splits a roll into its sequential steps: the first from the first step line, each from the end
 * of the one before, each ending at its "cluster healthy" line; tool time counted inside each.
 */
export function rollSteps(
  kind: RollKind,
  lines: readonly TimedLine[],
  calls: readonly ToolCall[],
): RollStep[] {
  const { end, first } = MARKERS[kind];
  const start = lines.find((l) => first.test(l.text));
  if (!start) return [];
  const steps: RollStep[] = [];
  let from = start.at;
  for (const line of lines) {
    if (line.at < start.at || !end.test(line.text)) continue;
    const to = line.at;
    const toolMs = busyMs(calls, from, to);
    steps.push({
      label: line.text.split(":")[0],
      wallMs: to - from,
      toolMs,
      calls: calls.filter((c) => c.start >= from && c.start < to).length,
      cliMs: to - from - toolMs,
    });
    from = to;
  }
  return steps;
}

/** Splits text written to a sink in chunks into lines, each timed by the write it completed in. */
export class LineClock {
  readonly lines: TimedLine[] = [];
  private partial = "";

  constructor(private readonly now: () => number = Date.now) {}

  write(text: string): void {
    const parts = (this.partial + text).split("\n");
    this.partial = parts.pop() ?? "";
    const at = this.now();
    for (const part of parts) this.lines.push({ at, text: part });
  }
}
