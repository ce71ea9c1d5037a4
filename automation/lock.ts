// One lease per stack, held by every command that changes it (preview, up, refresh, destroy and the
// day-two changes), so two runs never drive one stack at once, from one machine or from two. The
// lease lives next to the stack's state where the backend can hold it (a file:// folder, a gs://
// bucket: created only if absent, so exactly one run wins), else in this checkout. Its holder renews
// it while the run lasts; a lease left by a run that is gone (a dead process of this host, or one not
// renewed for LEASE_TTL_MS) is taken over. The engine's own lock covers only an engine run; the
// lease also covers the steps between engine runs (a roll of the nodes, an etcd member leaving).
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { randomBytes } from "node:crypto";
import { stateDir } from "./backend";
import type { CliContext } from "./context";
import type { Env } from "./env";
import { type GcsRequest, gcsEndpoint, gcsRequester } from "./gcs";
import { ExitCode, UserError } from "./errors";
import { ensurePrivateDir } from "./files";
import { processIsAlive } from "./processes";

export { processIsAlive };
export type { GcsRequest };

/** A lease not renewed for this long belongs to a run that is gone. */
export const LEASE_TTL_MS = 3 * 60_000;
/** How often the holder renews it. */
export const LEASE_RENEW_MS = 30_000;

/** Who holds a lease; written into it as JSON. */
export interface LockHolder {
  readonly pid: number;
  readonly host: string;
  /** The command line that took it, e.g. `up staging --layer foundation`. */
  readonly command: string;
  /** ISO time it was taken. */
  readonly startedAt: string;
  /** ISO time it was last renewed. */
  readonly renewedAt: string;
  /** Tells this run's lease from another's taken at the same time. */
  readonly id: string;
}

/** Where one stack's lease is kept: create-if-absent and compare-and-delete, nothing more. */
export interface LeaseStore {
  /** Where it is, for messages: a path or a gs:// URL. */
  readonly where: string;
  /** Creates the lease with `body`; false when one exists. */
  create(body: string): Promise<boolean>;
  /** The lease as stored, with a version that changes on every write; undefined when none. */
  read(): Promise<{ readonly body: string; readonly version: string } | undefined>;
  /** Replaces the lease if it is still at `version`; false otherwise. */
  replace(body: string, version: string): Promise<boolean>;
  /** Deletes the lease if it is still at `version`; false otherwise. */
  remove(version: string): Promise<boolean>;
  /** Deletes the lease at once, from an exit handler (file stores only). */
  removeNow?(body: string): void;
}

/** The folder of leases of the embedded backend (and of any stack whose backend cannot hold one). */
export function locksDir(repoRoot: string): string {
  return path.join(stateDir(repoRoot), "locks");
}

/** The lease of one stack in a lease folder: `<project>/<env>.lock`. */
export function lockPath(dir: string, project: string, env: string): string {
  return path.join(dir, project, `${env}.lock`);
}

/**
 * A lease kept as a file: created exclusively, replaced and deleted only if unchanged. `privateRoot`
 * (the checkout's `.pulumi-state`, which may hold state and the generated passphrase) is made or
 * tightened to 0700 first, also when an older version created it 0755.
 */
export function fileLeaseStore(file: string, privateRoot?: string): LeaseStore {
  const readNow = (at: string) => {
    try {
      return fs.readFileSync(at, "utf8");
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      throw error;
    }
  };
  /** Moves the lease aside (atomic); keeps it there if it is still `version`, else puts it back. */
  const takeIfUnchanged = (version: string): string | undefined => {
    const aside = `${file}.${process.pid}.${randomBytes(4).toString("hex")}`;
    try {
      fs.renameSync(file, aside);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      throw error;
    }
    if (readNow(aside) === version) return aside;
    try {
      fs.linkSync(aside, file); // fails if another run created a lease meanwhile: it holds it now
    } catch {
      // not ours either way
    }
    fs.rmSync(aside, { force: true });
    return undefined;
  };
  return {
    where: file,
    async create(body) {
      if (privateRoot !== undefined) ensurePrivateDir(privateRoot);
      ensurePrivateDir(path.dirname(file));
      let fd: number;
      try {
        fd = fs.openSync(file, "wx", 0o644);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === "EEXIST") return false;
        throw error;
      }
      try {
        // fsync and close report a full disk too (delayed allocation): only then is the lease there.
        try {
          fs.writeFileSync(fd, body);
          fs.fsyncSync(fd);
        } finally {
          fs.closeSync(fd);
        }
      } catch (error) {
        // A full disk must not leave an empty lease behind that locks the stack.
        fs.rmSync(file, { force: true });
        throw error;
      }
      return true;
    },
    async read() {
      const body = readNow(file);
      // The content is the version: a renewal always changes renewedAt.
      return body === undefined ? undefined : { body, version: body };
    },
    async replace(body, version) {
      const aside = takeIfUnchanged(version);
      if (aside === undefined) return false;
      const created = await this.create(body);
      fs.rmSync(aside, { force: true });
      return created;
    },
    async remove(version) {
      const aside = takeIfUnchanged(version);
      if (aside === undefined) return false;
      fs.rmSync(aside, { force: true });
      return true;
    },
    removeNow(body) {
      if (readNow(file) === body) fs.rmSync(file, { force: true });
    },
  };
}

