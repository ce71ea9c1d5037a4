// Child processes the CLI starts in a process group of their own (talosctl): a Ctrl-C, which the
// terminal sends to its whole foreground group, must not kill an upgrade half-way. They are tracked
// here so that a forced stop (a second interrupt) can still end them before the CLI exits.

const groups = new Set<number>();

/** Records a child that leads its own process group; the returned function forgets it. */
export function trackChildGroup(pid: number): () => void {
  groups.add(pid);
  return () => {
    groups.delete(pid);
  };
}

/** Sends `signal` to a process group; false when it no longer exists. */
export function signalGroup(pid: number, signal: NodeJS.Signals): boolean {
  try {
    process.kill(-pid, signal);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ESRCH") return false;
    throw error;
  }
}

/** Sends SIGTERM to every tracked group still running; returns their leaders' pids. */
export function stopChildGroups(): number[] {
  const stopped = [...groups].filter((pid) => signalGroup(pid, "SIGTERM"));
  groups.clear();
  return stopped;
}
