// Off-site etcd backups through the real command line, with a file:// folder standing in for the
// bucket: `etcd snapshot --upload`, `etcd backups` (listing, staleness, --prune) and
// `etcd restore --from` a backup (decrypted with the age identity); the gs:// store's requests.
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as path from "node:path";
import { runCli } from "../../automation/cli";
import { type ObjectRequest, gcsStore } from "../../automation/dayTwo/backupStore";
import { AGE_IDENTITY_ENV, backupName, encrypt } from "../../automation/dayTwo/etcdBackups";
import { backupProblem } from "../../automation/dayTwo/health";
import { ExitCode } from "../../automation/errors";
import { cleanupRepos } from "../automation/helpers";
import { TEST_AGE_IDENTITY, TEST_AGE_RECIPIENT } from "../fixtures";
import { dayTwoFixture, stackYaml } from "./helpers";

const HOUR = 3_600_000;
const NOW = Date.UTC(2026, 0, 30, 10, 15, 0);

/** The fixture's stack with etcdBackups to a folder of the repository. */
function backupFixture(schedule = "0 */6 * * *", extra = "") {
  const f = dayTwoFixture({
    stack:
      stackYaml() +
      [
        "  talos-platform:etcdBackups:",
        `    schedule: "${schedule}"`,
        "    destination: file://BACKUPS",
        `    encryption: { age: ${TEST_AGE_RECIPIENT} }`,
        extra,
        "",
      ].join("\n"),
  });
  const dir = path.join(f.root, "bucket", "etcd", "staging");
  fs.writeFileSync(
    f.stackFile,
    fs.readFileSync(f.stackFile, "utf8").replace("file://BACKUPS", `file://${dir}`),
  );
  return { ...f, dir };
}

async function decrypt(data: Uint8Array): Promise<Buffer> {
  const age = await import("age-encryption");
  const d = new age.Decrypter();
  d.addIdentity(TEST_AGE_IDENTITY);
  return Buffer.from(await d.decrypt(data));
}

/** A backup written `hoursAgo` before the fixture's now. */
async function writeBackup(dir: string, hoursAgo: number, content = Buffer.alloc(512 + 32, 7)) {
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, backupName("staging", NOW - hoursAgo * HOUR));
  fs.writeFileSync(file, await encrypt(content, TEST_AGE_RECIPIENT));
  const at = new Date(NOW - hoursAgo * HOUR);
  fs.utimesSync(file, at, at);
  return file;
}