/**
 * A lease kept as a Cloud Storage object: written only if absent (`ifGenerationMatch=0`), replaced
 * and deleted only at the generation read (`ifGenerationMatch=<generation>`), so every change is
 * atomic on the bucket, from any machine.
 */
export function gcsLeaseStore(
  bucket: string,
  object: string,
  request: GcsRequest,
  env: Env,
): LeaseStore {
  const base = gcsEndpoint(env);
  const name = encodeURIComponent(object);
  const upload = (generation: string) =>
    `${base}/upload/storage/v1/b/${bucket}/o?uploadType=media&name=${name}&ifGenerationMatch=${generation}`;
  const fail = (what: string, status: number, body: string): never => {
    throw new UserError({
      what: `lease gs://${bucket}/${object}`,
      problem: `could not be ${what} (HTTP ${status})`,
      got: JSON.stringify(body.split("\n")[0].slice(0, 200)),
      fix: "Check the credentials the backend uses (GOOGLE_CREDENTIALS, or gcloud auth application-default login) and that they may write objects in the bucket",
    });
  };
  return {
    where: `gs://${bucket}/${object}`,
    async create(body) {
      const answer = await request("POST", upload("0"), body);
      if (answer.status === 412) return false;
      if (answer.status >= 300) fail("created", answer.status, answer.body);
      return true;
    },
    async read() {
      const answer = await request("GET", `${base}/storage/v1/b/${bucket}/o/${name}?alt=media`);
      if (answer.status === 404) return undefined;
      if (answer.status >= 300 || answer.generation === undefined) {
        return fail("read", answer.status, answer.body);
      }
      return { body: answer.body, version: answer.generation };
    },
    async replace(body, version) {
      const answer = await request("POST", upload(version), body);
      if (answer.status === 412 || answer.status === 404) return false;
      if (answer.status >= 300) fail("renewed", answer.status, answer.body);
      return true;
    },
    async remove(version) {
      const answer = await request(
        "DELETE",
        `${base}/storage/v1/b/${bucket}/o/${name}?ifGenerationMatch=${version}`,
      );
      if (answer.status === 412 || answer.status === 404) return false;
      if (answer.status >= 300) fail("removed", answer.status, answer.body);
      return true;
    },
  };
}

/** A stack to lease, and where its state lives. */
export interface LeaseTarget {
  readonly project: string;
  readonly env: string;
  /** The stack's backend URL (`file://…`, `gs://…`, …). */
  readonly backendUrl: string;
}

/**
 * Where a stack's lease is kept: beside its state for file:// and gs:// backends, else in this
 * checkout (with `local` set: only runs from this checkout are kept apart).
 */
export function leaseStoreFor(
  repoRoot: string,
  target: LeaseTarget,
  env: Env,
  gcs: GcsRequest = gcsRequester(env),
): { readonly store: LeaseStore; readonly local: boolean } {
  const url = target.backendUrl;
  const local = () => ({
    store: fileLeaseStore(
      lockPath(locksDir(repoRoot), target.project, target.env),
      stateDir(repoRoot),
    ),
    local: true,
  });
  if (url.startsWith("file://")) {
    const dir = url.slice("file://".length).replace(/\?.*$/, "");
    if (path.resolve(dir) === stateDir(repoRoot)) return { ...local(), local: false };
    const file = lockPath(path.join(dir, ".platform-locks"), target.project, target.env);
    return { store: fileLeaseStore(file), local: false };
  }
  const gs = /^gs:\/\/([^/?]+)\/?([^?]*)/.exec(url);
  if (gs) {
    const prefix = gs[2].replace(/\/$/, "");
    const object = `${prefix ? `${prefix}/` : ""}.platform-locks/${target.project}/${target.env}.lock`;
    return { store: gcsLeaseStore(gs[1], object, gcs, env), local: false };
  }
  return local();
}

