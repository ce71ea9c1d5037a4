// The day-two commands' option parsers and defaults, apart from the commands themselves: the command
// line registers them before any command runs, and must load nothing heavy to print `--help`.
import { parseVersion } from "../../components/talos/versions";
import { UserError } from "../errors";

/** How long each wait of a roll may take. */
export interface RolloutTimeouts {
  /** talosctl upgrade of one node, reboot included. */
  readonly upgradeMs: number;
  /** The node answering again after the upgrade command returned. */
  readonly nodeMs: number;
  /** Between two attempts to reach a node. */
  readonly pollMs: number;
  /** The cluster health check after each node or batch. */
  readonly healthMs: number;
}

/** Defaults: generous for a VM pulling a ~100 MB installer image over a home connection. */
export const DEFAULT_ROLLOUT_TIMEOUTS: RolloutTimeouts = {
  upgradeMs: 30 * 60_000,
  nodeMs: 15 * 60_000,
  pollMs: 10_000,
  healthMs: 10 * 60_000,
};

/**
 * How long `rollout` lets `kubectl drain` evict a node's pods: talosctl's own drain default
 * (nodedrain.DefaultDrainTimeout in Talos v1.13, used by `talosctl upgrade`).
 */
export const DEFAULT_DRAIN_TIMEOUT_MS = 5 * 60_000;

/** Default waits of `upgrade kubernetes`. */
export const DEFAULT_KUBERNETES_TIMEOUTS = {
  /** upgrade-k8s rolls every control-plane component and every kubelet, one node at a time. */
  upgradeMs: 60 * 60_000,
  healthMs: 10 * 60_000,
} as const;

/**
 * How long each wait of `etcd restore` may take: a control plane reaching Preparing after its
 * ephemeral wipe, every control plane back in etcd, the cluster's health.
 */
export const DEFAULT_RESTORE_WAIT_MS = 20 * 60_000;

/** How long the health check of preflight waits at most. */
export const PREFLIGHT_HEALTH_TIMEOUT_MS = 5 * 60_000;

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

/** The normalized `vX.Y.Z`, or a usage error. */
export function talosTarget(value: string): string {
  const version = parseVersion(value);
  if (!version) {
    throw new UserError({
      what: "--to",
      problem: "must be a Talos version like v1.14.1",
      got: JSON.stringify(value),
      fix: "Give the exact release, e.g. --to v1.14.1",
    });
  }
  return `v${version.version}`;
}

/** The normalized `X.Y.Z`, or a usage error. */
export function kubernetesTarget(value: string): string {
  const version = parseVersion(value);
  if (!version) {
    throw new UserError({
      what: "--to",
      problem: "must be a Kubernetes version like 1.37.1",
      got: JSON.stringify(value),
      fix: "Give the exact release, e.g. --to 1.37.1",
    });
  }
  return version.version;
}

/** The default and the drift job's threshold: a certificate with fewer days left fails `certs`. */
export const DEFAULT_MIN_DAYS = 30;

/** Parses `--min-days`: a whole number of days, 0 or more. */
export function parseMinDays(value: string): number {
  if (!/^\d+$/.test(value.trim())) {
    throw new UserError({
      what: "--min-days",
      problem: "must be a whole number of days",
      got: JSON.stringify(value),
      fix: `Give e.g. --min-days ${DEFAULT_MIN_DAYS}`,
    });
  }
  return Number(value.trim());
}
