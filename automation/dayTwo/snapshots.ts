// Local etcd snapshots: taken before every upgrade and on demand, kept under the git-ignored
// .pulumi-state/etcd-snapshots/<env>/ (mode 0700; each file 0600, since etcd holds every Kubernetes
// Secret), named after the cluster and the time, the last N kept.
import * as fs from "node:fs";
import * as path from "node:path";
import { stateDir } from "../backend";
import { ExitCode, UserError, errorReason } from "../errors";
import { PRIVATE_FILE_MODE, ensurePrivateDir } from "../files";
import type { DeployedCluster } from "./cluster";
import { controlPlanes } from "./cluster";
import type { TalosClient } from "./talosClient";

/** The folder of one environment's snapshots. */
export function snapshotDir(repoRoot: string, env: string): string {
  return path.join(stateDir(repoRoot), "etcd-snapshots", env);
}

/** `20260130T101500Z` */
export function timestamp(ms: number): string {
  return new Date(ms)
    .toISOString()
    .replace(/[-:]/g, "")
    .replace(/\.\d{3}Z$/, "Z");
}

function snapshotPattern(clusterName: string): RegExp {
  const escaped = clusterName.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  return new RegExp(`^${escaped}-\\d{8}T\\d{6}Z(-\\d+)?\\.snapshot$`);
}

/** This cluster's snapshots in a folder, newest first (the names sort by time). */
export function listSnapshots(dir: string, clusterName: string): string[] {
  if (!fs.existsSync(dir)) return [];
  const pattern = snapshotPattern(clusterName);
  return fs
    .readdirSync(dir)
    .filter((name) => pattern.test(name))
    .sort()
    .reverse()
    .map((name) => path.join(dir, name));
}

/** Deletes all but the newest `keep` snapshots of the cluster; returns what it deleted. */
export function pruneSnapshots(dir: string, clusterName: string, keep: number): string[] {
  const old = listSnapshots(dir, clusterName).slice(keep);
  for (const file of old) fs.rmSync(file, { force: true });
  return old;
}

/** Where and how a snapshot is taken. */
interface SnapshotRequest {
  readonly client: TalosClient;
  readonly cluster: DeployedCluster;
  readonly repoRoot: string;
  /** Milliseconds since the epoch, for the name. */
  readonly now: number;
  /** Keep this many in the store (ignored with `out`). */
  readonly keep: number;
  /** Write here instead of the store. */
  readonly out?: string;
}

/** A snapshot taken. */
export interface Snapshot {
  readonly file: string;
  /** The control plane it came from. */
  readonly from: string;
  readonly bytes: number;
  readonly pruned: readonly string[];
}

/**
 * Takes a snapshot from the first control plane that can give one (any healthy member has the same
 * data). Fails, touching nothing, when none can.
 */
export async function takeSnapshot(request: SnapshotRequest): Promise<Snapshot> {
  const { cluster } = request;
  const store = snapshotDir(request.repoRoot, cluster.stack.env);
  let file: string;
  if (request.out !== undefined) {
    file = request.out;
    fs.mkdirSync(path.dirname(file), { recursive: true });
  } else {
    ensurePrivateDir(store);
    const base = `${cluster.clusterName}-${timestamp(request.now)}`;
    file = path.join(store, `${base}.snapshot`);
    for (let n = 1; fs.existsSync(file); n++) file = path.join(store, `${base}-${n}.snapshot`);
  }
  const failures: string[] = [];
  for (const cp of controlPlanes(cluster)) {
    try {
      await request.client.etcdSnapshot(cp.address, file);
    } catch (error) {
      failures.push(`${cp.name}: ${errorReason(error)}`);
      continue;
    }
    const bytes = fs.existsSync(file) ? fs.statSync(file).size : 0;
    if (bytes === 0) {
      fs.rmSync(file, { force: true });
      failures.push(`${cp.name}: the snapshot file is empty`);
      continue;
    }
    fs.chmodSync(file, PRIVATE_FILE_MODE);
    const pruned =
      request.out === undefined ? pruneSnapshots(store, cluster.clusterName, request.keep) : [];
    return { file, from: cp.name, bytes, pruned };
  }
  throw new UserError(
    {
      what: `etcd snapshot of ${cluster.stack.env}`,
      problem: "no control plane gave a snapshot",
      got: failures.join("; "),
      fix: "Check etcd on the control planes (talosctl service etcd); nothing was changed",
    },
    ExitCode.failed,
  );
}
