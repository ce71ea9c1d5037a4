// A lock per layer and stack on this checkout, so two runs of the CLI never drive the same stack at
// once. The engine has its own lock in the backend (translated in errors.ts); this one also covers
// the time before the engine starts and gives a message naming who holds it.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { stateDir } from "./backend";
import type { CliContext } from "./context";
import { ExitCode, UserError } from "./errors";
import { ensurePrivateDir } from "./files";
import { processIsAlive } from "./processes";

export { processIsAlive };

/** The folder of the CLI's per-stack lock files (engine operations and day-two changes share it). */
export function locksDir(repoRoot: string): string {
  return path.join(stateDir(repoRoot), "locks");
}

/** Who holds a lock; written into the lock file as JSON. */
export interface LockHolder {
  readonly pid: number;
  readonly host: string;
  /** The command line that took it, e.g. `up staging --layer foundation`. */
  readonly command: string;
  /** ISO time it was taken. */
  readonly startedAt: string;
}

/** A held lock. */
interface StackLock {
  readonly path: string;
  readonly holder: LockHolder;
  /** Removes the lock file if it is still ours; safe to call twice. */
  release(): void;
}

/** What acquiring a lock needs to know about this process; injectable for tests. */
interface LockOptions {
  readonly dir: string;
  readonly layer: string;
  readonly env: string;
  readonly command: string;
  readonly pid?: number;
  readonly host?: string;
  readonly now?: () => Date;
  /** Whether a process on this host is alive. */
  readonly isAlive?: (pid: number) => boolean;
  /** Release on process exit as well (default true). */
  readonly releaseOnExit?: boolean;
}

/** The lock file of one layer and stack. */
export function lockPath(dir: string, layer: string, env: string): string {
  return path.join(dir, `${layer}.${env}.lock`);
}

/**
 * Takes the lock of a layer and stack, or refuses with a message naming the holder. A lock left by a
 * process of this host that no longer runs is stale and taken over.
 */
export function acquireStackLock(options: LockOptions): StackLock {
  ensurePrivateDir(options.dir);
  const file = lockPath(options.dir, options.layer, options.env);
  const holder: LockHolder = {
    pid: options.pid ?? process.pid,
    host: options.host ?? os.hostname(),
    command: options.command,
    startedAt: (options.now ?? (() => new Date()))().toISOString(),
  };
  const isAlive = options.isAlive ?? processIsAlive;
  // Two attempts: the second follows the removal of a stale lock.
  for (let attempt = 0; attempt < 2; attempt++) {
    if (tryCreate(file, holder)) return heldLock(file, holder, options.releaseOnExit ?? true);
    const current = readHolder(file);
    if (current === undefined) continue; // released between our attempt and the read
    const stale = current.host === holder.host && !isAlive(current.pid);
    if (!stale || !removeIfUnchanged(file, current)) {
      throw lockedError(options, file, current);
    }
  }
  throw lockedError(options, file, readHolder(file));
}

/** Takes the lock of a layer and stack for this run of the CLI (its process and host). */
export function lockStack(
  ctx: Pick<CliContext, "repoRoot" | "host">,
  layer: string,
  env: string,
  command: string,
): StackLock {
  return acquireStackLock({
    dir: locksDir(ctx.repoRoot),
    layer,
    env,
    command,
    pid: ctx.host.pid,
    host: ctx.host.hostname,
    isAlive: (pid) => ctx.host.isAlive(pid),
  });
}

/** Runs `fn` holding the lock of a layer and stack (see {@link lockStack}). */
export async function withStackLock<T>(
  ctx: Pick<CliContext, "repoRoot" | "host">,
  layer: string,
  env: string,
  command: string,
  fn: () => Promise<T>,
): Promise<T> {
  const lock = lockStack(ctx, layer, env, command);
  try {
    return await fn();
  } finally {
    lock.release();
  }
}

function tryCreate(file: string, holder: LockHolder): boolean {
  let fd: number;
  try {
    fd = fs.openSync(file, "wx", 0o644);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EEXIST") return false;
    throw error;
  }
  try {
    fs.writeFileSync(fd, `${JSON.stringify(holder)}\n`);
  } finally {
    fs.closeSync(fd);
  }
  return true;
}

/** The holder written in a lock file; a half-written or foreign file reads as an unknown holder. */
export function readHolder(file: string): LockHolder | undefined {
  let text: string;
  try {
    text = fs.readFileSync(file, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
  try {
    const parsed = JSON.parse(text) as Partial<LockHolder>;
    if (typeof parsed.pid === "number" && typeof parsed.host === "string") {
      return {
        pid: parsed.pid,
        host: parsed.host,
        command: String(parsed.command ?? "?"),
        startedAt: String(parsed.startedAt ?? "?"),
      };
    }
  } catch {
    // fall through: treated as held by someone unknown, never as stale
  }
  return { pid: -1, host: "unknown", command: "unknown", startedAt: "unknown" };
}

/**
 * Removes a stale lock only if it still is the one judged stale: it is first renamed aside
 * (atomic), and put back if another run replaced it in between.
 */
function removeIfUnchanged(file: string, stale: LockHolder): boolean {
  const aside = `${file}.stale-${process.pid}`;
  try {
    fs.renameSync(file, aside);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return true;
    throw error;
  }
  const moved = readHolder(aside);
  if (moved && moved.pid === stale.pid && moved.startedAt === stale.startedAt) {
    fs.rmSync(aside, { force: true });
    return true;
  }
  try {
    fs.linkSync(aside, file); // fails if yet another run created a lock meanwhile
  } catch {
    // that run holds the lock now; either way it is not ours
  }
  fs.rmSync(aside, { force: true });
  return false;
}

function heldLock(file: string, holder: LockHolder, releaseOnExit: boolean): StackLock {
  let released = false;
  const release = (): void => {
    if (released) return;
    released = true;
    process.off("exit", release);
    const current = readHolder(file);
    if (current && current.pid === holder.pid && current.startedAt === holder.startedAt) {
      fs.rmSync(file, { force: true });
    }
  };
  if (releaseOnExit) process.on("exit", release);
  return { path: file, holder, release };
}

function lockedError(
  options: LockOptions,
  file: string,
  holder: LockHolder | undefined,
): UserError {
  const who = holder
    ? `pid ${holder.pid} on ${holder.host} running "${holder.command}" since ${holder.startedAt}`
    : "a run that just finished";
  return new UserError(
    {
      what: `${options.layer}/${options.env}`,
      problem: "another run of the platform CLI holds this stack",
      got: who,
      fix: `Wait for it to finish. If that run is gone (e.g. its machine crashed), delete ${file}`,
    },
    ExitCode.locked,
  );
}