describe("etcd snapshot --upload", () => {
  afterEach(cleanupRepos);

  it("keeps the local snapshot and writes it age-encrypted, 0600, under the destination as talos-backup names them", async () => {
    const f = backupFixture();
    assert.equal(
      await runCli(["etcd", "snapshot", "staging", "--upload"], f.ctx),
      ExitCode.ok,
      f.ctx.stderr.text,
    );
    const [local, remote] = f.ctx.stdout.text.trim().split("\n");
    const object = path.join(f.dir, "staging-2026-01-30T10:15:00Z.snap.age");
    assert.equal(remote, `file://${object}`);
    assert.equal(fs.statSync(object).mode & 0o777, 0o600);
    const stored = fs.readFileSync(object);
    assert.ok(stored.subarray(0, 21).toString().startsWith("age-encryption.org/v1"), "an age file");
    assert.deepEqual(await decrypt(stored), fs.readFileSync(local));
    assert.match(f.ctx.stderr.text, /uploaded to file:\/\/\S+ \(\d+ bytes, age-encrypted/);
  });

  it("never replaces a backup of the same second", async () => {
    const f = backupFixture();
    await runCli(["etcd", "snapshot", "staging", "--upload"], f.ctx);
    assert.equal(await runCli(["etcd", "snapshot", "staging", "--upload"], f.ctx), ExitCode.failed);
    assert.match(f.ctx.stderr.text, /a backup of that name exists, and backups are never replaced/);
    assert.equal(fs.readdirSync(f.dir).length, 1);
  });

  it("is refused, taking nothing, without etcdBackups in the stack file", async () => {
    const f = dayTwoFixture();
    assert.equal(await runCli(["etcd", "snapshot", "staging", "--upload"], f.ctx), ExitCode.usage);
    assert.match(
      f.ctx.stderr.text,
      /etcd snapshot --upload: needs off-site backups configured: talos-platform:etcdBackups is not set/,
    );
    assert.equal(
      f.talos.log.some((l) => l.startsWith("snapshot")),
      false,
    );
  });

  it("names the stack-file key of a broken setting", async () => {
    const f = backupFixture("every hour");
    assert.equal(await runCli(["etcd", "snapshot", "staging", "--upload"], f.ctx), ExitCode.usage);
    assert.match(
      f.ctx.stderr.text,
      /talos-platform:etcdBackups: etcdBackups\.schedule: has 2 fields/,
    );
  });
});

describe("etcd backups", () => {
  afterEach(cleanupRepos);

  it("lists name, time, size and age, newest first; exit 0 while the newest is within twice the schedule", async () => {
    const f = backupFixture();
    await writeBackup(f.dir, 30);
    await writeBackup(f.dir, 5);
    assert.equal(
      await runCli(["etcd", "backups", "staging"], f.ctx),
      ExitCode.ok,
      f.ctx.stderr.text,
    );
    const lines = f.ctx.stdout.text.trim().split("\n");
    assert.match(lines[0], /^NAME\s+TIME\s+SIZE\s+AGE$/);
    assert.match(
      lines[1],
      /^staging-2026-01-30T05:15:00Z\.snap\.age\s+2026-01-30T05:15:00\.000Z\s+\d+ B\s+5h$/,
    );
    assert.match(lines[2], /^staging-2026-01-29T04:15:00Z\.snap\.age\s+.*\s+30h$/);
    assert.match(f.ctx.stderr.text, /2 in file:\/\/\S+; the newest is 5h old/);
  });

  it("exits 8 when the newest is older than twice the schedule, or there is none", async () => {
    const f = backupFixture();
    await writeBackup(f.dir, 13);
    assert.equal(await runCli(["etcd", "backups", "staging"], f.ctx), ExitCode.unhealthy);
    assert.match(
      f.ctx.stderr.text,
      /the newest is 13h old, more than twice the schedule \(0 \*\/6 \* \* \*: overdue after 12h/,
    );
    const empty = backupFixture();
    assert.equal(
      await runCli(["etcd", "backups", "staging", "--json"], empty.ctx),
      ExitCode.unhealthy,
    );
    assert.deepEqual(JSON.parse(empty.ctx.stdout.text).backups, []);
  });

  it("--prune deletes those past retentionDays, never the newest", async () => {
    const f = backupFixture("0 0 * * 0", "    retentionDays: 7");
    const old = await writeBackup(f.dir, 24 * 10);
    const older = await writeBackup(f.dir, 24 * 20);
    assert.equal(
      await runCli(["etcd", "backups", "staging", "--prune"], f.ctx),
      ExitCode.ok,
      f.ctx.stderr.text,
    );
    assert.ok(fs.existsSync(old), "the newest stays whatever its age");
    assert.equal(fs.existsSync(older), false);
    assert.match(f.ctx.stderr.text, /removed 1 older than 7 days/);
  });
});

describe("etcd restore --from a backup", () => {
  afterEach(cleanupRepos);

  /** Quorum lost: two of three control planes' etcd down. */
  const lostQuorum = (f: ReturnType<typeof backupFixture>) => {
    f.talos.byName("cp-2").etcd = { state: "Running", health: "Fail" };
    f.talos.byName("cp-3").etcd = { state: "Finished", health: "" };
  };

  it("fetches a file:// backup, decrypts it with --age-identity into a 0600 local file and bootstraps from it", async () => {
    const f = backupFixture();
    lostQuorum(f);
    const content = Buffer.alloc(1024 + 32, 9);
    const backup = await writeBackup(f.dir, 1, content);
    const identity = path.join(f.root, "age.key");
    fs.writeFileSync(identity, `# created: test\n${TEST_AGE_IDENTITY}\n`, { mode: 0o600 });
    const code = await runCli(
      [
        "etcd",
        "restore",
        "staging",
        "--from",
        `file://${backup}`,
        "--age-identity",
        identity,
        "--yes",
      ],
      f.ctx,
    );
    assert.equal(code, ExitCode.ok, f.ctx.stderr.text);
    const recover = f.talos.log.find((l) => l.startsWith("bootstrap cp-1 --recover-from="))!;
    const file = recover.replace("bootstrap cp-1 --recover-from=", "");
    assert.deepEqual(fs.readFileSync(file), content);
    assert.equal(fs.statSync(file).mode & 0o777, 0o600);
    assert.match(f.ctx.stdout.text, /a talosctl snapshot with its checksum/);
  });

  it("takes the identity from ETCD_BACKUP_AGE_IDENTITY, and refuses before any step without one", async () => {
    const f = backupFixture();
    lostQuorum(f);
    const backup = await writeBackup(f.dir, 1);
    const refused = await runCli(
      ["etcd", "restore", "staging", "--from", `file://${backup}`, "--yes"],
      f.ctx,
    );
    assert.equal(refused, ExitCode.usage);
    assert.match(
      f.ctx.stderr.text,
      /an encrypted backup needs the age identity .* ETCD_BACKUP_AGE_IDENTITY is not set/,
    );
    assert.equal(
      f.talos.log.some((l) => l.startsWith("wipe") || l.startsWith("bootstrap")),
      false,
    );
    const g = backupFixture();
    lostQuorum(g);
    const again = await writeBackup(g.dir, 1);
    const ctx = Object.assign(g.ctx, {
      env: { ...g.ctx.env, [AGE_IDENTITY_ENV]: TEST_AGE_IDENTITY },
    });
    assert.equal(
      await runCli(["etcd", "restore", "staging", "--from", `file://${again}`, "--yes"], ctx),
      ExitCode.ok,
      g.ctx.stderr.text,
    );
  });

  it("refuses a backup the identity cannot open, changing nothing", async () => {
    const f = backupFixture();
    lostQuorum(f);
    const age = await import("age-encryption");
    const other = await age.generateX25519Identity();
    const backup = await writeBackup(f.dir, 1);
    const ctx = Object.assign(f.ctx, { env: { ...f.ctx.env, [AGE_IDENTITY_ENV]: other } });
    assert.equal(
      await runCli(["etcd", "restore", "staging", "--from", `file://${backup}`, "--yes"], ctx),
      ExitCode.failed,
    );
    assert.match(f.ctx.stderr.text, /cannot be decrypted with the age identity given/);
    assert.equal(
      f.talos.log.some((l) => l.startsWith("wipe")),
      false,
    );
  });
});

describe("the gs:// store", () => {
  const destination = {
    kind: "gs" as const,
    bucket: "demo-state",
    prefix: "etcd/demo/",
    url: "gs://demo-state/etcd/demo/",
  };

  it("uploads under the prefix only if no object of the name exists, and lists newest first", async () => {
    const calls: string[] = [];
    const request: ObjectRequest = async (method, url, body) => {
      calls.push(`${method} ${url}${body ? ` (${body.length} bytes)` : ""}`);
      const item = (name: string, at: string) => ({
        name: `etcd/demo/${name}`,
        size: "100",
        timeCreated: at,
      });
      if (method === "POST")
        return {
          status: 200,
          body: Buffer.from(JSON.stringify(item("a.snap.age", "2026-01-30T10:00:00Z"))),
        };
      return {
        status: 200,
        body: Buffer.from(
          JSON.stringify({
            items: [
              item("old.snap.age", "2026-01-29T00:00:00Z"),
              item("new.snap.age", "2026-01-30T00:00:00Z"),
            ],
          }),
        ),
      };
    };
    const store = gcsStore(destination, request, {});
    const written = await store.put("a.snap.age", new Uint8Array(3));
    assert.equal(written.url, "gs://demo-state/etcd/demo/a.snap.age");
    assert.equal(
      calls[0],
      "POST https://storage.googleapis.com/upload/storage/v1/b/demo-state/o?uploadType=media&name=etcd%2Fdemo%2Fa.snap.age&ifGenerationMatch=0 (3 bytes)",
    );
    const listed = await store.list();
    assert.deepEqual(
      listed.map((o) => o.name),
      ["new.snap.age", "old.snap.age"],
    );
    assert.equal(
      calls[1],
      "GET https://storage.googleapis.com/storage/v1/b/demo-state/o?prefix=etcd%2Fdemo%2F&delimiter=%2F",
    );
  });

  it("says what Cloud Storage answered when it refuses", async () => {
    const store = gcsStore(
      destination,
      async () => ({ status: 403, body: Buffer.from("denied") }),
      {},
    );
    await assert.rejects(
      store.list(),
      /listing the backups \(gs:\/\/demo-state\/etcd\/demo\/\): Cloud Storage answered 403/,
    );
  });
});

describe("health's backup age", () => {
  it("is a problem past twice the schedule's gap, or when none exists; nothing when not configured", () => {
    const at = new Date(NOW - 13 * HOUR);
    assert.match(
      backupProblem({ at, where: "gs://b/x", overdueAfterMs: 12 * HOUR }, NOW)!,
      /^etcd backups: the newest \(gs:\/\/b\/x\) is 13h old, more than twice the schedule \(12h\)$/,
    );
    assert.equal(
      backupProblem({ at, where: "gs://b/x", overdueAfterMs: 14 * HOUR }, NOW),
      undefined,
    );
    assert.equal(
      backupProblem({ unavailable: "none in gs://b/x/", overdueAfterMs: HOUR }, NOW),
      "etcd backups: none in gs://b/x/",
    );
    assert.equal(backupProblem({ unavailable: "not configured" }, NOW), undefined);
  });
});
