// Off-site etcd backups from the CLI's side: the stack's `etcdBackups` settings as the program reads
// them, age encryption and decryption (the age-encryption package, by age's author: the same format
// talos-backup writes with filippo.io/age), the upload `etcd snapshot --upload` makes, what
// `etcd restore --from gs://…|file://…` fetches, the `etcd backups` listing and the newest backup's
// age `health` checks (overdue past twice the schedule's longest gap).
import * as fs from "node:fs";
import * as path from "node:path";
import type { z } from "zod";
import { type BackupDestination, parseDestination } from "../../components/config/etcdBackups";
import { normalizeEtcdBackups } from "../../components/config/normalize";
import { etcdBackupsSchema } from "../../components/config/schema";
import type { EtcdBackupsSpec } from "../../components/spec/types";
import type { CliContext } from "../context";
import { ExitCode, type ExitCodeValue, UserError } from "../errors";
import { PRIVATE_FILE_MODE, ensurePrivateDir } from "../files";
import { readStackFile, requireEnvironment, resolveLayer } from "../layers";
import {
  type BackupObject,
  type BackupStore,
  type ObjectRequest,
  backupStore,
} from "./backupStore";
import { formatDuration } from "./clock";
import type { NewestBackup } from "./health";
import { formatBytes } from "./health";
import { snapshotDir } from "./snapshots";

/** The environment variable an age identity (`AGE-SECRET-KEY-1…`) may be given in. */
export const AGE_IDENTITY_ENV = "ETCD_BACKUP_AGE_IDENTITY";

/** A context that may carry a fake Cloud Storage (tests). */
export interface BackupContext extends CliContext {
  readonly objects?: ObjectRequest;
}

/** The stack's backup settings and its cluster's name; undefined when `etcdBackups` is not set. */
export function readBackupSettings(
  repoRoot: string,
  env: string,
): { readonly settings: EtcdBackupsSpec; readonly clusterName: string } | undefined {
  const layer = resolveLayer(repoRoot, "foundation");
  requireEnvironment(layer, env);
  const stackFile = readStackFile(layer, env);
  const key = (name: string) => `${layer.project}:${name}`;
  const raw = stackFile.config[key("etcdBackups")];
  if (raw === undefined) return undefined;
  const display = path.basename(stackFile.path);
  const cluster = stackFile.config[key("cluster")] as { name?: unknown } | undefined;
  const clusterName = typeof cluster?.name === "string" ? cluster.name : undefined;
  const parsed = etcdBackupsSchema.safeParse(raw);
  const refuse = (problem: string, got: unknown): never => {
    throw new UserError({
      what: `${display} ${key("etcdBackups")}`,
      problem,
      got: JSON.stringify(got),
      fix: `Fix the stack file (npm run platform -- validate ${env} checks all of it)`,
    });
  };
  if (!parsed.success) {
    const issues = (parsed.error as z.ZodError).issues;
    return refuse(
      issues.map((i) => `etcdBackups.${i.path.join(".")}: ${i.message}`).join("; "),
      raw,
    );
  }
  if (clusterName === undefined) return refuse("needs cluster.name", cluster);
  const settings = normalizeEtcdBackups(parsed.data, clusterName, stackFile.config[key("backend")]);
  if (!settings)
    return refuse(
      "etcdBackups.destination: required: the state backend is not a gs:// bucket to default to",
      raw,
    );
  return { settings, clusterName };
}

/** The settings, or a refusal saying how to configure them. */
export function requireBackupSettings(repoRoot: string, env: string, command: string) {
  const found = readBackupSettings(repoRoot, env);
  if (!found) {
    throw new UserError({
      what: command,
      problem: "needs off-site backups configured: talos-platform:etcdBackups is not set",
      got: env,
      fix: "Add etcdBackups (schedule, encryption.age) to the stack file (docs/configuration.md)",
    });
  }
  return found;
}

/** The store of the settings' destination. */
export function storeFor(ctx: BackupContext, destination: BackupDestination): BackupStore {
  return backupStore(destination, ctx.env, ctx.objects);
}

/** Go's RFC 3339 of a UTC time, as talos-backup names its objects: `2026-12-03T06:00:00Z`. */
export function rfc3339(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z");
}

/** A backup's name, as talos-backup gives it: `<cluster>-<RFC 3339>.snap.age`. */
export function backupName(clusterName: string, ms: number): string {
  return `${clusterName}-${rfc3339(ms)}.snap.age`;
}

