// certs, health and etcd defrag against the fake cluster, with real certificates (test/fixtures/certs:
// CAs valid ten years and client certificates one year, as Talos issues them; the apid fixture is a
// year too, where Talos issues 24-hour ones: their threshold has its own case).
import { strict as assert } from "node:assert";
import { X509Certificate, createPrivateKey, generateKeyPairSync } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { runCli } from "../../automation/cli";
import {
  daysLeft,
  expiringCertificates,
  formatCertificates,
  kubeconfigCertificates,
  reportCertificate,
  talosconfigCertificates,
} from "../../automation/dayTwo/certificates";
import { clientIdentity } from "../../automation/dayTwo/certs";
import { parseMinDays } from "../../automation/dayTwo/options";
import type { PeerCertificateReader } from "../../automation/dayTwo/peerCertificate";
import {
  parseEtcdAlarms,
  parseEtcdStatus,
  parseHumanBytes,
} from "../../automation/dayTwo/etcdStatusOutput";
import { memberProblems } from "../../automation/dayTwo/health";
import { backupName, encrypt } from "../../automation/dayTwo/etcdBackups";
import { ExitCode } from "../../automation/errors";
import { TEST_AGE_RECIPIENT } from "../fixtures";
import { cleanupRepos } from "../automation/helpers";
import { dayTwoFixture, foundationOutputs } from "./helpers";

const DAY = 24 * 3_600_000;
const pem = (name: string) =>
  fs.readFileSync(path.join(__dirname, "..", "fixtures", "certs", `${name}.pem`), "utf8");
const b64 = (name: string) => Buffer.from(pem(name)).toString("base64");
const notAfter = (name: string) => new Date(new X509Certificate(pem(name)).validTo).getTime();

/** A talosconfig as the provider exports it (base64 PEM fields); the key is not a real one. */
const TALOSCONFIG = [
  "context: staging",
  "contexts:",
  "  staging:",
  "    endpoints: [192.0.2.11]",
  `    ca: ${b64("talos-ca")}`,
  `    crt: ${b64("talos-client")}`,
  `    key: ${Buffer.from("not-a-key").toString("base64")}`,
  "",
].join("\n");

const KUBECONFIG = [
  "apiVersion: v1",
  "kind: Config",
  "clusters:",
  "  - name: staging",
  "    cluster:",
  "      server: https://api.staging.example.net:6443",
  `      certificate-authority-data: ${b64("kubernetes-ca")}`,
  "users:",
  "  - name: admin@staging",
  "    user:",
  `      client-certificate-data: ${b64("kubeconfig-client")}`,
  "      client-key-data: c2VjcmV0",
  "contexts:",
  "  - name: admin@staging",
  "    context: { cluster: staging, user: admin@staging }",
  "current-context: admin@staging",
  "",
].join("\n");

/** The fixture with real certificates in the outputs and every node presenting the apid one. */
function certFixture(daysBeforeClientExpiry: number) {
  const outputs = foundationOutputs();
  outputs.talosconfig = { value: TALOSCONFIG, secret: true };
  outputs.kubeconfig = { value: KUBECONFIG, secret: true };
  const f = dayTwoFixture({ outputs });
  f.clock.time = notAfter("talos-client") - daysBeforeClientExpiry * DAY - 3_600_000;
  const handshakes: string[] = [];
  const unreachable = new Set<string>();
  const reader: PeerCertificateReader = async (host, port) => {
    handshakes.push(`${host}:${port}`);
    if (unreachable.has(host)) throw new Error(`connect ECONNREFUSED ${host}:${port}`);
    return new X509Certificate(pem("apid"));
  };
  Object.assign(f.ctx.dayTwo!, { peerCertificate: reader });
  return { ...f, handshakes, unreachable };
}