/** A held lease. */
export interface StackLock {
  /** Where the lease is. */
  readonly where: string;
  readonly holder: LockHolder;
  /** Whether another run took the lease over (it was not renewed in time): stop before the next step. */
  lost(): boolean;
  /** Gives the lease up if it is still ours; safe to call twice. */
  release(): Promise<void>;
}

/** How a lease is taken; the clock, timers and liveness check are injectable for tests. */
export interface LeaseOptions {
  readonly store: LeaseStore;
  /** The stack, for messages (`foundation/staging`). */
  readonly target: string;
  readonly command: string;
  readonly pid?: number;
  readonly host?: string;
  readonly now?: () => Date;
  readonly isAlive?: (pid: number) => boolean;
  /** How often to renew the lease while held. @default LEASE_RENEW_MS */
  readonly renewEveryMs?: number;
  /** How long an empty lease may stay empty before it is taken over. @default EMPTY_LEASE_GRACE_MS */
  readonly emptyGraceMs?: number;
  /** Release on process exit as well, where the store can do it synchronously (default true). */
  readonly releaseOnExit?: boolean;
}

/** The holder written in a lease; a half-written or foreign one reads as someone unknown. */
export function parseHolder(body: string): LockHolder {
  try {
    const parsed = JSON.parse(body) as Partial<LockHolder>;
    if (typeof parsed.pid === "number" && typeof parsed.host === "string") {
      const startedAt = String(parsed.startedAt ?? "?");
      return {
        pid: parsed.pid,
        host: parsed.host,
        command: String(parsed.command ?? "?"),
        startedAt,
        renewedAt: String(parsed.renewedAt ?? startedAt),
        id: String(parsed.id ?? ""),
      };
    }
  } catch {
    // fall through: held by someone unknown, stale only once its file is old enough
  }
  return { pid: -1, host: "unknown", command: "unknown", startedAt: "?", renewedAt: "?", id: "" };
}

/** Whether a lease belongs to a run that is gone. */
function isStale(holder: LockHolder, options: LeaseOptions, now: Date): boolean {
  const host = options.host ?? os.hostname();
  const isAlive = options.isAlive ?? processIsAlive;
  if (holder.host === host && holder.pid > 0) return !isAlive(holder.pid);
  const renewed = Date.parse(holder.renewedAt);
  return Number.isFinite(renewed) && now.getTime() - renewed > LEASE_TTL_MS;
}

/**
 * How long an empty lease is given to get its content: a run writes it right after creating it,
 * so one still empty after this is a write that failed (a full disk, a crash) and is taken over.
 */
export const EMPTY_LEASE_GRACE_MS = 2_000;

/** A lease without content: nobody can say whose it is or whether it is renewed. */
function isEmptyLease(body: string): boolean {
  return body.trim() === "";
}

/**
 * The lease found empty, read again after the grace period: as it was (still empty, the same
 * version: a write that failed), with the content its run wrote meanwhile, or undefined if gone.
 */
async function afterEmptyGrace(
  options: LeaseOptions,
  found: { readonly body: string; readonly version: string },
): Promise<{ readonly body: string; readonly version: string } | undefined> {
  await new Promise((resolve) => setTimeout(resolve, options.emptyGraceMs ?? EMPTY_LEASE_GRACE_MS));
  const again = await options.store.read();
  if (again === undefined) return undefined;
  // Emptied again by another run after its own write: not the lease first seen, so not stale.
  if (again.version !== found.version && isEmptyLease(again.body)) {
    return { body: '{"pid":-1,"host":"unknown"}', version: again.version };
  }
  return again;
}

function lockedError(options: LeaseOptions, holder: LockHolder | undefined): UserError {
  const who = holder
    ? `pid ${holder.pid} on ${holder.host} running "${holder.command}" since ${holder.startedAt}`
    : "a run that just finished";
  return new UserError(
    {
      what: options.target,
      problem: "another run of the platform CLI holds this stack",
      got: who,
      fix: `Wait for it to finish. A lease nobody renews is taken over after ${LEASE_TTL_MS / 60_000} minutes; if that run is gone for sure, delete ${options.store.where}`,
    },
    ExitCode.locked,
  );
}

