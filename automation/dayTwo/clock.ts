// Time for the day-two commands: now, and waiting. Injected so tests never sleep: a fake clock
// advances its time when asked to sleep.

/** Milliseconds since the epoch, and a wait. */
export interface DayTwoClock {
  now(): number;
  /** Resolves after `ms` milliseconds (a fake resolves at once and advances its time). */
  sleep(ms: number): Promise<void>;
}

/** The real clock. */
export const systemClock: DayTwoClock = {
  now: () => Date.now(),
  sleep: (ms) =>
    new Promise((resolve) => {
      setTimeout(resolve, ms);
    }),
};

/** `12m30s`, `45s`, `2h0m`: durations for messages. */
export function formatDuration(ms: number): string {
  const seconds = Math.round(ms / 1000);
  if (seconds < 60) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes}m${seconds % 60}s`;
  return `${Math.floor(minutes / 60)}h${minutes % 60}m`;
}

/** A Go duration for talosctl flags (`--timeout 1800s`). */
export function goDuration(ms: number): string {
  return `${Math.max(1, Math.ceil(ms / 1000))}s`;
}
