// Day-two changes hold the same per-stack lock as preview/up/refresh/destroy: an `up` pushing
// configs while nodes reboot into a new Talos, or two rolls at once, must not happen.
import type { CliContext } from "../context";
import { acquireStackLock, locksDir } from "../lock";

/** Runs `fn` holding the foundation lock of `env`. */
export async function withFoundationLock<T>(
  ctx: CliContext,
  env: string,
  commandLine: string,
  fn: () => Promise<T>,
): Promise<T> {
  const lock = acquireStackLock({
    dir: locksDir(ctx.repoRoot),
    layer: "foundation",
    env,
    command: commandLine,
    pid: ctx.host.pid,
    host: ctx.host.hostname,
    isAlive: (pid) => ctx.host.isAlive(pid),
  });
  try {
    return await fn();
  } finally {
    lock.release();
  }
}
