// The pieces behind issue 24's redaction and filesystem hardening, one by one: the redactor, the
// empty lease, the state folder's mode, a filesystem error's message, stack files that cannot be read.
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
// node:fs itself (the namespace import above is a read-only view of it), to simulate a full disk.
import nodeFs from "node:fs";
import * as path from "node:path";
import { runCli } from "../../automation/cli";
import { ExitCode, reportError } from "../../automation/errors";
import { ensurePrivateDir, fileMode } from "../../automation/files";
import { MAX_STACK_FILE_BYTES } from "../../automation/layers";
import {
  acquireLease,
  fileLeaseStore,
  leaseStoreFor,
  lockPath,
  parseHolder,
} from "../../automation/lock";
import { REDACTED, Redactor } from "../../automation/redaction";
import { MemorySink, cleanupRepos, makeRepo, testContext } from "./helpers";

describe("the redactor", () => {
  it("replaces a value as is, JSON-escaped, base64 and URL-encoded, and each long line of a key", () => {
    const redactor = new Redactor();
    const key =
      '-----BEGIN KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END KEY-----\n"quoted"';
    redactor.add(key);
    const json = JSON.stringify(key).slice(1, -1);
    const base64 = Buffer.from(key).toString("base64");
    const text = `a ${key} b ${json} c ${base64} d ${encodeURIComponent(key)} e MIIEvQIBADANBgkqhkiG9w0BAQEFAASC`;
    assert.equal(
      redactor.redact(text),
      `a ${REDACTED} b ${REDACTED} c ${REDACTED} d ${REDACTED} e ${REDACTED}`,
    );
  });

  it("leaves short values alone: they are no credential and would mangle every line", () => {
    const redactor = new Redactor();
    redactor.add("true");
    redactor.add("dev");
    redactor.add(undefined);
    assert.equal(redactor.redact("dev is true"), "dev is true");
  });

  it("knows the credential variables of the environment and a backend URL's password", () => {
    const redactor = new Redactor();
    redactor.addEnvironment({
      PROXMOX_VE_API_TOKEN: "root@pam!ci=0000-1111",
      BWS_ACCESS_TOKEN: "0.bws-access-token",
      PULUMI_BACKEND_URL: "postgres://ops:s3cr3t-pass@db/state?sslmode=require",
      HOME: "/home/operator",
    });
    assert.equal(
      redactor.redact(
        "root@pam!ci=0000-1111 0.bws-access-token s3cr3t-pass /home/operator require",
      ),
      `${REDACTED} ${REDACTED} ${REDACTED} /home/operator require`,
    );
  });

  it("wraps a sink, keeping whether it is a terminal and its width", () => {
    const sink = new MemorySink(true, 120);
    const redactor = new Redactor();
    const wrapped = redactor.wrap(sink);
    redactor.add("found-after-wrapping");
    wrapped.write("token found-after-wrapping\n");
    assert.equal(sink.text, `token ${REDACTED}\n`);
    assert.equal(wrapped.isTTY, true);
    assert.equal(wrapped.columns, 120);
  });
});

