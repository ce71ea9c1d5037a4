// Time for the day-two commands: now, and waiting. Injected so tests never sleep: a fake clock
// advances its time when asked to sleep.
import { UserError } from "../errors";

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

/**
 * Parses a wait given on the command line: Go-style `90s`, `10m`, `1h30m` (whole hours, minutes and
 * seconds, largest first), more than zero. Throws a usage error naming the flag otherwise.
 */
export function parseDuration(flag: string, value: string): number {
  const match = /^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$/.exec(value.trim());
  const ms = match
    ? ((Number(match[1] ?? 0) * 60 + Number(match[2] ?? 0)) * 60 + Number(match[3] ?? 0)) * 1000
    : 0;
  if (!match || value.trim() === "" || ms <= 0) {
    throw new UserError({
      what: flag,
      problem: "must be a duration of more than zero, in hours, minutes and seconds",
      got: JSON.stringify(value),
      fix: `Use e.g. ${flag} 20m, ${flag} 90s or ${flag} 1h30m`,
    });
  }
  return ms;
}
