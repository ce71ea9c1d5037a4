// `etcd snapshot <env>` and `etcd restore <env> --from FILE`. Restore follows Talos' disaster
// recovery procedure step by step, asking before each destructive one: wipe etcd's data on the
// control planes (all at once): EPHEMERAL, and the ETCD volume where Talos 1.14 keeps it on a
// partition of its own (which wiping EPHEMERAL leaves intact); wait until etcd waits for a
// bootstrap (`Preparing`) on all of them, bootstrap the first control plane from the snapshot, wait
// for every member to join. The nodes keep their STATE partition, so their machine config and the
// cluster's secrets stay the same; nothing in the Pulumi stack (the Secrets resource included) is
// touched.
import * as fs from "node:fs";
import * as path from "node:path";
import type { CliContext } from "../context";
import { ExitCode, type ExitCodeValue, UserError, errorReason } from "../errors";
import { controlPlanes } from "./cluster";
import { formatDuration } from "./clock";
import type { DayTwoDeps } from "./deps";
import { healthGate, quorum } from "./gates";
import { DEFAULT_RESTORE_WAIT_MS } from "./options";
import { type DayTwoSession, runDayTwo } from "./run";
import type { BackupObject } from "./backupStore";
import { requireBackupSettings, resolveRestoreSource, uploadSnapshot } from "./etcdBackups";
import { snapshotDir, takeSnapshot } from "./snapshots";
import type { ServiceStatus } from "./talosClient";

/** `etcd snapshot` as asked. */
interface SnapshotCommand {
  readonly env: string;
  readonly out?: string;
  readonly keepSnapshots: number;
  readonly installCli: boolean;
  /** Also encrypt it and upload it to the off-site backups' destination (etcdBackups). */
  readonly upload?: boolean;
}

/** Runs `etcd snapshot`: prints the file's path. */
export async function etcdSnapshot(
  ctx: CliContext,
  request: SnapshotCommand,
): Promise<ExitCodeValue> {
  // Before anything is taken: --upload needs the settings.
  const backups = request.upload
    ? requireBackupSettings(ctx.repoRoot, request.env, "etcd snapshot --upload")
    : undefined;
  let uploaded: BackupObject | undefined;
  const snapshot = await runDayTwo(
    ctx,
    { command: "etcd snapshot", env: request.env, installCli: request.installCli },
    async ({ client, cluster, deps }) => {
      const now = deps.clock.now();
      const taken = await takeSnapshot({
        client,
        cluster,
        repoRoot: ctx.repoRoot,
        now,
        keep: request.keepSnapshots,
        ...(request.out !== undefined ? { out: path.resolve(ctx.cwd, request.out) } : {}),
      });
      if (backups)
        uploaded = await uploadSnapshot(
          ctx,
          backups.settings,
          backups.clusterName,
          taken.file,
          now,
        );
      return taken;
    },
  );
  ctx.stdout.write(`${snapshot.file}\n`);
  if (uploaded) {
    ctx.stdout.write(`${uploaded.url}\n`);
    ctx.stderr.write(
      `uploaded to ${uploaded.url} (${uploaded.bytes} bytes, age-encrypted to etcdBackups.encryption.age)\n`,
    );
  }
  ctx.stderr.write(
    `etcd snapshot of ${request.env} from ${snapshot.from}: ${snapshot.bytes} bytes, mode 0600` +
      (snapshot.pruned.length > 0
        ? `; removed ${snapshot.pruned.length} older (keeping ${request.keepSnapshots})`
        : "") +
      `. It holds every Kubernetes Secret: keep it as safe as the state.\n`,
  );
  return ExitCode.ok;
}

/** `etcd restore` as asked. */
interface RestoreCommand {
  readonly env: string;
  readonly from: string;
  /** Confirm every step in advance. */
  readonly yes: boolean;
  /** Restore even though etcd has quorum (a drill; it rolls the cluster back to the snapshot). */
  readonly allowHealthy: boolean;
  readonly installCli: boolean;
  /** How long each wait may take. */
  readonly waitTimeoutMs?: number;
  readonly pollMs?: number;
  /** The age identity file an encrypted backup is decrypted with (else ETCD_BACKUP_AGE_IDENTITY). */
  readonly ageIdentity?: string;
}

/**
 * Whether the file is a `talosctl etcd snapshot` (etcd appends a SHA-256 to the database: its size
 * is 32 more than a multiple of 512) or a database copied raw from a node's disk, which Talos can
 * only restore with --recover-skip-hash-check.
 */
export function snapshotHasHash(bytes: number): boolean {
  return bytes % 512 === 32;
}