describe("certificates: parsing and thresholds", () => {
  it("counts whole days left, rounded down, negative once expired", () => {
    const at = Date.UTC(2027, 0, 31);
    assert.equal(daysLeft(new Date(at), at - 30 * DAY), 30);
    assert.equal(daysLeft(new Date(at), at - 30 * DAY + 1), 29);
    assert.equal(daysLeft(new Date(at), at + DAY), -1);
  });

  it("reads the talosconfig's client certificate and CA, and the kubeconfig's", () => {
    const now = notAfter("talos-client") - 100 * DAY;
    const talos = talosconfigCertificates(TALOSCONFIG, now);
    assert.deepEqual(
      talos.map((c) => [c.name, c.subject]),
      [
        ["talosconfig client", "O=os:admin"],
        ["Talos CA", "O=talos"],
      ],
    );
    assert.ok(talos[0].daysLeft >= 99 && talos[0].daysLeft <= 100);
    assert.ok(talos[1].daysLeft > 3000);
    const kube = kubeconfigCertificates(KUBECONFIG, now);
    assert.deepEqual(
      kube.map((c) => [c.name, c.subject]),
      [
        ["kubeconfig client", "O=system:masters, CN=admin"],
        ["Kubernetes CA", "O=kubernetes"],
      ],
    );
  });

  it("names the field that holds no certificate, and never echoes a secret", () => {
    assert.throws(
      () => talosconfigCertificates(TALOSCONFIG.replace(/crt: .*/, "crt: c2VjcmV0"), 0),
      /talosconfig staging\.crt: is not a base64-encoded PEM certificate/,
    );
    assert.throws(
      () => talosconfigCertificates("key: c2VjcmV0-private", 0),
      (e: Error) => /has no current context/.test(e.message) && !e.message.includes("c2VjcmV0"),
    );
    assert.throws(
      () => kubeconfigCertificates("{{ not yaml client-key-data: secret", 0),
      (e: Error) => /not a YAML mapping/.test(e.message) && !e.message.includes("secret"),
    );
  });

  it("a certificate under the threshold is expiring; --min-days takes whole days only", () => {
    const now = notAfter("talos-client") - 29.5 * DAY;
    const reports = talosconfigCertificates(TALOSCONFIG, now);
    assert.deepEqual(
      expiringCertificates(reports, 30).map((c) => c.name),
      ["talosconfig client"],
    );
    assert.deepEqual(expiringCertificates(reports, 29), []);
    assert.equal(parseMinDays("45"), 45);
    assert.throws(() => parseMinDays("30d"), /--min-days: must be a whole number of days/);
    assert.throws(() => parseMinDays("-1"), /--min-days/);
  });

  it("a node API certificate (24 h, reissued every 12 by Talos) is expiring only once its renewal is overdue", () => {
    const apid = new X509Certificate(pem("apid"));
    const at = (hoursLeft: number) =>
      reportCertificate(
        "cp-1 API (apid)",
        "node API (apid)",
        apid,
        notAfter("apid") - hoursLeft * 3_600_000,
      );
    assert.deepEqual(expiringCertificates([at(20), at(12), at(6)], 30), []);
    assert.deepEqual(
      expiringCertificates([at(5), at(-1)], 30).map((c) => c.hoursLeft),
      [5, -1],
    );
    const table = formatCertificates([at(20), at(3), at(-2)], [], 30);
    assert.match(table, /cp-1 API \(apid\).* 0 +ok/);
    assert.match(table, /renewal overdue \(3h left\)/);
    assert.match(table, /expired/);
  });
});

