// Where off-site etcd backups live, as the CLI reads and writes them: a gs:// prefix through Cloud
// Storage's JSON API (authorised as the engine is for gs://, automation/gcs.ts), or a file:// folder
// standing in for the bucket (tests, the engine tier, a lab). Uploads never replace an object
// (ifGenerationMatch=0; a file opened with O_EXCL), as the in-cluster job cannot either.
import * as fs from "node:fs";
import * as path from "node:path";
import type { BackupDestination } from "../../components/config/etcdBackups";
import type { Env } from "../env";
import { ExitCode, UserError } from "../errors";
import { PRIVATE_FILE_MODE, ensurePrivateDir } from "../files";
import { gcsEndpoint } from "../gcs";

/** One backup in the store. */
export interface BackupObject {
  /** The object's name under the prefix (`demo-2026-12-03T06:00:00Z.snap.age`). */
  readonly name: string;
  /** Its full address (`gs://b/etcd/demo/<name>`, `file:///…/<name>`). */
  readonly url: string;
  /** When it was written. */
  readonly at: Date;
  readonly bytes: number;
}

/** A destination's objects. */
export interface BackupStore {
  readonly url: string;
  /** Every object under the prefix, newest first. */
  list(): Promise<BackupObject[]>;
  /** Writes a new object; refuses to replace one. */
  put(name: string, data: Uint8Array): Promise<BackupObject>;
  /** Reads an object by name. */
  get(name: string): Promise<Uint8Array>;
  /** Deletes an object by name. */
  remove(name: string): Promise<void>;
}

const newestFirst = (a: BackupObject, b: BackupObject) =>
  b.at.getTime() - a.at.getTime() || b.name.localeCompare(a.name);

/** A folder standing in for the bucket. */
export function fileStore(dir: string): BackupStore {
  const url = `file://${dir}/`;
  const object = (name: string): BackupObject => {
    const stat = fs.statSync(path.join(dir, name));
    return { name, url: `${url}${name}`, at: stat.mtime, bytes: stat.size };
  };
  return {
    url,
    async list() {
      if (!fs.existsSync(dir)) return [];
      return fs
        .readdirSync(dir, { withFileTypes: true })
        .filter((e) => e.isFile() && !e.name.startsWith("."))
        .map((e) => object(e.name))
        .sort(newestFirst);
    },
    async put(name, data) {
      ensurePrivateDir(dir);
      // O_EXCL: an existing backup is never replaced.
      try {
        fs.writeFileSync(path.join(dir, name), data, { mode: PRIVATE_FILE_MODE, flag: "wx" });
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
        throw new UserError(
          {
            what: `uploading ${name} (${url})`,
            problem: "a backup of that name exists, and backups are never replaced",
            got: name,
            fix: "Wait a second and take another",
          },
          ExitCode.failed,
        );
      }
      return object(name);
    },
    async get(name) {
      return fs.readFileSync(path.join(dir, name));
    },
    async remove(name) {
      fs.rmSync(path.join(dir, name), { force: true });
    },
  };
}

/** One request to Cloud Storage's JSON API with a binary body; its status and body. */
export type ObjectRequest = (
  method: "GET" | "POST" | "DELETE",
  url: string,
  body?: Uint8Array,
) => Promise<{ readonly status: number; readonly body: Buffer }>;

/** Requests with the engine's gs:// credentials (GOOGLE_CREDENTIALS, else application default). */
export function objectRequester(env: Env): ObjectRequest {
  let send: Promise<(url: string, init: RequestInit) => Promise<Response>> | undefined;
  const authorized = () =>
    (send ??= (async () => {
      if (env.STORAGE_EMULATOR_HOST) return (url: string, init: RequestInit) => fetch(url, init);
      const { GoogleAuth } = await import("google-auth-library");
      const auth = new GoogleAuth({
        scopes: ["https://www.googleapis.com/auth/devstorage.read_write"],
        ...(env.GOOGLE_CREDENTIALS ? { credentials: JSON.parse(env.GOOGLE_CREDENTIALS) } : {}),
      });
      const client = await auth.getClient();
      return async (url: string, init: RequestInit) => {
        const headers = await client.getRequestHeaders(url);
        return fetch(url, {
          ...init,
          headers: { ...Object.fromEntries(headers), ...init.headers },
        });
      };
    })());
  return async (method, url, body) => {
    const response = await (
      await authorized()
    )(url, {
      method,
      ...(body !== undefined
        ? { body, headers: { "Content-Type": "application/octet-stream" } }
        : { headers: {} }),
      signal: AbortSignal.timeout(300_000),
    });
    return { status: response.status, body: Buffer.from(await response.arrayBuffer()) };
  };
}