/** Encrypts to an age X25519 recipient. */
export async function encrypt(data: Uint8Array, recipient: string): Promise<Uint8Array> {
  const age = await import("age-encryption");
  const encrypter = new age.Encrypter();
  encrypter.addRecipient(recipient);
  return encrypter.encrypt(data);
}

/** The age identity: `--age-identity <file>` (age-keygen's file), else ETCD_BACKUP_AGE_IDENTITY. */
function ageIdentity(ctx: CliContext, identityFile: string | undefined): string {
  let text: string | undefined;
  let source: string;
  if (identityFile !== undefined) {
    source = identityFile;
    try {
      text = fs.readFileSync(path.resolve(ctx.cwd, identityFile), "utf8");
    } catch {
      throw new UserError({
        what: "--age-identity",
        problem: "cannot be read",
        got: JSON.stringify(identityFile),
        fix: "Give the file age-keygen wrote (its AGE-SECRET-KEY-1… line)",
      });
    }
  } else {
    source = AGE_IDENTITY_ENV;
    text = ctx.env[AGE_IDENTITY_ENV];
  }
  const identity = text
    ?.split("\n")
    .map((l) => l.trim())
    .find((l) => l.startsWith("AGE-SECRET-KEY-1"));
  if (!identity) {
    throw new UserError({
      what: "etcd restore",
      problem: "an encrypted backup needs the age identity (private key) it was encrypted to",
      got:
        identityFile !== undefined
          ? `${source} holds no AGE-SECRET-KEY-1… line`
          : `${AGE_IDENTITY_ENV} is not set`,
      fix: `Pass --age-identity <file> or set ${AGE_IDENTITY_ENV}; the identity is never stored with the backups`,
    });
  }
  return identity;
}

/** Decrypts an age file with the identity. */
async function decrypt(data: Uint8Array, identity: string, name: string): Promise<Uint8Array> {
  const age = await import("age-encryption");
  const decrypter = new age.Decrypter();
  decrypter.addIdentity(identity);
  try {
    return await decrypter.decrypt(data);
  } catch (error) {
    throw new UserError(
      {
        what: `etcd restore: ${name}`,
        problem: "cannot be decrypted with the age identity given",
        got: JSON.stringify(error instanceof Error ? error.message : String(error)),
        fix: "Use the identity whose public key is etcdBackups.encryption.age",
      },
      ExitCode.failed,
    );
  }
}

/** Encrypts and uploads a snapshot file; returns the object written. */
export async function uploadSnapshot(
  ctx: BackupContext,
  settings: EtcdBackupsSpec,
  clusterName: string,
  file: string,
  now: number,
): Promise<BackupObject> {
  const encrypted = await encrypt(fs.readFileSync(file), settings.ageRecipient);
  return storeFor(ctx, settings.destination).put(backupName(clusterName, now), encrypted);
}

/**
 * The local snapshot file `--from` names: a path as before; a gs:// or file:// backup fetched (and
 * decrypted when it ends in .age) into the local store, mode 0600.
 */
export async function resolveRestoreSource(
  ctx: BackupContext,
  env: string,
  from: string,
  identityFile: string | undefined,
): Promise<string> {
  const remote = /^(gs|file):\/\//.test(from);
  let name: string;
  let data: Uint8Array;
  if (remote) {
    const slash = from.lastIndexOf("/");
    name = from.slice(slash + 1);
    const destination = parseDestination(from.slice(0, slash + 1));
    if (typeof destination === "string" || name === "") {
      throw new UserError({
        what: "--from",
        problem: "must name one backup: gs://<bucket>/<folder>/<name> or file:///<folder>/<name>",
        got: JSON.stringify(from),
        fix: `List them with npm run platform -- etcd backups ${env}`,
      });
    }
    data = await storeFor(ctx, destination).get(name);
  } else {
    const file = path.resolve(ctx.cwd, from);
    if (!from.endsWith(".age")) return file;
    name = path.basename(file);
    data = fs.readFileSync(file);
  }
  if (name.endsWith(".zst") || name.endsWith(".zst.age")) {
    throw new UserError({
      what: "--from",
      problem:
        "is zstd-compressed (talos-backup's ENABLE_COMPRESSION), which restore does not unpack",
      got: JSON.stringify(name),
      fix: "Decrypt and unpack it (age -d, zstd -d) and pass the snapshot file",
    });
  }
  const plain = name.endsWith(".age")
    ? await decrypt(data, ageIdentity(ctx, identityFile), name)
    : data;
  const store = snapshotDir(ctx.repoRoot, env);
  ensurePrivateDir(store);
  const local = path.join(store, `${name.replace(/\.age$/, "").replace(/[:]/g, "")}.restore`);
  fs.writeFileSync(local, plain, { mode: PRIVATE_FILE_MODE });
  fs.chmodSync(local, PRIVATE_FILE_MODE);
  return local;
}

