// The day-two commands' option parsers and defaults, apart from the commands themselves: the command
// line registers them before any command runs, and must load nothing heavy to print `--help`.
import { UserError } from "../errors";

/** How many snapshots per environment are kept when not told otherwise. */
export const DEFAULT_KEEP_SNAPSHOTS = 10;

/** Parses `--keep-snapshots`. */
export function parseKeep(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) {
    throw new UserError({
      what: "--keep-snapshots",
      problem: "must be a whole number of at least 1",
      got: JSON.stringify(value),
      fix: `Use e.g. --keep-snapshots ${DEFAULT_KEEP_SNAPSHOTS}`,
    });
  }
  return n;
}

/** Parses `--max-unavailable`. */
export function parseMaxUnavailable(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) {
    throw new UserError({
      what: "--max-unavailable",
      problem: "must be a whole number of at least 1",
      got: JSON.stringify(value),
      fix: "Use e.g. --max-unavailable 2 (workers upgraded at once; control planes always go one by one)",
    });
  }
  return n;
}