/** A gs:// prefix through the JSON API. */
export function gcsStore(
  destination: Extract<BackupDestination, { kind: "gs" }>,
  request: ObjectRequest,
  env: Env,
): BackupStore {
  const { bucket, prefix } = destination;
  const api = `${gcsEndpoint(env)}/storage/v1/b/${encodeURIComponent(bucket)}/o`;
  const fail = (what: string, status: number, body: Buffer): never => {
    throw new UserError(
      {
        what: `${what} (${destination.url})`,
        problem: `Cloud Storage answered ${status}`,
        got: JSON.stringify(body.toString("utf8").slice(0, 300)),
        fix: "Check the credentials (GOOGLE_CREDENTIALS or gcloud auth application-default login) and their access to the bucket",
      },
      ExitCode.failed,
    );
  };
  const toObject = (item: { name: string; size?: string; timeCreated?: string }): BackupObject => ({
    name: item.name.slice(prefix.length),
    url: `gs://${bucket}/${item.name}`,
    at: new Date(item.timeCreated ?? 0),
    bytes: Number(item.size ?? 0),
  });
  const objectUrl = (name: string) => `${api}/${encodeURIComponent(prefix + name)}`;
  return {
    url: destination.url,
    async list() {
      const objects: BackupObject[] = [];
      let pageToken: string | undefined;
      do {
        const query = new URLSearchParams({ prefix, delimiter: "/" });
        if (pageToken) query.set("pageToken", pageToken);
        const answer = await request("GET", `${api}?${query}`);
        if (answer.status !== 200) fail("listing the backups", answer.status, answer.body);
        const page = JSON.parse(answer.body.toString("utf8")) as {
          items?: { name: string; size?: string; timeCreated?: string }[];
          nextPageToken?: string;
        };
        objects.push(...(page.items ?? []).map(toObject));
        pageToken = page.nextPageToken;
      } while (pageToken);
      return objects.sort(newestFirst);
    },
    async put(name, data) {
      const query = new URLSearchParams({
        uploadType: "media",
        name: prefix + name,
        // Only if no object of that name exists: a backup is never replaced.
        ifGenerationMatch: "0",
      });
      const base = gcsEndpoint(env);
      const answer = await request(
        "POST",
        `${base}/upload/storage/v1/b/${encodeURIComponent(bucket)}/o?${query}`,
        data,
      );
      // 412: an object of that name exists (ifGenerationMatch=0).
      if (answer.status !== 200) fail(`uploading ${name}`, answer.status, answer.body);
      return toObject(JSON.parse(answer.body.toString("utf8")));
    },
    async get(name) {
      const answer = await request("GET", `${objectUrl(name)}?alt=media`);
      if (answer.status !== 200) fail(`downloading ${name}`, answer.status, answer.body);
      return answer.body;
    },
    async remove(name) {
      const answer = await request("DELETE", objectUrl(name));
      if (answer.status !== 204 && answer.status !== 404)
        fail(`deleting ${name}`, answer.status, answer.body);
    },
  };
}

/** The store of a destination. */
export function backupStore(
  destination: BackupDestination,
  env: Env,
  request?: ObjectRequest,
): BackupStore {
  return destination.kind === "file"
    ? fileStore(destination.dir)
    : gcsStore(destination, request ?? objectRequester(env), env);
}