describe("certs <env>", () => {
  afterEach(cleanupRepos);

  it("offers the talosconfig's Ed25519 key as OpenSSL reads it (Talos labels it ED25519 PRIVATE KEY)", () => {
    const pkcs8 = generateKeyPairSync("ed25519")
      .privateKey.export({ format: "pem", type: "pkcs8" })
      .toString();
    // As siderolabs/crypto writes it: PKCS#8 DER under its own label, which OpenSSL refuses.
    const talosKey = pkcs8.replace(/PRIVATE KEY-----/g, "ED25519 PRIVATE KEY-----");
    assert.throws(() => createPrivateKey(talosKey), /unsupported/);
    const talosconfig = [
      "context: c",
      "contexts:",
      "  c:",
      `    crt: ${b64("talos-client")}`,
      `    key: ${Buffer.from(talosKey).toString("base64")}`,
    ].join("\n");
    const identity = clientIdentity(talosconfig);
    assert.ok(identity);
    assert.equal(createPrivateKey(identity.key).asymmetricKeyType, "ed25519");
    assert.equal(identity.cert, pem("talos-client"));
  });

  it("lists every certificate with its days left, each node's through a handshake to :50000", async () => {
    const f = certFixture(200);
    assert.equal(await runCli(["certs", "staging"], f.ctx), ExitCode.ok, f.ctx.stderr.text);
    assert.deepEqual(f.handshakes, [
      "192.0.2.11:50000",
      "192.0.2.12:50000",
      "192.0.2.13:50000",
      "192.0.2.21:50000",
      "192.0.2.22:50000",
      "192.0.2.23:50000",
    ]);
    const out = f.ctx.stdout.text;
    assert.match(out, /^CERTIFICATE\s+SUBJECT\s+NOT AFTER\s+DAYS LEFT\s+STATUS/);
    assert.match(out, /talosconfig client\s+O=os:admin\s+\S+Z\s+200\s+ok/);
    assert.match(out, /cp-1 API \(apid\)\s+O=talos/);
    assert.match(out, /Kubernetes CA\s+O=kubernetes/);
    assert.match(
      f.ctx.stderr.text,
      /certs staging: 10 certificates, the soonest expires in 200 days/,
    );
    assert.ok(!out.includes("c2VjcmV0") && !out.includes("not-a-key"));
  });

  it("exits 7 under --min-days (default 30), naming the certificates and how to renew", async () => {
    const f = certFixture(20);
    assert.equal(await runCli(["certs", "staging"], f.ctx), ExitCode.expiring);
    assert.match(f.ctx.stdout.text, /talosconfig client .* 20\s+under 30 days/);
    assert.match(f.ctx.stderr.text, /certificates? under 30 days: talosconfig client \(20 days\)/);
    assert.match(f.ctx.stderr.text, /npm run platform -- up staging renews the kubeconfig's/);
    const g = certFixture(40);
    assert.equal(await runCli(["certs", "staging", "--min-days", "45"], g.ctx), ExitCode.expiring);
  });

  it("--json lists each with notAfter, daysLeft and expiring", async () => {
    const f = certFixture(200);
    assert.equal(await runCli(["certs", "staging", "--json"], f.ctx), ExitCode.ok);
    const report = JSON.parse(f.ctx.stdout.text);
    assert.equal(report.minDays, 30);
    const client = report.certificates.find(
      (c: { name: string }) => c.name === "talosconfig client",
    );
    assert.equal(client.daysLeft, 200);
    assert.equal(client.expiring, false);
    assert.equal(client.notAfter, new Date(notAfter("talos-client")).toISOString());
  });

  it("exits 1 when a node's certificate could not be read", async () => {
    const f = certFixture(200);
    f.unreachable.add("192.0.2.22");
    assert.equal(await runCli(["certs", "staging"], f.ctx), ExitCode.failed);
    assert.match(f.ctx.stdout.text, /w-2 API \(apid\)\s+\?\s+\?\s+\?\s+unread/);
    assert.match(f.ctx.stdout.text, /w-2 API \(apid\): .*ECONNREFUSED/);
  });
});

describe("talosctl etcd status and alarm list", () => {
  const STATUS = [
    "NODE          MEMBER             DB SIZE   IN USE            LEADER             RAFT INDEX   RAFT TERM   RAFT APPLIED INDEX   LEARNER   PROTOCOL   STORAGE   ERRORS",
    "192.0.2.11    a49c021e76e707db   17 MB     4.8 MB (29.00%)   ecebb05b59a776f1   53391        4           53391                false     3.6.0      3.6.0     ",
    "",
  ].join("\n");

  it("reads the member, sizes (go-humanize SI), ratio, leader and learner", () => {
    assert.deepEqual(parseEtcdStatus(STATUS), {
      memberId: "a49c021e76e707db",
      dbSizeBytes: 17_000_000,
      inUseBytes: 4_800_000,
      inUseRatio: 0.29,
      leaderId: "ecebb05b59a776f1",
      raftIndex: 53391,
      learner: false,
      errors: [],
    });
    assert.equal(parseHumanBytes("0 B"), 0);
    assert.equal(parseHumanBytes("25 kB"), 25_000);
    assert.throws(() => parseHumanBytes("many"), /not a size/);
    assert.throws(() => parseEtcdStatus("error: rpc error\n"), /printed no member/);
  });

  it("lists active alarms, none when only the header is printed", () => {
    assert.deepEqual(parseEtcdAlarms("NODE   MEMBER   ALARM\n"), []);
    assert.deepEqual(
      parseEtcdAlarms(
        "NODE         MEMBER             ALARM\n192.0.2.11   a49c021e76e707db   NOSPACE\n",
      ),
      [{ memberId: "a49c021e76e707db", alarm: "NOSPACE" }],
    );
  });

  it("members with errors, without a leader or seeing different ones are problems", () => {
    const m = (node: string, memberId: string, leaderId: string, errors: string[] = []) => ({
      node,
      ok: true as const,
      memberId,
      leaderId,
      dbSizeBytes: 1,
      inUseBytes: 1,
      inUseRatio: 1,
      raftIndex: 1,
      learner: false,
      errors,
    });
    assert.deepEqual(memberProblems([m("cp-1", "a", "a"), m("cp-2", "b", "a")]), []);
    assert.deepEqual(memberProblems([m("cp-1", "a", "a"), m("cp-2", "b", "b")]), [
      "etcd: the members see different leaders (a, b)",
    ]);
    assert.deepEqual(memberProblems([m("cp-1", "a", "0", ["etcdserver: no leader"])]), [
      "etcd on cp-1: etcdserver: no leader",
      "etcd: no member sees a leader",
    ]);
    assert.deepEqual(memberProblems([{ node: "cp-3", ok: false, error: "unreachable" }]), [
      "etcd on cp-3: unreachable",
    ]);
  });
});

describe("health <env>", () => {
  afterEach(cleanupRepos);

  it("reports Talos health, etcd per member, certificates, backup and versions; exit 0", async () => {
    const f = certFixture(200);
    f.talos.etcdDb.set("cp-2", { size: 400_000_000, inUse: 100_000_000 });
    assert.equal(await runCli(["health", "staging"], f.ctx), ExitCode.ok, f.ctx.stderr.text);
    const out = f.ctx.stdout.text;
    assert.match(out, /^talos health: ok/);
    assert.match(out, /cp-1: member \S+, leader, db 20\.0 MB, in use 10\.0 MB \(50%\)/);
    assert.match(
      out,
      /cp-2: member \S+, db 400\.0 MB, in use 100\.0 MB \(25%\) \(etcd defrag would free space\)/,
    );
    assert.match(out, /alarms: none/);
    assert.match(out, /talosconfig client .* 200 +ok/);
    assert.match(out, /newest backup: not configured/);
    assert.match(out, /w-3: Talos v1\.13\.9, Kubernetes 1\.36\.3\n/);
    assert.match(f.ctx.stderr.text, /health staging: healthy/);
  });

  it("exits 8 on an etcd alarm, a failed health check or version skew, naming each", async () => {
    const f = certFixture(200);
    f.talos.alarms = [{ memberId: f.talos.members[0].id, alarm: "NOSPACE" }];
    f.talos.nodes[4].version = "v1.13.8";
    f.talos.healthFailsAfter = true;
    assert.equal(await runCli(["health", "staging", "--json"], f.ctx), ExitCode.unhealthy);
    const report = JSON.parse(f.ctx.stdout.text);
    assert.equal(report.talos.ok, false);
    assert.match(f.ctx.stderr.text, /talos: the cluster health check failed/);
    assert.match(f.ctx.stderr.text, /etcd alarm NOSPACE on member/);
    assert.match(f.ctx.stderr.text, /version skew on w-2: Talos v1\.13\.8/);
  });

  it("exits 7 when healthy but a certificate is under --min-days", async () => {
    const f = certFixture(10);
    assert.equal(await runCli(["health", "staging"], f.ctx), ExitCode.expiring);
    assert.match(f.ctx.stderr.text, /healthy, but talosconfig client \(10 days\).* under 30 days/);
  });
});

describe("etcd defrag <env>", () => {
  afterEach(cleanupRepos);

  const defragLog = (log: readonly string[]) =>
    log.filter((l) => /^etcd defrag|^health|^members via/.test(l));

  it("defragments one member at a time, the leader last, quorum-gated and healthy between", async () => {
    const f = dayTwoFixture();
    // cp-1 holds the first member, which the fake reports as the leader.
    assert.equal(
      await runCli(["etcd", "defrag", "staging"], f.ctx),
      ExitCode.ok,
      f.ctx.stderr.text,
    );
    const steps = defragLog(f.talos.log);
    const defrags = steps.filter((s) => s.startsWith("etcd defrag"));
    assert.deepEqual(defrags, ["etcd defrag cp-2", "etcd defrag cp-3", "etcd defrag cp-1"]);
    // Before each member: the quorum gate lists the members; after each: a health check.
    for (const name of ["cp-2", "cp-3", "cp-1"]) {
      const at = steps.indexOf(`etcd defrag ${name}`);
      assert.match(steps[at - 1], /^members via/);
      assert.match(steps[at + 1], /^health/);
    }
    assert.match(f.ctx.stdout.text, /cp-2: defragmented, db 20\.0 MB → 10\.0 MB/);
    assert.match(f.ctx.stderr.text, /3 members defragmented, cluster healthy/);
  });

  it("is refused on an unhealthy cluster before any member (exit 3)", async () => {
    const f = dayTwoFixture();
    f.talos.healthFailsAfter = true;
    assert.equal(await runCli(["etcd", "defrag", "staging"], f.ctx), ExitCode.refused);
    assert.deepEqual(
      f.talos.log.filter((l) => l.startsWith("etcd defrag")),
      [],
    );
    assert.match(f.ctx.stderr.text, /refused: the cluster is not healthy/);
  });

  it("stops at a member that fails, the later ones untouched (exit 1)", async () => {
    const f = dayTwoFixture();
    f.talos.defragFails.add("cp-2");
    assert.equal(await runCli(["etcd", "defrag", "staging"], f.ctx), ExitCode.failed);
    assert.deepEqual(
      f.talos.log.filter((l) => l.startsWith("etcd defrag")),
      ["etcd defrag cp-2"],
    );
    assert.match(f.ctx.stderr.text, /etcd defrag staging cp-2: stopped at talosctl etcd defrag/);
  });

  it("is refused in CI like the other commands that change the cluster", async () => {
    const f = dayTwoFixture();
    Object.assign(f.ctx.env, { CI: "true" });
    assert.equal(await runCli(["etcd", "defrag", "staging"], f.ctx), ExitCode.refused);
    assert.deepEqual(f.talos.log, []);
  });
});

describe("health <env> with off-site backups", () => {
  afterEach(cleanupRepos);

  /** certFixture(200) with etcdBackups to a folder, holding one backup `hoursAgo` old. */
  async function withBackup(hoursAgo: number) {
    const f = certFixture(200);
    const dir = path.join(f.root, "bucket", "etcd", "staging");
    fs.appendFileSync(
      f.stackFile,
      [
        "  talos-platform:etcdBackups:",
        '    schedule: "0 */6 * * *"',
        `    destination: file://${dir}`,
        `    encryption: { age: ${TEST_AGE_RECIPIENT} }`,
        "",
      ].join("\n"),
    );
    const at = f.clock.time - hoursAgo * 3_600_000;
    fs.mkdirSync(dir, { recursive: true });
    const file = path.join(dir, backupName("staging", at));
    fs.writeFileSync(file, await encrypt(Buffer.alloc(544, 1), TEST_AGE_RECIPIENT));
    fs.utimesSync(file, new Date(at), new Date(at));
    return { f, file };
  }

  it("reports the newest backup's age; exit 0 while it is within twice the schedule", async () => {
    const { f, file } = await withBackup(1);
    assert.equal(await runCli(["health", "staging"], f.ctx), ExitCode.ok, f.ctx.stderr.text);
    assert.match(
      f.ctx.stdout.text,
      new RegExp(`^newest backup: \\S+ \\(1h old, file://${file}\\)$`, "m"),
    );
  });

  it("exits 8 once the newest is older than twice the schedule, naming it", async () => {
    const { f } = await withBackup(13);
    assert.equal(await runCli(["health", "staging"], f.ctx), ExitCode.unhealthy);
    assert.match(
      f.ctx.stderr.text,
      /^ {2}etcd backups: the newest \(file:\/\/\S+\) is 13h old, more than twice the schedule \(12h\)$/m,
    );
  });
});
