// The upkeep commands against what a cluster really presents: `certs`, `health` and `etcd defrag`
// through the project's CLI (its real talosctl v1.13.0, parsing talosctl's own tables) on three
// emulated control planes (test/emulator/talos-emulator, 127.15.70.0/24) brought up once with the
// real engine and the Talos provider plugin. Every case reuses that one cluster:
//   1. certs: the talosconfig's and the kubeconfig's client certificates and CAs (the stack's
//      outputs) and each node's apid certificate (read in our own TLS handshake, signed by the
//      talosconfig's CA), each with the NotAfter and days left of the real certificate; exit 7 under
//      --min-days;
//   2. health: every member's etcd status (the emulator's sizes, one leader all follow), no alarms;
//      a NOSPACE alarm makes it unhealthy (exit 8);
//   3. etcd defrag: refused (exit 3) while a control plane is unhealthy, nothing defragmented; then
//      one member at a time, the leader last (the emulator's record of the order), each file shrunk
//      to the part in use.
import { strict as assert } from "node:assert";
import { X509Certificate, createPrivateKey } from "node:crypto";
import * as tls from "node:tls";
import { parse } from "yaml";
import { ExitCode } from "../../automation/errors";
import {
  buildEmulatorTools,
  type EmulatorTools,
  type RunningEmulator,
  startTalosEmulator,
  waitForMaintenance,
  waitFor,
} from "../emulator/talosEmulator";
import { type CliRun, EngineSandbox, engineTools } from "./harness";

const STACK = "upkeep";
const SUBNET = "127.15.70";
const NODES = [
  { name: "cp-1", address: `${SUBNET}.11` },
  { name: "cp-2", address: `${SUBNET}.12` },
  { name: "cp-3", address: `${SUBNET}.13` },
] as const;
const DAY_MS = 24 * 60 * 60_000;

function explain(run: CliRun): string {
  return `exit ${run.code}\n--- stdout\n${run.stdout}\n--- stderr\n${run.stderr}`;
}

/** `certs --json` / `health --json`'s certificate entries. */
interface CertificateJson {
  name: string;
  kind: string;
  subject: string;
  notAfter: string;
  daysLeft: number;
  expiring: boolean;
}

/** `health --json`'s etcd member entries. */
interface MemberJson {
  node: string;
  ok: boolean;
  memberId: string;
  dbSizeBytes: number;
  inUseBytes: number;
  inUseRatio: number;
  leaderId: string;
  learner: boolean;
  errors: string[];
}

interface HealthJson {
  talos: { ok: boolean };
  members: MemberJson[];
  alarms: { memberId: string; alarm: string }[];
  certificates: { certificates: CertificateJson[]; unread: unknown[] };
  problems: string[];
}

/** The certificate a node's apid presents, read in a TLS handshake of the test's own. */
function apidCertificate(address: string, identity: { cert: string; key: string }) {
  return new Promise<X509Certificate>((resolve, reject) => {
    const socket = tls.connect({
      host: address,
      port: 50000,
      rejectUnauthorized: false,
      ALPNProtocols: ["h2"],
      ...identity,
    });
    socket.once("secureConnect", () => {
      const certificate = socket.getPeerX509Certificate();
      socket.destroy();
      if (certificate) resolve(certificate);
      else reject(new Error(`${address} presented no certificate`));
    });
    socket.once("error", reject);
  });
}

const pem = (base64: string) => Buffer.from(base64, "base64").toString("utf8");

/** Talos' `ED25519 PRIVATE KEY` PEM (PKCS#8 inside) as a key OpenSSL loads. */
function talosKey(base64: string): string {
  const der = Buffer.from(pem(base64).replace(/-----[^-]+-----|\s/g, ""), "base64");
  return createPrivateKey({ key: der, format: "der", type: "pkcs8" })
    .export({ format: "pem", type: "pkcs8" })
    .toString();
}

/** An SI size as talosctl prints it (humanize.Bytes: 2-3 significant digits) is within 5%. */
function near(actual: number, expected: number, what: string): void {
  assert.ok(Math.abs(actual - expected) <= expected * 0.05, `${what}: ${actual} vs ${expected}`);
}

