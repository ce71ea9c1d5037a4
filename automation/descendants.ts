// Stopping everything a run started, when it must stop at once (a second Ctrl-C or SIGTERM). The
// Pulumi CLI starts its language host and every provider plugin in a process group of its own
// (sdk/go/common/resource/plugin/plugin.go: cmdutil.RegisterProcessGroup, i.e. setpgid), and
// talosctl runs in its own group too (childGroups.ts): no single group signal reaches them all, and
// once the Pulumi CLI is gone its plugins are re-parented and can no longer be found. So the tree
// of this process's descendants is read first (Linux: /proc; elsewhere `ps`), also at the first
// interrupt, then each gets SIGTERM, and what still runs after a short grace gets SIGKILL.
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";

/** One process: its parent, and when it started (so a reused pid is never signalled). */
interface ProcessEntry {
  readonly pid: number;
  readonly ppid: number;
  /** `/proc/<pid>/stat` field 22 (clock ticks since boot); undefined without /proc. */
  readonly start?: string;
}

/** Every process of the machine from /proc, or undefined without a readable /proc. */
function procTable(procRoot: string): ProcessEntry[] | undefined {
  let names: string[];
  try {
    names = fs.readdirSync(procRoot);
  } catch {
    return undefined;
  }
  const table: ProcessEntry[] = [];
  for (const name of names) {
    if (!/^\d+$/.test(name)) continue;
    const entry = readStat(procRoot, Number(name));
    if (entry) table.push(entry);
  }
  return table;
}

/** `/proc/<pid>/stat`: after `pid (comm)`, state ppid …; comm may hold spaces and parentheses. */
function readStat(procRoot: string, pid: number): ProcessEntry | undefined {
  let stat: string;
  try {
    stat = fs.readFileSync(`${procRoot}/${pid}/stat`, "utf8");
  } catch {
    return undefined; // gone meanwhile
  }
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  // fields[0] is field 3 (state): ppid is field 4, starttime field 22.
  return { pid, ppid: Number(fields[1]), start: fields[19] };
}

/** Every process from `ps` (macOS, BSD), or an empty list when it cannot run. */
function psTable(): ProcessEntry[] {
  const result = spawnSync("ps", ["-A", "-o", "pid=,ppid="], { encoding: "utf8" });
  if (result.status !== 0) return [];
  return result.stdout
    .split("\n")
    .map((line) => line.trim().split(/\s+/).map(Number))
    .filter((parts) => parts.length === 2 && parts.every(Number.isInteger))
    .map(([pid, ppid]) => ({ pid: pid!, ppid: ppid! }));
}

/** The descendants of `root`, parents before children. */
export function findDescendants(root: number, procRoot = "/proc"): ProcessEntry[] {
  const table = procTable(procRoot) ?? psTable();
  const children = new Map<number, ProcessEntry[]>();
  for (const entry of table) {
    if (entry.pid === root) continue;
    children.set(entry.ppid, [...(children.get(entry.ppid) ?? []), entry]);
  }
  const found: ProcessEntry[] = [];
  const seen = new Set<number>([root]);
  for (let queue = [root]; queue.length > 0;) {
    const next: number[] = [];
    for (const pid of queue) {
      for (const child of children.get(pid) ?? []) {
        if (seen.has(child.pid)) continue;
        seen.add(child.pid);
        found.push(child);
        next.push(child.pid);
      }
    }
    queue = next;
  }
  return found;
}

/** Whether the process is still the one found (same start time), and not a zombie. */
function stillRunning(entry: ProcessEntry, procRoot: string): boolean {
  if (entry.start === undefined) {
    try {
      process.kill(entry.pid, 0);
      return true;
    } catch {
      return false;
    }
  }
  let stat: string;
  try {
    stat = fs.readFileSync(`${procRoot}/${entry.pid}/stat`, "utf8");
  } catch {
    return false;
  }
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return fields[19] === entry.start && fields[0] !== "Z";
}

function signal(entry: ProcessEntry, name: NodeJS.Signals): void {
  try {
    process.kill(entry.pid, name);
  } catch {
    // gone already, or not ours
  }
}

/** Blocks the thread (a forced stop exits right after; there is nothing else to run). */
function sleep(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/**
 * Descendants seen at the first interrupt. A terminal's second Ctrl-C reaches the Pulumi CLI too,
 * which may exit before this process walks the tree: its plugins, re-parented by then, are still
 * known from here (and signalled only if their start time is unchanged).
 */
const remembered = new Map<number, ProcessEntry>();

/** Records the current descendants of `root` (default: this process), for {@link stopDescendants}. */
export function rememberDescendants(options: { root?: number; procRoot?: string } = {}): void {
  for (const entry of findDescendants(options.root ?? process.pid, options.procRoot)) {
    remembered.set(entry.pid, entry);
  }
}

/** How long the descendants get to end after SIGTERM before SIGKILL. */
export const DESCENDANT_GRACE_MS = 2_000;

/**
 * Stops every descendant of `root` (default: this process), and those remembered at the first
 * interrupt that still run: SIGTERM to each, then SIGKILL to those still running after `graceMs`.
 * Returns the pids that were found.
 */
export function stopDescendants(
  options: { root?: number; graceMs?: number; procRoot?: string } = {},
): number[] {
  const procRoot = options.procRoot ?? "/proc";
  const current = findDescendants(options.root ?? process.pid, procRoot);
  const found = [
    ...current,
    ...[...remembered.values()].filter(
      (entry) => !current.some((seen) => seen.pid === entry.pid) && stillRunning(entry, procRoot),
    ),
  ];
  remembered.clear();
  for (const entry of found) signal(entry, "SIGTERM");
  const deadline = Date.now() + (options.graceMs ?? DESCENDANT_GRACE_MS);
  let running = found.filter((entry) => stillRunning(entry, procRoot));
  while (running.length > 0 && Date.now() < deadline) {
    sleep(50);
    running = running.filter((entry) => stillRunning(entry, procRoot));
  }
  for (const entry of running) signal(entry, "SIGKILL");
  return found.map((entry) => entry.pid);
}