describe("filesystem hardening", () => {
  afterEach(cleanupRepos);

  it("takes over a lease left empty by a failed write (a full disk), after a grace period", async () => {
    const file = lockPath(path.join(makeRepo(), ".pulumi-state", "locks"), "talos-platform", "dev");
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, "");
    const held = await acquireLease({
      store: fileLeaseStore(file),
      target: "foundation/dev",
      command: "up dev",
      releaseOnExit: false,
      emptyGraceMs: 10,
    });
    assert.equal(parseHolder(fs.readFileSync(file, "utf8")).id, held.holder.id);
    await held.release();
  });

  it("removes its lease file when writing it fails (a full disk), so no empty lease is left", async () => {
    const file = lockPath(path.join(makeRepo(), ".pulumi-state", "locks"), "talos-platform", "dev");
    // The module's fs is node:fs itself: a full disk is simulated at the flush of the lease.
    const realFsync = nodeFs.fsyncSync;
    const full = Object.assign(new Error("ENOSPC: no space left on device, fsync"), {
      code: "ENOSPC",
    });
    nodeFs.fsyncSync = () => {
      throw full;
    };
    try {
      await assert.rejects(fileLeaseStore(file).create("{}\n"), /ENOSPC/);
    } finally {
      nodeFs.fsyncSync = realFsync;
    }
    assert.equal(fs.existsSync(file), false);
  });

  it("does not take over a lease that gets its content within the grace period", async () => {
    const file = lockPath(path.join(makeRepo(), ".pulumi-state", "locks"), "talos-platform", "dev");
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, "");
    const holder = { pid: 1, host: "elsewhere", command: "up dev", startedAt: "x", renewedAt: "x" };
    setTimeout(() => fs.writeFileSync(file, JSON.stringify(holder)), 20);
    await assert.rejects(
      acquireLease({
        store: fileLeaseStore(file),
        target: "foundation/dev",
        command: "up dev",
        releaseOnExit: false,
        emptyGraceMs: 300,
      }),
      /another run of the platform CLI holds this stack; got pid 1 on elsewhere/,
    );
  });

  it("tightens a state folder created earlier with 0755 to 0700", () => {
    const dir = path.join(makeRepo(), ".pulumi-state");
    fs.mkdirSync(dir, { mode: 0o755 });
    fs.chmodSync(dir, 0o755);
    ensurePrivateDir(dir);
    assert.equal(fileMode(dir), 0o700);
  });

  it("tightens a 0755 .pulumi-state when a run takes its lease there, whatever the backend (a preview of a gs:// stack)", async () => {
    const repo = makeRepo();
    const dir = path.join(repo, ".pulumi-state");
    fs.mkdirSync(dir, { mode: 0o755 });
    fs.chmodSync(dir, 0o755);
    const target = { project: "talos-platform", env: "dev", backendUrl: "s3://bucket" };
    const { store, local } = leaseStoreFor(repo, target, {});
    assert.equal(local, true);
    assert.equal(await store.create("{}"), true);
    assert.equal(fileMode(dir), 0o700);
  });

  it("reports a filesystem error as the operator's problem naming the path, exit 2", () => {
    const error = Object.assign(new Error("ENOSPC: no space left on device, write"), {
      code: "ENOSPC",
      syscall: "write",
      path: "/repo/.pulumi-state/passphrase",
    });
    const sink = new MemorySink();
    assert.equal(reportError(error, sink), ExitCode.usage);
    assert.equal(
      sink.text,
      "/repo/.pulumi-state/passphrase: could not be used (write); got ENOSPC. The disk is full: free some space and rerun\n",
    );
  });

  it("refuses a stack file too large to be one, before parsing it; `stacks` lists the others", async () => {
    const root = makeRepo({
      foundation: {
        project: "talos-platform",
        stacks: { huge: "config: {}\n", dev: "config: {}\n" },
      },
    });
    fs.writeFileSync(
      path.join(root, "Pulumi.huge.yaml"),
      `config:\n  x: "${"a".repeat(MAX_STACK_FILE_BYTES)}"\n`,
    );
    const ctx = testContext({ repoRoot: root });
    assert.equal(await runCli(["stacks", "--layer", "foundation"], ctx), ExitCode.usage);
    assert.match(ctx.stdout.text, /^ {2}dev +backend /m);
    assert.match(
      ctx.stdout.text,
      /huge {2}not listed: .*Pulumi\.huge\.yaml: is too large for a stack file \(at most 1 MiB\); got \d+ bytes\./,
    );
  });

  it("lists the other stacks when one stack file cannot be read", async () => {
    const root = makeRepo({
      foundation: {
        project: "talos-platform",
        stacks: { dev: "config: {}\n", broken: "config: {}\n" },
      },
    });
    // Not a file the CLI can read (root reads any mode, so a folder stands in for it).
    fs.rmSync(path.join(root, "Pulumi.broken.yaml"));
    fs.mkdirSync(path.join(root, "Pulumi.broken.yaml"));
    const ctx = testContext({ repoRoot: root });
    assert.equal(await runCli(["stacks", "--layer", "foundation"], ctx), ExitCode.usage);
    assert.match(ctx.stdout.text, /^ {2}dev +backend /m);
    assert.match(
      ctx.stdout.text,
      /broken {2}not listed: .*Pulumi\.broken\.yaml: must be a regular file/,
    );
  });
});
