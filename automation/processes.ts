// Whether a process lives, apart from lock.ts: the CLI's entry hands it to every command, and must
// not load what the locks need (the backend and stack-file modules, YAML) to print its help.

/** Whether a local process exists (EPERM means it exists but belongs to someone else). */
export function processIsAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}