/** Runs `etcd restore`. */
export async function etcdRestore(
  ctx: CliContext,
  request: RestoreCommand,
): Promise<ExitCodeValue> {
  // A gs:// or file:// backup (or a local .age file) is fetched and decrypted into the local store.
  const file = await resolveRestoreSource(ctx, request.env, request.from, request.ageIdentity);
  if (!fs.existsSync(file) || !fs.statSync(file).isFile() || fs.statSync(file).size === 0) {
    throw new UserError({
      what: "--from",
      problem: "must be a non-empty etcd snapshot file",
      got: JSON.stringify(file),
      fix: `Use one taken by \`npm run platform -- etcd snapshot ${request.env}\` (in ${path.relative(ctx.cwd, snapshotDir(ctx.repoRoot, request.env)) || "."}/)`,
    });
  }
  return runDayTwo(
    ctx,
    { command: "etcd restore", env: request.env, installCli: request.installCli },
    (session) => restore(session, request, file),
  );
}

async function restore(
  session: DayTwoSession,
  request: RestoreCommand,
  file: string,
): Promise<ExitCodeValue> {
  const { deps, client, cluster, out } = session;
  const waitMs = request.waitTimeoutMs ?? DEFAULT_RESTORE_WAIT_MS;
  const pollMs = request.pollMs ?? 10_000;
  const cps = controlPlanes(cluster);
  const bytes = fs.statSync(file).size;
  const skipHashCheck = !snapshotHasHash(bytes);
  const fail = (problem: string, got: string, fix: string): never => {
    throw new UserError(
      { what: `etcd restore ${request.env}`, problem, got, fix },
      ExitCode.failed,
    );
  };
  const ask = async (question: string): Promise<void> => {
    if (request.yes) {
      out(`${question} yes (--yes)`);
      return;
    }
    if (!(await deps.confirm(question))) {
      throw new UserError(
        {
          what: `etcd restore ${request.env}`,
          problem: "stopped at your answer",
          got: JSON.stringify(question),
          fix: "Nothing further was done; rerun when ready",
        },
        ExitCode.refused,
      );
    }
  };

  out(
    `etcd restore ${request.env} from ${file} (${bytes} bytes, ${skipHashCheck ? "a raw database copy: restored with --recover-skip-hash-check" : "a talosctl snapshot with its checksum"})`,
  );

  // Step 0: every control plane must answer (a lost machine is recreated by `up` first), and etcd
  // must have lost quorum unless this is a drill. Each says where etcd keeps its data.
  const states = new Map<string, ServiceStatus>();
  const labels = new Map<string, readonly string[]>();
  const silent: string[] = [];
  for (const cp of cps) {
    try {
      await client.nodeVersion(cp.address);
      states.set(cp.name, await client.service(cp.address, "etcd"));
      labels.set(cp.name, etcdDataLabels(await client.etcdVolume(cp.address)));
    } catch (error) {
      silent.push(`${cp.name} (${errorReason(error)})`);
    }
  }
  if (silent.length > 0) {
    return fail(
      "every control plane must be up to restore",
      silent.join("; "),
      `Recreate lost machines first (docs/runbooks/lost-proxmox-host.md; npm run platform -- up ${request.env}), then rerun; nothing was changed`,
    );
  }
  const healthy = cps.filter((cp) => isHealthy(states.get(cp.name)));
  out(`  etcd now: ${cps.map((cp) => `${cp.name} ${describe(states.get(cp.name))}`).join(", ")}`);
  if (healthy.length >= quorum(cps.length) && !request.allowHealthy) {
    return fail(
      "etcd still has quorum; a restore would throw away everything written since the snapshot",
      `${healthy.length} of ${cps.length} members healthy`,
      "Replace a failed member instead (npm run platform -- replace-node). For a drill, add --allow-healthy; nothing was changed",
    );
  }

  // Step 1: wipe etcd's data where etcd is not already waiting for a bootstrap.
  const toWipe = cps.filter((cp) => states.get(cp.name)?.state !== "Preparing");
  if (toWipe.length > 0) {
    const dedicated = toWipe.filter((cp) => labels.get(cp.name)!.includes(ETCD_VOLUME));
    await ask(
      `Step 1 of 3: wipe the EPHEMERAL partition (etcd data) of ${toWipe.map((cp) => cp.name).join(", ")}` +
        (dedicated.length > 0
          ? ` and the dedicated ETCD volume of ${dedicated.map((cp) => cp.name).join(", ")}`
          : "") +
        " and reboot them? The cluster's Kubernetes state will be what the snapshot holds.",
    );
    // All at once: a member wiped while the others still hold quorum rejoins them as a new, empty
    // member when it boots (Talos' etcd addMember), and would never wait for the bootstrap.
    for (const cp of toWipe) {
      out(
        `  ${cp.name}: talosctl reset --graceful=false --reboot --system-labels-to-wipe=${labels.get(cp.name)!.join(",")}`,
      );
    }
    const wipes = await Promise.allSettled(
      toWipe.map((cp) => client.wipeVolumes(cp.address, labels.get(cp.name)!)),
    );
    const failed = toWipe.flatMap((cp, i) => {
      const wipe = wipes[i];
      return wipe.status === "rejected" ? [`${cp.name}: ${errorReason(wipe.reason)}`] : [];
    });
    if (failed.length > 0) {
      return fail(
        `wiping ${failed.length === 1 ? failed[0].split(":")[0] : `${failed.length} control planes`} failed`,
        JSON.stringify(failed.join("; ")),
        `Wiped: ${
          toWipe
            .filter((_, i) => wipes[i].status === "fulfilled")
            .map((n) => n.name)
            .join(", ") || "(none)"
        }. Fix it and rerun (nodes already Preparing are not wiped again)`,
      );
    }
  } else {
    out(
      "  Step 1 of 3: every control plane already waits for a bootstrap (Preparing); nothing to wipe",
    );
  }

  // Step 2: etcd waits for a bootstrap everywhere.
  out("  Step 2 of 3: waiting for etcd to reach Preparing on every control plane");
  const preparing = await waitUntil(deps, waitMs, pollMs, async () => {
    const pending: string[] = [];
    for (const cp of cps) {
      try {
        const status = await client.service(cp.address, "etcd");
        if (status.state !== "Preparing") pending.push(`${cp.name} ${describe(status)}`);
      } catch {
        pending.push(`${cp.name} unreachable`);
      }
    }
    return pending;
  });
  if (preparing.length > 0) {
    return fail(
      `etcd did not reach Preparing within ${formatDuration(waitMs)}`,
      preparing.join(", "),
      "Check the nodes (talosctl -n <node> service etcd; dmesg); rerun when every one is Preparing",
    );
  }

  // Step 3: bootstrap the first control plane from the snapshot.
  const first = cps[0];
  await ask(
    `Step 3 of 3: bootstrap etcd on ${first.name} (${first.address}) from ${path.basename(file)}?`,
  );
  out(
    `  ${first.name}: talosctl bootstrap --recover-from=${path.basename(file)}${skipHashCheck ? " --recover-skip-hash-check" : ""}`,
  );
  try {
    await client.bootstrapRecover(first.address, file, skipHashCheck);
  } catch (error) {
    return fail(
      `bootstrap on ${first.name} failed`,
      JSON.stringify(errorReason(error)),
      "Check etcd on it (talosctl -n <node> service etcd; logs etcd). While all are Preparing it can be rerun",
    );
  }

  // The others join the restored member (first as learners, promoted by Talos).
  out("  waiting for every control plane to rejoin etcd");
  const missing = await waitUntil(deps, waitMs, pollMs, async () => {
    try {
      const members = await client.etcdMembers(first.address);
      return cps
        .filter((cp) => !members.some((m) => m.hostname === cp.name && !m.learner))
        .map((cp) => `${cp.name} not a voting member yet`);
    } catch (error) {
      return [`members unreadable: ${errorReason(error)}`];
    }
  });
  if (missing.length > 0) {
    return fail(
      `etcd did not get every control plane back within ${formatDuration(waitMs)}`,
      missing.join(", "),
      "Watch it with talosctl etcd members / talosctl service etcd; a member still Preparing may need its etcd data (EPHEMERAL, and a dedicated ETCD volume) wiped again",
    );
  }
  const health = await healthGate(client, cluster, waitMs);
  if (!health.ok) {
    return fail(
      "the cluster is not healthy after the restore",
      JSON.stringify(health.reason),
      "Check talosctl health and kubectl get nodes",
    );
  }
  out(
    `etcd restore ${request.env}: done; ${cps.length} members, cluster healthy. Check workloads: kubectl get pods -A`,
  );
  return ExitCode.ok;
}