/**
 * Takes the lease of a stack, or refuses (exit 4) naming its holder. A stale lease (see
 * {@link isStale}) is taken over; only one of several runs doing so at once wins.
 */
export async function acquireLease(options: LeaseOptions): Promise<StackLock> {
  const now = options.now ?? (() => new Date());
  const started = now().toISOString();
  let holder: LockHolder = {
    pid: options.pid ?? process.pid,
    host: options.host ?? os.hostname(),
    command: options.command,
    startedAt: started,
    renewedAt: started,
    id: randomBytes(8).toString("hex"),
  };
  let body = `${JSON.stringify(holder)}\n`;
  let current: { body: string; version: string } | undefined;
  // Two attempts: the second follows the removal of a stale lease.
  for (let attempt = 0; attempt < 2; attempt++) {
    if (await options.store.create(body)) {
      current = await options.store.read();
      break;
    }
    const found = await options.store.read();
    if (found === undefined) continue; // released between our attempt and the read
    const settled = isEmptyLease(found.body) ? await afterEmptyGrace(options, found) : found;
    if (settled === undefined) continue; // released meanwhile
    const other = parseHolder(settled.body);
    // Still empty and unchanged after the grace period: a write that failed, nobody's lease.
    const stale = isEmptyLease(settled.body) || isStale(other, options, now());
    if (!stale || !(await options.store.remove(settled.version))) {
      throw lockedError(options, other);
    }
  }
  if (current === undefined || parseHolder(current.body).id !== holder.id) {
    throw lockedError(options, current && parseHolder(current.body));
  }
  let version = current.version;
  let lost = false;
  let released = false;
  let timer: NodeJS.Timeout | undefined;
  const onExit = () => {
    if (!released) options.store.removeNow?.(body);
  };
  if (options.releaseOnExit ?? true) process.on("exit", onExit);
  {
    timer = setInterval(() => {
      const renewed: LockHolder = { ...holder, renewedAt: now().toISOString() };
      const next = `${JSON.stringify(renewed)}\n`;
      options.store.replace(next, version).then(
        async (ok) => {
          if (!ok) {
            lost = true;
            return;
          }
          holder = renewed;
          body = next;
          version = (await options.store.read())?.version ?? version;
        },
        () => {
          // A failed renewal is tried again at the next tick; the TTL leaves room for several.
        },
      );
    }, options.renewEveryMs ?? LEASE_RENEW_MS);
    timer.unref();
  }
  return {
    where: options.store.where,
    get holder() {
      return holder;
    },
    lost: () => lost,
    release: async () => {
      if (released) return;
      released = true;
      if (timer) clearInterval(timer);
      process.off("exit", onExit);
      if (!lost) await options.store.remove(version);
    },
  };
}

/**
 * The lease of a stack for this run of the CLI (its process and host): beside the stack's state, or
 * in this checkout for a run that writes no state (a preview: it needs no write access to the
 * backend, only the stack file kept from another run of this checkout).
 */
export async function lockStack(
  ctx: Pick<CliContext, "repoRoot" | "host" | "env" | "gcs">,
  target: LeaseTarget & { readonly layer: string },
  command: string,
  options: { readonly writesState: boolean } = { writesState: true },
): Promise<StackLock> {
  const store = options.writesState
    ? leaseStoreFor(ctx.repoRoot, target, ctx.env, ctx.gcs).store
    : fileLeaseStore(
        lockPath(locksDir(ctx.repoRoot), target.project, target.env),
        stateDir(ctx.repoRoot),
      );
  return acquireLease({
    store,
    target: `${target.layer}/${target.env}`,
    command,
    pid: ctx.host.pid,
    host: ctx.host.hostname,
    isAlive: (pid) => ctx.host.isAlive(pid),
  });
}

/** Runs `fn` holding the stack's lease (see {@link lockStack}). */
export async function withStackLock<T>(
  ctx: Pick<CliContext, "repoRoot" | "host" | "env" | "gcs">,
  target: LeaseTarget & { readonly layer: string },
  command: string,
  fn: (lock: StackLock) => Promise<T>,
): Promise<T> {
  const lock = await lockStack(ctx, target, command);
  try {
    return await fn(lock);
  } finally {
    await lock.release();
  }
}