describe("the engine tier: certs, health and etcd defrag on three emulated control planes", function () {
  this.timeout(10 * 60_000);
  const tools = engineTools();
  let emulatorTools: EmulatorTools;
  let emulator: RunningEmulator;
  let sandbox: EngineSandbox;
  let env: Record<string, string>;
  const log: string[] = [];

  before(async function () {
    this.timeout(50 * 60_000);
    emulatorTools = buildEmulatorTools();
    emulator = await startTalosEmulator({
      binary: emulatorTools.emulator,
      nodes: NODES.map((n) => ({ name: n.name, address: n.address })),
      timeoutMs: 20 * 60_000,
      log: (line) => log.push(line),
    });
    sandbox = new EngineSandbox(tools);
    sandbox.writeFixtureStack(STACK);
    env = { TALOSCTL: emulatorTools.talosctl, TALOS_STANDIN_RETRY_WINDOW: "60s" };
    await waitForMaintenance(
      emulator,
      NODES.map((n) => n.name),
    );
    const up = await sandbox.cli(["up", STACK], env);
    assert.equal(up.code, ExitCode.ok, explain(up));
    await waitFor("three voting members", async () => {
      const [c] = await emulator.clusters();
      if (c.members.length !== 3 || c.members.some((m) => m.learner)) {
        throw new Error(JSON.stringify(c.members));
      }
    });
  });

  after(async () => {
    await emulator?.stop();
    if (sandbox && process.env.ENGINE_KEEP_SANDBOX === undefined) sandbox.remove();
  });

  afterEach(function () {
    if (this.currentTest?.state === "failed") console.log(log.slice(-60).join("\n"));
  });

  const cli = (argv: string[]) => sandbox.cli(argv, env);
  /** A secret stack output, read with the Pulumi CLI itself. */
  const output = (name: string) => {
    const run = sandbox.pulumi(["stack", "output", name, "--show-secrets", "--stack", STACK]);
    assert.equal(run.code, 0, run.stderr);
    return run.stdout;
  };
  const healthJson = async (expected: number) => {
    const run = await cli(["health", STACK, "--json", "--health-timeout", "1m"]);
    assert.equal(run.code, expected, explain(run));
    return JSON.parse(run.stdout) as HealthJson;
  };

  describe("1. certs", () => {
    let run: CliRun;
    let report: { certificates: CertificateJson[]; unread: unknown[] };
    let now: number;
    before(async () => {
      now = Date.now();
      run = await cli(["certs", STACK, "--json"]);
      report = JSON.parse(run.stdout) as typeof report;
    });
    const byName = (name: string) => {
      const found = report.certificates.find((c) => c.name === name);
      assert.ok(found, `${name} in ${JSON.stringify(report.certificates.map((c) => c.name))}`);
      return found;
    };
    const assertReports = (name: string, real: X509Certificate) => {
      const reported = byName(name);
      const notAfter = new Date(real.validTo);
      assert.equal(reported.notAfter, notAfter.toISOString(), name);
      assert.equal(reported.subject, real.subject.replace(/\n/g, ", "), name);
      // Whole days left, as of the run (which started just after `now`).
      const days = Math.floor((notAfter.getTime() - now) / DAY_MS);
      assert.ok(reported.daysLeft === days || reported.daysLeft === days - 1, `${name} days`);
      assert.equal(reported.expiring, false, name);
    };

    it("exits 0, every certificate read", () => {
      assert.equal(run.code, ExitCode.ok, explain(run));
      assert.deepEqual(report.unread, []);
      assert.deepEqual(report.certificates.map((c) => c.name).sort(), [
        "Kubernetes CA",
        "Talos CA",
        "cp-1 API (apid)",
        "cp-2 API (apid)",
        "cp-3 API (apid)",
        "kubeconfig client",
        "talosconfig client",
      ]);
    });

    it("reports the talosconfig's client certificate and the Talos CA as they are", () => {
      const talosconfig = parse(output("talosconfig")) as {
        context: string;
        contexts: Record<string, { crt: string; ca: string }>;
      };
      const context = talosconfig.contexts[talosconfig.context];
      assertReports("talosconfig client", new X509Certificate(pem(context.crt)));
      assertReports("Talos CA", new X509Certificate(pem(context.ca)));
      // The talosconfig client certificate: a year (Talos machinery's generate constants).
      assert.ok(byName("talosconfig client").daysLeft >= 363);
    });

    it("reports the kubeconfig's client certificate and the Kubernetes CA as they are", () => {
      const kubeconfig = parse(output("kubeconfig")) as {
        clusters: { cluster: { "certificate-authority-data": string } }[];
        users: { user: { "client-certificate-data": string } }[];
      };
      assertReports(
        "kubeconfig client",
        new X509Certificate(pem(kubeconfig.users[0].user["client-certificate-data"])),
      );
      assertReports(
        "Kubernetes CA",
        new X509Certificate(pem(kubeconfig.clusters[0].cluster["certificate-authority-data"])),
      );
    });

    it("reports each node's apid certificate: the one it presents, issued by the Talos CA", async () => {
      const talosconfig = parse(output("talosconfig")) as {
        context: string;
        contexts: Record<string, { crt: string; key: string; ca: string }>;
      };
      const context = talosconfig.contexts[talosconfig.context];
      const ca = new X509Certificate(pem(context.ca));
      for (const node of NODES) {
        const presented = await apidCertificate(node.address, {
          cert: pem(context.crt),
          key: talosKey(context.key),
        });
        assert.ok(
          presented.verify(ca.publicKey),
          `${node.name}'s apid certificate signed by the CA`,
        );
        assert.ok(
          presented.checkIP(node.address),
          `${node.name}'s apid certificate names its address`,
        );
        assertReports(`${node.name} API (apid)`, presented);
      }
    });

    it("exits 7 when a certificate has fewer days left than --min-days, naming it", async () => {
      const under = await cli(["certs", STACK, "--min-days", "400"]);
      assert.equal(under.code, ExitCode.expiring, explain(under));
      assert.match(under.stderr, /certificates? under 400 days: .*talosconfig client \(\d+ days\)/);
      assert.match(under.stdout, /talosconfig client .* under 400 days/);
    });
  });

  describe("2. health", () => {
    it("reports every member's etcd status: the emulator's sizes, one leader that all follow", async () => {
      const report = await healthJson(ExitCode.ok);
      assert.deepEqual(report.problems, []);
      assert.deepEqual(report.alarms, []);
      const [cluster] = await emulator.clusters();
      const leader = cluster.members.filter((m) => m.leader);
      assert.equal(leader.length, 1, JSON.stringify(cluster.members));
      assert.deepEqual(
        report.members.map((m) => m.node),
        NODES.map((n) => n.name),
      );
      for (const m of report.members) {
        assert.ok(m.ok, JSON.stringify(m));
        const member = cluster.members.find((c) => c.hostname === m.node);
        assert.ok(member, m.node);
        assert.equal(m.memberId, member.id);
        assert.equal(m.leaderId, leader[0].id, `${m.node} follows the leader`);
        assert.equal(m.learner, false);
        assert.deepEqual(m.errors, []);
        // The emulator's writes after this run may have grown the figures a little.
        near(m.dbSizeBytes, member.dbSize, `${m.node} db size`);
        near(m.inUseBytes, member.dbSizeInUse, `${m.node} in use`);
        assert.ok(m.inUseRatio > 0 && m.inUseRatio < 1, `${m.node} in-use ratio ${m.inUseRatio}`);
      }
    });

    it("prints the leader and each member's sizes", async () => {
      const run = await cli(["health", STACK, "--health-timeout", "1m"]);
      assert.equal(run.code, ExitCode.ok, explain(run));
      assert.equal(run.stdout.match(/^ {2}cp-\d: member [0-9a-f]{16}, leader, db /gm)?.length, 1);
      assert.match(run.stdout, /^ {2}alarms: none$/m);
    });

    it("is unhealthy (exit 8) while etcd has a NOSPACE alarm, naming the member", async () => {
      await emulator.setFaults("cp-2", { etcdNoSpace: true });
      try {
        const report = await healthJson(ExitCode.unhealthy);
        const [cluster] = await emulator.clusters();
        const id = cluster.members.find((m) => m.hostname === "cp-2")?.id;
        assert.deepEqual(report.alarms, [{ memberId: id, alarm: "NOSPACE" }]);
        assert.ok(
          report.problems.includes(`etcd alarm NOSPACE on member ${id}`),
          report.problems.join("\n"),
        );
        // etcd also lists the alarm among every member's status errors.
        for (const m of report.members) assert.equal(m.errors.length, 1, JSON.stringify(m));
      } finally {
        await emulator.setFaults("cp-2", {});
      }
    });
  });

  describe("3. etcd defrag", () => {
    it("is refused (exit 3) while a control plane is unhealthy: no member defragmented", async () => {
      await emulator.setFaults("cp-3", { unhealthy: true });
      try {
        const run = await cli(["etcd", "defrag", STACK, "--health-timeout", "5s"]);
        assert.equal(run.code, ExitCode.refused, explain(run));
        assert.match(run.stderr, /refused: the cluster is not healthy/);
        const [cluster] = await emulator.clusters();
        assert.deepEqual(cluster.defragmentations, []);
      } finally {
        await emulator.setFaults("cp-3", {});
      }
    });

    it("defragments one member at a time, the leader last, each file shrunk to what is in use", async () => {
      const [before] = await emulator.clusters();
      const leader = before.members.find((m) => m.leader)?.hostname;
      assert.ok(leader);
      const run = await cli(["etcd", "defrag", STACK, "--health-timeout", "1m"]);
      assert.equal(run.code, ExitCode.ok, explain(run));
      const [after] = await emulator.clusters();
      const expected = [...NODES.map((n) => n.name).filter((n) => n !== leader), leader];
      assert.deepEqual(
        after.defragmentations.map((d) => d.hostname),
        expected,
      );
      // One at a time: each after the one before it.
      const times = after.defragmentations.map((d) => Date.parse(d.at));
      assert.deepEqual(
        [...times].sort((a, b) => a - b),
        times,
      );
      for (const d of after.defragmentations) {
        assert.ok(d.dbSizeAfter < d.dbSizeBefore, JSON.stringify(d));
      }
      assert.match(run.stdout, new RegExp(`${expected.join(", ")}, one at a time`));
      for (const name of expected) {
        assert.match(run.stdout, new RegExp(`${name}: defragmented, db \\S+ \\S+ → \\S+ \\S+`));
      }
      // What etcd status shows now: each file about the size in use.
      const report = await healthJson(ExitCode.ok);
      for (const m of report.members) assert.ok(m.inUseRatio > 0.95, JSON.stringify(m));
    });
  });
});