/** The volume Talos 1.14 can keep etcd's data on, as a partition of its own. */
const ETCD_VOLUME = "ETCD";

/**
 * What to wipe so etcd starts empty: EPHEMERAL always (etcd's data directory lives there by
 * default), and the ETCD volume too when it is a partition of its own, since wiping EPHEMERAL then
 * leaves etcd's data in place; that is what Talos 1.14's own etcd recovery test wipes
 * (internal/integration/api/etcd-recover.go). A directory-backed ETCD is wiped with EPHEMERAL, and
 * Talos refuses its label on its own.
 */
function etcdDataLabels(volumeType: string | undefined): readonly string[] {
  return volumeType === "partition" ? ["EPHEMERAL", ETCD_VOLUME] : ["EPHEMERAL"];
}

function isHealthy(status: ServiceStatus | undefined): boolean {
  return status?.state === "Running" && status.health === "OK";
}

function describe(status: ServiceStatus | undefined): string {
  return status ? `${status.state}${status.health ? `/${status.health}` : ""}` : "unknown";
}

/** Polls `check` until it returns nothing left to wait for, or the time is up; returns what is left. */
async function waitUntil(
  deps: DayTwoDeps,
  timeoutMs: number,
  pollMs: number,
  check: () => Promise<string[]>,
): Promise<string[]> {
  const start = deps.clock.now();
  for (;;) {
    const left = await check();
    if (left.length === 0 || deps.clock.now() - start >= timeoutMs) return left;
    await deps.clock.sleep(pollMs);
  }
}