/** Age in whole hours or days. */
function age(ms: number): string {
  const hours = Math.floor(ms / 3_600_000);
  return hours < 48 ? `${hours}h` : `${Math.floor(hours / 24)}d`;
}

/** `etcd backups` as asked. */
interface BackupsCommand {
  readonly env: string;
  readonly json: boolean;
  /** Delete the backups older than etcdBackups.retentionDays (never the newest). */
  readonly prune: boolean;
}

/** Runs `etcd backups`: the list, newest first; 8 when the newest is overdue or there is none. */
export async function etcdBackups(
  ctx: BackupContext,
  request: BackupsCommand,
): Promise<ExitCodeValue> {
  const { settings } = requireBackupSettings(ctx.repoRoot, request.env, "etcd backups");
  const store = storeFor(ctx, settings.destination);
  const now = ctx.clock();
  const objects = await store.list();
  const retentionMs = settings.retentionDays * 86_400_000;
  const expired = objects.slice(1).filter((o) => now - o.at.getTime() > retentionMs);
  if (request.prune) for (const o of expired) await store.remove(o.name);
  const kept = request.prune ? objects.filter((o) => !expired.includes(o)) : objects;
  const overdueMs = 2 * settings.periodMs;
  if (request.json) {
    ctx.stdout.write(
      `${JSON.stringify(
        {
          destination: store.url,
          schedule: settings.schedule,
          overdueAfter: formatDuration(overdueMs),
          backups: kept.map((o) => ({
            name: o.name,
            url: o.url,
            at: o.at.toISOString(),
            bytes: o.bytes,
            ageMs: now - o.at.getTime(),
            expired: expired.includes(o),
          })),
          ...(request.prune ? { pruned: expired.map((o) => o.url) } : {}),
        },
        null,
        2,
      )}\n`,
    );
  } else {
    const rows = kept.map((o) => [
      o.name,
      o.at.toISOString(),
      formatBytes(o.bytes),
      age(now - o.at.getTime()) + (expired.includes(o) ? " (past retention)" : ""),
    ]);
    const header = ["NAME", "TIME", "SIZE", "AGE"];
    const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
    for (const row of [header, ...rows])
      ctx.stdout.write(
        `${row.map((c, i) => (i === row.length - 1 ? c : c.padEnd(widths[i]))).join("  ")}\n`,
      );
  }
  if (request.prune && expired.length > 0)
    ctx.stderr.write(
      `etcd backups ${request.env}: removed ${expired.length} older than ${settings.retentionDays} days\n`,
    );
  const newest = kept[0];
  if (!newest) {
    ctx.stderr.write(`etcd backups ${request.env}: none in ${store.url}\n`);
    return ExitCode.unhealthy;
  }
  if (now - newest.at.getTime() > overdueMs) {
    ctx.stderr.write(
      `etcd backups ${request.env}: the newest is ${age(now - newest.at.getTime())} old, more than twice the schedule (${settings.schedule}: overdue after ${formatDuration(overdueMs)})\n`,
    );
    return ExitCode.unhealthy;
  }
  ctx.stderr.write(
    `etcd backups ${request.env}: ${kept.length} in ${store.url}; the newest is ${age(now - newest.at.getTime())} old\n`,
  );
  return ExitCode.ok;
}

/** `health`'s hook: the newest backup of the environment's destination, with when it is overdue. */
export function newestBackupOf(ctx: BackupContext): NewestBackup {
  return async (env) => {
    const found = readBackupSettings(ctx.repoRoot, env);
    if (!found) return { unavailable: "not configured" };
    const { settings } = found;
    const [newest] = await storeFor(ctx, settings.destination).list();
    const overdueAfterMs = 2 * settings.periodMs;
    if (!newest) return { unavailable: `none in ${settings.destination.url}`, overdueAfterMs };
    return { at: newest.at, where: newest.url, overdueAfterMs };
  };
}
