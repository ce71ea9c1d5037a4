// The off-site etcd backups' settings worked out: where they go (a gs:// prefix in the state bucket
// by default, or a file:// folder standing in for one), how often they are due (the longest gap
// between two runs of the cron schedule) and the defaults. Pure, shared by the program and the CLI.
import { Cron } from "croner";
import type { BackupDestination } from "../spec/types";

export type { BackupDestination };

/** talos-backup's image: its latest release (siderolabs/talos-backup, tag v0.1.0-beta.3). */
export const TALOS_BACKUP_IMAGE = "ghcr.io/siderolabs/talos-backup:v0.1.0-beta.3";
/** The namespace the job runs in, the one Talos API access is allowed from. */
export const DEFAULT_BACKUP_NAMESPACE = "talos-backup";
/** Days a backup is kept by `etcd backups --prune`. */
export const DEFAULT_RETENTION_DAYS = 30;

/** A Cloud Storage bucket name (3-222 characters; the dotted form's parts are not checked further). */
const BUCKET = /^[a-z0-9][a-z0-9._-]{1,220}[a-z0-9]$/;

/** Parses `gs://bucket/prefix/` or `file:///folder/`; a string says what is wrong. */
export function parseDestination(url: string): BackupDestination | string {
  const gs = /^gs:\/\/([^/]+)(?:\/(.*))?$/.exec(url);
  if (gs) {
    const [, bucket, rest = ""] = gs;
    if (!BUCKET.test(bucket)) return `names ${JSON.stringify(bucket)}, not a Cloud Storage bucket`;
    const prefix = rest.replace(/^\/+/, "").replace(/\/*$/, "/");
    if (prefix === "/")
      return "needs a folder in the bucket (gs://<bucket>/etcd/<cluster>/): the job's write access is limited to one";
    if (prefix.split("/").some((part) => part === "." || part === ".."))
      return "has . or .. in its folder";
    return { kind: "gs", bucket, prefix, url: `gs://${bucket}/${prefix}` };
  }
  if (url.startsWith("file://")) {
    const dir = decodeURIComponent(url.slice("file://".length)).replace(/\/*$/, "");
    if (!dir.startsWith("/")) return "needs an absolute path: file:///path/to/folder";
    return { kind: "file", dir, url: `file://${dir}/` };
  }
  return "expected gs://<bucket>/<folder>/ or file:///<folder>";
}

/**
 * The default destination, `gs://<state bucket>/etcd/<cluster>/`, when the stack's state backend is a
 * gs:// bucket; undefined otherwise.
 */
export function defaultDestination(backend: unknown, clusterName: string): string | undefined {
  if (typeof backend !== "string") return undefined;
  const match = /^gs:\/\/([^/?#]+)/.exec(backend);
  return match ? `gs://${match[1]}/etcd/${clusterName}/` : undefined;
}

/** Why `schedule` is not a five-field cron schedule Kubernetes takes, or undefined. */
export function scheduleProblem(schedule: string): string | undefined {
  const fields = schedule.trim().split(/\s+/);
  if (fields.length !== 5)
    return `has ${fields.length} field${fields.length === 1 ? "" : "s"}; a CronJob schedule has five (minute hour day month weekday)`;
  try {
    new Cron(schedule, { paused: true, timezone: "UTC" });
  } catch (error) {
    return `is not a cron schedule: ${error instanceof Error ? error.message : String(error)}`;
  }
  return undefined;
}

/** How many runs {@link schedulePeriodMs} looks at. */
const RUNS_SAMPLED = 400;

/**
 * The longest gap between two consecutive runs of `schedule` (UTC) over its next 400 runs from
 * 2026-01-01: a backup older than twice this is overdue whatever the day. `0 *\/6 * * *` gives
 * 6 hours, `0 3 * * 1-5` 3 days (the weekend).
 */
export function schedulePeriodMs(schedule: string): number {
  const runs = new Cron(schedule, { paused: true, timezone: "UTC" }).nextRuns(
    RUNS_SAMPLED,
    new Date(Date.UTC(2026, 0, 1)),
  );
  let longest = 0;
  for (let i = 1; i < runs.length; i++)
    longest = Math.max(longest, runs[i].getTime() - runs[i - 1].getTime());
  if (longest === 0) throw new Error(`the schedule ${JSON.stringify(schedule)} runs at most once`);
  return longest;
}
