// The whole lifecycle of a cluster against the real engine, the Talos provider plugin and the real
// talosctl, on five emulated Talos nodes (test/emulator/talos-emulator: 3 control planes, 2 workers on
// 127.15.20.0/24), through the project's CLI as an operator runs it. Steps, in order (each builds
// on the one before; the tier bails at the first failure):
//   1. up: every config applied over the Talos API (maintenance mode insecure, then mTLS with the
//      cluster's client certificate), etcd bootstrapped once (recorded in the etcdBootstrap output:
//      the Talos CA's fingerprint, not secret), the kubeconfig fetched;
//   2. kubeconfig and talosconfig exported, and both work against the nodes;
//   2c. no second bootstrap: the Bootstrap deleted from the state (an operator's mistake), a bare
//      `pulumi preview` and `pulumi up` fail with the program's own refusal and no node is asked to
//      bootstrap, the CLI's `up` refuses in its preflight; the state export imported back, `up`
//      keeps the Bootstrap;
//   3. a config change that needs a reboot: up --no-rollout stages it, rollout drains (kubectl, against the
//      emulated Kubernetes API) and reboots the nodes in order, uncordoning each once Ready;
//   4. upgrade talos with a fault at the second control plane: the roll stops, nothing further is
//      touched; --resume finishes it and bumps the stack file;
//   5. etcd snapshot --upload (age-encrypted into a file:// folder standing in for the backups'
//      bucket), then etcd restore --from that backup after two of the three control planes lost
//      their etcd data at once (quorum lost): the last one wiped, the first bootstrapped from the
//      decrypted snapshot, the others rejoining;
//   5b. replace-node of a control plane that no longer answers: its etcd member is removed through
//      another one; the repaired machine, its etcd data wiped, joins etcd again by itself;
//   6. drift: clean, then a node changed behind the program's back is reported;
//   7. destroy: every node reset to maintenance mode (bare metal).
// The emulator's delays are real but short; every CLI wait is bounded by its flags.
import { strict as assert } from "node:assert";
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { parse, stringify } from "yaml";
import { spawnRunner } from "../../automation/dayTwo/toolRunner";
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
import { type Kubeconfig, kubeGet } from "./kube";

const STACK = "lifecycle";
const PROJECT = "talos-platform";
const FROM = "v1.13.0";
const TO = "v1.13.9";
const SUBNET = "127.15.20";
const NODES = [
  { name: "cp-1", address: `${SUBNET}.11`, role: "controlplane" },
  { name: "cp-2", address: `${SUBNET}.12`, role: "controlplane" },
  { name: "cp-3", address: `${SUBNET}.13`, role: "controlplane" },
  { name: "worker-1", address: `${SUBNET}.21`, role: "worker" },
  { name: "worker-2", address: `${SUBNET}.22`, role: "worker" },
] as const;
/** The CLI's waits, short: the emulator reboots in seconds. */
const WAITS = ["--upgrade-timeout", "2m", "--node-timeout", "2m", "--health-timeout", "1m"];
/** A change Talos can only apply with a reboot (so `up` stages it). */
const UDEV_RULE = 'SUBSYSTEM=="drm", GROUP="44"';

/** kubectl as the operator runs it (KUBECTL, else the one on PATH), against the cluster's kubeconfig. */
function kubectl(kubeconfig: string, args: string[]) {
  return spawnRunner(process.env.KUBECTL ?? "kubectl", [...args, "--kubeconfig", kubeconfig], {
    timeoutMs: 60_000,
  });
}

function explain(run: CliRun): string {
  return `exit ${run.code}\n--- stdout\n${run.stdout}\n--- stderr\n${run.stderr}`;
}

function created(run: CliRun, type: string): string[] {
  return run.events.flatMap((e) =>
    e.resOutputsEvent?.metadata.op === "create" && e.resOutputsEvent.metadata.type === type
      ? [e.resOutputsEvent.metadata.urn.split("::").at(-1)!]
      : [],
  );
}

/** The Talos CA certificate (PEM) a talosconfig's current context trusts. */
function talosconfigCa(talosconfig: string): string {
  const config = parse(talosconfig) as {
    context: string;
    contexts: Record<string, { ca: string }>;
  };
  return Buffer.from(config.contexts[config.context].ca, "base64").toString("utf8");
}

/** What the stack's checkpoint in the file backend holds. */
interface Checkpoint {
  checkpoint: {
    latest?: { resources?: { urn: string; type: string; outputs?: Record<string, unknown> }[] };
  };
}

describe("the engine tier: the lifecycle on five emulated Talos nodes", function () {
  this.timeout(10 * 60_000);
  const tools = engineTools();
  let emulatorTools: EmulatorTools;
  let emulator: RunningEmulator;
  let sandbox: EngineSandbox;
  let stackFile: string;
  let env: Record<string, string>;
  const log: string[] = [];
  /** When the tools were ready: the lifecycle's wall time is measured from there. */
  let started = Date.now();

  before(async function () {
    // talosctl and the emulator are built from their Go modules on first use (cached).
    this.timeout(50 * 60_000);
    emulatorTools = buildEmulatorTools();
    started = Date.now();
    emulator = await startTalosEmulator({
      binary: emulatorTools.emulator,
      nodes: NODES.map((n) => ({ name: n.name, address: n.address })),
      talosVersion: FROM,
      timeoutMs: 40 * 60_000,
      log: (line) => log.push(line),
    });
    sandbox = new EngineSandbox(tools);
    stackFile = sandbox.writeFixtureStack(STACK);
    env = {
      TALOSCTL: emulatorTools.talosctl,
      // Nodes reboot into their config after the first apply: the provider retries meanwhile.
      TALOS_STANDIN_RETRY_WINDOW: "60s",
    };
    await waitForMaintenance(
      emulator,
      NODES.map((n) => n.name),
    );
  });

  after(async () => {
    await emulator?.stop();
    if (sandbox && process.env.ENGINE_KEEP_SANDBOX === undefined) sandbox.remove();
    process.stdout.write(
      `      (lifecycle wall time ${Math.round((Date.now() - started) / 1000)} s)\n`,
    );
  });

  afterEach(function () {
    if (this.currentTest?.state === "failed") console.log(log.slice(-60).join("\n"));
  });

  const cli = (argv: string[]) => sandbox.cli(argv, env);
  const kubeconfigFile = () => path.join(sandbox.dir, "lifecycle.kubeconfig");
  const kubeNodes = async () =>
    (
      (await kubeGet(
        parse(fs.readFileSync(kubeconfigFile(), "utf8")) as Kubeconfig,
        "/api/v1/nodes",
      )) as {
        items: {
          metadata: { name: string };
          spec: { unschedulable?: boolean };
          status: { conditions: { type: string; status: string }[] };
        }[];
      }
    ).items;
  const versions = async () =>
    Object.fromEntries((await emulator.status()).map((n) => [n.name, n.version]));

  describe("1. up", () => {
    let up: CliRun;
    before(async () => {
      up = await cli(["up", STACK]);
    });

    it("succeeds", () => {
      assert.equal(up.code, ExitCode.ok, explain(up));
      assert.match(up.stdout, /up foundation\/lifecycle: done in \S+; \d+ created/);
    });

    it("applied every node's config over the Talos API: each node runs it, installed", async () => {
      assert.equal(
        created(up, "talos:machine/configurationApply:ConfigurationApply").length,
        NODES.length,
      );
      for (const node of NODES) {
        const status = await emulator.node(node.name);
        assert.equal(status.phase, "running", node.name);
        assert.ok(status.installed, `${node.name} installed`);
        assert.equal(status.hostname, node.name);
        assert.equal(status.type, node.role);
        assert.equal(status.cluster, STACK);
      }
    });

    it("bootstrapped etcd once, on the first control plane; every control plane is a member", async () => {
      assert.deepEqual(created(up, "talos:machine/bootstrap:Bootstrap"), ["lifecycle-bootstrap"]);
      const [cluster] = await emulator.clusters();
      assert.ok(cluster.bootstrapped);
      const members = await waitFor("three voting members", async () => {
        const [c] = await emulator.clusters();
        if (c.members.length !== 3 || c.members.some((m) => m.learner)) {
          throw new Error(JSON.stringify(c.members));
        }
        return c.members;
      });
      assert.deepEqual(members.map((m) => m.hostname).sort(), ["cp-1", "cp-2", "cp-3"]);
    });

    it("fetched the kubeconfig of the cluster endpoint", () => {
      assert.deepEqual(created(up, "talos:cluster/kubeconfig:Kubeconfig"), [
        "lifecycle-kubeconfig",
      ]);
    });

    it("records the bootstrap in the etcdBootstrap output: the Talos CA's fingerprint, not secret", () => {
      const talosconfig = sandbox.pulumi([
        "stack",
        "output",
        "talosconfig",
        "--show-secrets",
        "--stack",
        STACK,
      ]);
      assert.equal(talosconfig.code, 0, talosconfig.stderr);
      const ca = talosconfigCa(talosconfig.stdout);
      assert.match(ca, /^-----BEGIN CERTIFICATE-----/);
      // In the checkpoint as plain JSON: a secret output would be an encrypted envelope there.
      const state = JSON.parse(
        fs.readFileSync(sandbox.stateFile(PROJECT, STACK), "utf8"),
      ) as Checkpoint;
      const stack = state.checkpoint.latest?.resources?.find(
        (r) => r.type === "pulumi:pulumi:Stack",
      );
      assert.deepEqual(stack?.outputs?.etcdBootstrap, {
        talosCaSha256: createHash("sha256").update(ca.trim()).digest("hex"),
      });
    });
  });

  describe("2. kubeconfig and talosconfig exported", () => {
    it("writes a 0600 kubeconfig for the cluster endpoint, whose credentials the API accepts", async () => {
      const file = path.join(sandbox.dir, "lifecycle.kubeconfig");
      const run = await cli(["kubeconfig", STACK, "--out", file]);
      assert.equal(run.code, ExitCode.ok, explain(run));
      assert.equal(fs.statSync(file).mode & 0o777, 0o600);
      const kubeconfig = parse(fs.readFileSync(file, "utf8")) as Kubeconfig;
      const server = kubeconfig.clusters[0].cluster.server;
      assert.equal(server, `https://${SUBNET}.10:6443`);
      assert.doesNotMatch(run.stdout, /BEGIN|client-key/);
      // Its admin credentials work against the cluster's (emulated) Kubernetes API.
      const nodes = (await kubeGet(kubeconfig, "/api/v1/nodes")) as {
        items: { metadata: { name: string } }[];
      };
      assert.deepEqual(
        nodes.items.map((n) => n.metadata.name).sort(),
        NODES.map((n) => n.name),
      );
    });

    it("writes a 0600 talosconfig that talosctl uses against every node (mTLS)", async () => {
      const file = path.join(sandbox.dir, "lifecycle.talosconfig");
      const run = await cli(["talosconfig", STACK, "--out", file]);
      assert.equal(run.code, ExitCode.ok, explain(run));
      assert.equal(fs.statSync(file).mode & 0o777, 0o600);
      const version = await spawnRunner(
        emulatorTools.talosctl,
        ["--talosconfig", file, "--nodes", NODES.map((n) => n.address).join(","), "version"],
        { timeoutMs: 60_000 },
      );
      assert.equal(version.code, 0, version.stderr);
      for (const node of NODES) {
        assert.match(version.stdout, new RegExp(`NODE:\\s+${node.address.replace(/\./g, "\\.")}`));
      }
      assert.equal(version.stdout.match(/Tag:\s+v1\.13\.0/g)?.length, NODES.length + 1);
    });
  });

  describe("2b. up's health gate: Talos' own checks", () => {
    it("fails while a worker is unhealthy, naming the node and the check's error, rebooting nothing", async () => {
      const text = fs.readFileSync(stackFile, "utf8");
      const before = await emulator.status();
      await emulator.setFaults("worker-2", { unhealthy: true });
      fs.writeFileSync(stackFile, text.replace("      timeout: 60s\n", "      timeout: 15s\n"));
      let run: CliRun;
      try {
        run = await cli(["up", STACK]);
      } finally {
        fs.writeFileSync(stackFile, text);
        await emulator.setFaults("worker-2", {});
      }
      assert.equal(run.code, ExitCode.failed, explain(run));
      assert.match(
        run.stderr,
        /getHealth returned an error: cluster health check failed: .*127\.15\.20\.22: emulated fault: node unhealthy/,
      );
      // The program's unhandled exception without Node's stack frames (an operator's message).
      assert.doesNotMatch(run.stdout + run.stderr, /^\s+at |<ref \*|promise: Promise/m);
      assert.deepEqual(
        (await emulator.status()).map((n) => n.bootId),
        before.map((n) => n.bootId),
      );
    });
  });

  describe("2c. no second bootstrap after the state lost the Bootstrap (pulumi state delete)", () => {
    const BOOTSTRAP = "talos:machine/bootstrap:Bootstrap";
    const REFUSAL =
      /etcd bootstrap: up was about to create the cluster's Bootstrap \(lifecycle-bootstrap\) although etcd was bootstrapped \(the stack has an etcdBootstrap output\), which would bootstrap etcd a second time; got cp-1 \(127\.15\.20\.11\) would be bootstrapped/;
    /** What a node answers a Bootstrap call once etcd runs, passed on by the provider. */
    const NODE_ANSWER = /etcd data directory is not empty|bootstrapping error/;
    const exportFile = () => path.join(sandbox.dir, "lifecycle-before-state-delete.json");
    const bootstrapLines = () => log.filter((l) => /etcd bootstrapped on/.test(l)).length;
    let bootstrapsBefore = 0;
    let membersBefore: string[] = [];
    const runs: { name: string; text: string }[] = [];
    const inState = () =>
      (
        JSON.parse(fs.readFileSync(sandbox.stateFile(PROJECT, STACK), "utf8")) as Checkpoint
      ).checkpoint.latest?.resources?.filter((r) => r.type === BOOTSTRAP) ?? [];

    before(async () => {
      const [cluster] = await emulator.clusters();
      membersBefore = cluster.members.map((m) => m.id).sort();
      bootstrapsBefore = bootstrapLines();
      const exported = sandbox.pulumi([
        "stack",
        "export",
        "--stack",
        STACK,
        "--file",
        exportFile(),
      ]);
      assert.equal(exported.code, 0, exported.stderr);
      const [bootstrap] = inState();
      assert.ok(bootstrap, "the state has the Bootstrap");
      // The operator's mistake: the Kubeconfig depends on it, so the engine wants --target-dependents.
      const deleted = sandbox.pulumi([
        "state",
        "delete",
        bootstrap.urn,
        "--target-dependents",
        "--yes",
        "--stack",
        STACK,
      ]);
      assert.equal(deleted.code, 0, deleted.stderr);
      assert.deepEqual(inState(), []);
    });

    it("a bare pulumi preview in the project folder fails with the program's refusal", () => {
      const run = sandbox.pulumi(["preview", "--stack", STACK]);
      runs.push({ name: "preview", text: run.stdout + run.stderr });
      assert.notEqual(run.code, 0, run.stdout);
      assert.match(run.stdout + run.stderr, REFUSAL);
    });

    it("a bare pulumi up (no preview) fails with it too; the state still lacks the Bootstrap", () => {
      const run = sandbox.pulumi(["up", "--yes", "--skip-preview", "--stack", STACK]);
      runs.push({ name: "up", text: run.stdout + run.stderr });
      assert.notEqual(run.code, 0, run.stdout);
      assert.match(run.stdout + run.stderr, REFUSAL);
      assert.deepEqual(inState(), []);
    });

    it("no node was asked to bootstrap again: etcd as it was, no node's answer to a Bootstrap call", async () => {
      // The emulator logs a bootstrap it performs; one it refuses (etcd runs) only reaches the
      // caller, whose provider passes the node's answer on.
      for (const run of runs) assert.doesNotMatch(run.text, NODE_ANSWER, run.name);
      assert.equal(runs.length, 2);
      assert.equal(bootstrapLines(), bootstrapsBefore);
      const [cluster] = await emulator.clusters();
      assert.ok(cluster.bootstrapped);
      assert.deepEqual(cluster.members.map((m) => m.id).sort(), membersBefore);
    });

    it("the CLI's up refuses it in its preflight, before the engine runs", async () => {
      const run = await cli(["up", STACK]);
      assert.equal(run.code, ExitCode.refused, explain(run));
      assert.match(
        run.stderr,
        /preflight foundation\/lifecycle: 1 check failed; nothing was changed; got:\n {2}- etcd bootstrap: the state has lost the cluster's talos:machine\/bootstrap:Bootstrap resource although etcd was bootstrapped \(the stack has an etcdBootstrap output\), so up would bootstrap etcd again; got cp-1 would be bootstrapped/,
      );
      assert.deepEqual(run.events, [], "the engine never ran");
      assert.doesNotMatch(run.stdout + run.stderr, NODE_ANSWER);
      assert.equal(bootstrapLines(), bootstrapsBefore);
    });

    it("the export imported back, a plain up keeps the Bootstrap (same) and creates nothing", async () => {
      const imported = sandbox.pulumi([
        "stack",
        "import",
        "--stack",
        STACK,
        "--file",
        exportFile(),
      ]);
      assert.equal(imported.code, 0, imported.stderr);
      assert.equal(inState().length, 1);
      const run = await cli(["up", STACK]);
      assert.equal(run.code, ExitCode.ok, explain(run));
      const steps = run.events.flatMap((e) =>
        e.resOutputsEvent?.metadata.type === BOOTSTRAP ? [e.resOutputsEvent.metadata.op] : [],
      );
      assert.deepEqual(steps, ["same"]);
      assert.deepEqual(
        run.events.flatMap((e) =>
          e.resOutputsEvent && !["same", "read"].includes(e.resOutputsEvent.metadata.op)
            ? [`${e.resOutputsEvent.metadata.op} ${e.resOutputsEvent.metadata.urn}`]
            : [],
        ),
        [],
      );
      assert.equal(bootstrapLines(), bootstrapsBefore);
    });
  });

  describe("3. a config change rolled out in order", () => {
    it("up stages a change that needs a reboot on every node, rebooting none", async () => {
      const before = await emulator.status();
      const text = fs.readFileSync(stackFile, "utf8");
      fs.writeFileSync(
        stackFile,
        text.replace(
          "    health:\n",
          `    patches:\n      all:\n        - machine:\n            udev:\n              rules:\n                - '${UDEV_RULE}'\n    health:\n`,
        ),
      );
      // --no-rollout: the roll below is rollout's own (up would roll the staged change itself).
      const run = await cli(["up", STACK, "--no-rollout"]);
      assert.equal(run.code, ExitCode.ok, explain(run));
      assert.match(
        run.stdout,
        /staged changes on .* wait for `npm run platform -- rollout lifecycle`/,
      );
      assert.deepEqual(
        created(run, "talos:machine/bootstrap:Bootstrap"),
        [],
        "no second bootstrap",
      );
      const after = await emulator.status();
      assert.deepEqual(
        after.map((n) => n.bootId),
        before.map((n) => n.bootId),
        "no node rebooted",
      );
      const outputs = await cli(["outputs", STACK, "--json"]);
      assert.equal(outputs.code, ExitCode.ok, explain(outputs));
      const applyModes = (JSON.parse(outputs.stdout) as { applyModes: Record<string, string> })
        .applyModes;
      assert.deepEqual(applyModes, Object.fromEntries(NODES.map((n) => [n.name, "staged"])));
    });

    it("rollout drains and reboots control planes one at a time, then workers, into the staged config", async () => {
      const before = await emulator.status();
      // kubectl (KUBECTL, else PATH) against the emulated Kubernetes API.
      const run = await cli(["rollout", STACK, "--drain-timeout", "1m"]);
      assert.equal(run.code, ExitCode.ok, explain(run));
      for (const node of NODES) {
        assert.match(run.stdout, new RegExp(`^${node.name}: draining \\(kubectl drain`, "m"));
        assert.match(run.stdout, new RegExp(`^${node.name}: drained$`, "m"));
        assert.match(
          run.stdout,
          new RegExp(`^${node.name}: Ready in Kubernetes; uncordoned$`, "m"),
        );
      }
      // Every node is schedulable and Ready again.
      for (const node of await kubeNodes()) {
        assert.ok(!node.spec.unschedulable, `${node.metadata.name} uncordoned`);
        assert.equal(
          node.status.conditions.find((c) => c.type === "Ready")?.status,
          "True",
          node.metadata.name,
        );
      }
      // Each node is rebooted, back on its staged config and the cluster healthy before the next.
      const steps = [...run.stdout.matchAll(/^(\S+?)(?: \([\d.]+\))?: (rebooting|running)/gm)].map(
        (m) => `${m[1]} ${m[2]}`,
      );
      assert.deepEqual(
        steps,
        NODES.flatMap((n) => [`${n.name} rebooting`, `${n.name} running`]),
        run.stdout,
      );
      assert.match(run.stdout, /^cp-2: etcd keeps quorum without it/m);
      const after = await emulator.status();
      for (const node of NODES) {
        const was = before.find((n) => n.name === node.name)!;
        const now = after.find((n) => n.name === node.name)!;
        assert.notEqual(now.bootId, was.bootId, `${node.name} rebooted`);
      }
      const dryRun = await cli(["rollout", STACK, "--dry-run"]);
      assert.equal(dryRun.code, ExitCode.ok, explain(dryRun));
      assert.match(dryRun.stdout, /nothing staged|no node has a staged/i);
    });
  });

  describe("4. upgrade talos, stopped by a fault at the second control plane, then resumed", () => {
    it("stops at cp-2; cp-3 and the workers are not touched; the stack file is unchanged", async () => {
      await emulator.setFaults("cp-2", { upgradeFails: true });
      const before = fs.readFileSync(stackFile);
      const run = await cli(["upgrade", "talos", STACK, "--to", TO, ...WAITS]);
      assert.equal(run.code, ExitCode.failed, explain(run));
      assert.match(run.stdout + run.stderr, /stopped at cp-2/);
      assert.match(run.stdout + run.stderr, /--resume/);
      assert.deepEqual(await versions(), {
        "cp-1": TO,
        "cp-2": FROM,
        "cp-3": FROM,
        "worker-1": FROM,
        "worker-2": FROM,
      });
      assert.ok(fs.readFileSync(stackFile).equals(before), "stack file unchanged");
    });

    it("--resume skips cp-1 and upgrades the rest; the stack file says the new version", async () => {
      await emulator.setFaults("cp-2", {});
      const run = await cli(["upgrade", "talos", STACK, "--to", TO, "--resume", ...WAITS]);
      assert.equal(run.code, ExitCode.ok, explain(run));
      assert.match(run.stdout, /already on v1\.13\.9: cp-1/);
      assert.deepEqual(await versions(), Object.fromEntries(NODES.map((n) => [n.name, TO])));
      const stack = parse(fs.readFileSync(stackFile, "utf8")) as {
        config: Record<string, { talosVersion?: string }>;
      };
      assert.equal(stack.config[`${PROJECT}:cluster`].talosVersion, TO);
    });
  });

  describe("5. etcd snapshot and restore", () => {
    let backup = "";
    let atSnapshot: { keys: number };
    /** The age identity the backups are encrypted to (made here: the stack file gets its public key). */
    let identity = "";
    let stackBefore = "";
    const backupDir = () => path.join(sandbox.dir, "bucket", "etcd", STACK);
    const withIdentity = (argv: string[]) =>
      sandbox.cli(argv, { ...env, ETCD_BACKUP_AGE_IDENTITY: identity });

    before(async () => {
      // Off-site backups to a folder standing in for the bucket, set for the day-two commands only
      // (no `up` runs with it: the file:// stand-in has no in-cluster job to deliver).
      const age = await import("age-encryption");
      identity = await age.generateX25519Identity();
      stackBefore = fs.readFileSync(stackFile, "utf8");
      const stack = parse(stackBefore) as { config: Record<string, unknown> };
      stack.config[`${PROJECT}:etcdBackups`] = {
        schedule: "0 */6 * * *",
        destination: `file://${backupDir()}`,
        encryption: { age: await age.identityToRecipient(identity) },
      };
      fs.writeFileSync(stackFile, stringify(stack));
    });
    after(() => fs.writeFileSync(stackFile, stackBefore));

    it("streams a snapshot into a 0600 file and uploads it age-encrypted to the file:// destination", async () => {
      const run = await cli(["etcd", "snapshot", STACK, "--upload"]);
      assert.equal(run.code, ExitCode.ok, explain(run));
      const [cluster] = await emulator.clusters();
      atSnapshot = { keys: cluster.keys };
      const [file, url] = run.stdout.trim().split("\n");
      assert.ok(file.endsWith(".snapshot"), run.stdout);
      const stat = fs.statSync(file);
      assert.equal(stat.mode & 0o777, 0o600);
      assert.equal(stat.size % 512, 32, "a talosctl snapshot with its SHA-256 trailer");
      assert.match(
        url,
        new RegExp(
          `^file://${backupDir()}/${STACK}-\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\dZ\\.snap\\.age$`,
        ),
      );
      const stored = fs.readFileSync(url.slice("file://".length));
      assert.ok(!stored.equals(fs.readFileSync(file)), "encrypted, not the snapshot itself");
      const age = await import("age-encryption");
      const decrypter = new age.Decrypter();
      decrypter.addIdentity(identity);
      assert.ok(Buffer.from(await decrypter.decrypt(stored)).equals(fs.readFileSync(file)));
      backup = url;

      const listed = await cli(["etcd", "backups", STACK, "--json"]);
      assert.equal(listed.code, ExitCode.ok, explain(listed));
      assert.deepEqual(
        JSON.parse(listed.stdout).backups.map((b: { url: string }) => b.url),
        [backup],
      );
    });

    it("restores it after quorum is lost: every control plane back in etcd, the data as the snapshot held it", async () => {
      // Writes after the snapshot, which the restore must undo: both CoreDNS pods deleted.
      const dns = await kubectl(kubeconfigFile(), [
        "get",
        "pods",
        "-n",
        "kube-system",
        "-l",
        "k8s-app=kube-dns",
        "-o",
        "name",
      ]);
      assert.equal(dns.code, 0, dns.stderr);
      const pods = dns.stdout.trim().split("\n");
      assert.equal(pods.length, 2, dns.stdout);
      const deleted = await kubectl(kubeconfigFile(), [
        "delete",
        "-n",
        "kube-system",
        "--wait=false",
        ...pods,
      ]);
      assert.equal(deleted.code, 0, deleted.stderr);
      const [written] = await emulator.clusters();
      assert.equal(written.keys, atSnapshot.keys + 2, "the deletions were written to etcd");
      const members = written.members.map((m) => m.id);

      // The disaster: cp-2 and cp-3 lose their etcd data at the same time (EPHEMERAL wiped by
      // talosctl, as a disk loss would): they come back waiting for a quorum that is gone. (Wiped
      // one at a time, each would rejoin the other two: Talos re-adds an empty member while etcd
      // has quorum.)
      const talosconfig = path.join(sandbox.dir, "lifecycle.talosconfig");
      const wipes = await Promise.all(
        ["12", "13"].map((host) =>
          spawnRunner(
            emulatorTools.talosctl,
            [
              "--talosconfig",
              talosconfig,
              "--nodes",
              `${SUBNET}.${host}`,
              "reset",
              "--graceful=false",
              "--reboot",
              "--system-labels-to-wipe=EPHEMERAL",
            ],
            { timeoutMs: 180_000 },
          ),
        ),
      );
      for (const wipe of wipes) assert.equal(wipe.code, 0, wipe.stderr);
      // Both back from the reset's reboot with their etcd waiting for a quorum (on a loaded machine
      // the reboot may still be under way when talosctl returns): what the operator sees before
      // the restore.
      for (const host of ["12", "13"]) {
        await waitFor(
          `${SUBNET}.${host} back, etcd Preparing`,
          async () => {
            const service = await spawnRunner(
              emulatorTools.talosctl,
              ["--talosconfig", talosconfig, "--nodes", `${SUBNET}.${host}`, "service", "etcd"],
              { timeoutMs: 30_000 },
            );
            if (service.code !== 0 || !/STATE\s+Preparing/.test(service.stdout)) {
              throw new Error(service.stderr || service.stdout);
            }
          },
          180_000,
          1_000,
        );
      }

      const run = await withIdentity([
        "etcd",
        "restore",
        STACK,
        "--from",
        backup,
        "--yes",
        "--wait-timeout",
        "2m",
      ]);
      assert.equal(run.code, ExitCode.ok, explain(run));
      assert.match(run.stdout, /etcd now: cp-1 Running\/\S+, cp-2 Preparing\S*, cp-3 Preparing/);
      assert.match(
        run.stdout,
        /Step 1 of 3: wipe the EPHEMERAL partition \(etcd data\) of cp-1 and/,
      );
      // Fetched from the stand-in bucket and decrypted into the local store first.
      assert.match(run.stdout, /^ {2}cp-1: talosctl bootstrap --recover-from=\S+\.snap\.restore$/m);
      assert.match(run.stdout, /etcd restore lifecycle: done; 3 members, cluster healthy/);

      // etcd: bootstrapped again from the snapshot on cp-1, every control plane a voting member
      // (new members: the old ones went with the wiped data), holding what the snapshot held.
      const [cluster] = await emulator.clusters();
      assert.ok(cluster.bootstrapped);
      assert.deepEqual(cluster.members.map((m) => m.hostname).sort(), ["cp-1", "cp-2", "cp-3"]);
      assert.ok(cluster.members.every((m) => !m.learner && !members.includes(m.id)));
      // The snapshot's keys (the deletions are gone) plus the emulator's marker of the recovery.
      assert.equal(cluster.keys, atSnapshot.keys + 1);
      // What an operator checks next: talosctl etcd members and the nodes in Kubernetes.
      const listed = await spawnRunner(
        emulatorTools.talosctl,
        ["--talosconfig", talosconfig, "--nodes", `${SUBNET}.11`, "etcd", "members"],
        { timeoutMs: 60_000 },
      );
      assert.equal(listed.code, 0, listed.stderr);
      for (const cp of ["cp-1", "cp-2", "cp-3"]) assert.match(listed.stdout, new RegExp(cp));
      assert.deepEqual(
        (await kubeNodes()).map((n) => n.metadata.name).sort(),
        NODES.map((n) => n.name),
      );
    });
  });

  describe("5b. replace-node of a control plane that no longer answers", () => {
    it("removes its etcd member through another control plane and lists what is next", async () => {
      await emulator.setFaults("cp-3", { down: true });
      await waitFor("cp-3 off", async () => {
        const status = await emulator.node("cp-3");
        if (status.phase !== "off") throw new Error(status.phase);
      });
      const run = await cli(["replace-node", STACK, "cp-3", "--yes"]);
      assert.equal(run.code, ExitCode.ok, explain(run));
      assert.match(run.stdout, /cp-3 \(controlplane, 127\.15\.20\.13\): the node does not answer/);
      assert.match(
        run.stdout,
        /cp-1 removes it \(talosctl -n 127\.15\.20\.11 etcd remove-member [0-9a-f]+\): yes \(--yes\)/,
      );
      assert.match(run.stdout, /etcd: cp-3 removed; 2 members remain/);
      assert.match(run.stdout, /^next:\n {2}1\. kubectl delete node cp-3/m);
      const [cluster] = await emulator.clusters();
      assert.deepEqual(cluster.members.map((m) => m.hostname).sort(), ["cp-1", "cp-2"]);
      // Still in the stack's state: replace-node changes no resource.
      const outputs = await cli(["outputs", STACK, "--json"]);
      assert.equal(outputs.code, ExitCode.ok, explain(outputs));
      assert.ok("cp-3" in (JSON.parse(outputs.stdout) as { applyModes: object }).applyModes);
    });

    it("the repaired machine, its etcd data wiped, joins etcd again by itself; the cluster is healthy", async () => {
      await emulator.setFaults("cp-3", {});
      await waitFor("cp-3 running, its etcd refusing the removed member", async () => {
        const status = await emulator.node("cp-3");
        if (status.phase !== "running") throw new Error(status.phase);
      });
      const talosconfig = path.join(sandbox.dir, "lifecycle.talosconfig");
      const wipe = await spawnRunner(
        emulatorTools.talosctl,
        [
          "--talosconfig",
          talosconfig,
          "--nodes",
          `${SUBNET}.13`,
          "reset",
          "--graceful=false",
          "--reboot",
          "--system-labels-to-wipe=EPHEMERAL",
        ],
        { timeoutMs: 180_000 },
      );
      assert.equal(wipe.code, 0, wipe.stderr);
      const members = await waitFor(
        "three voting members again",
        async () => {
          const [c] = await emulator.clusters();
          if (c.members.length !== 3 || c.members.some((m) => m.learner)) {
            throw new Error(JSON.stringify(c.members));
          }
          return c.members;
        },
        120_000,
      );
      assert.deepEqual(members.map((m) => m.hostname).sort(), ["cp-1", "cp-2", "cp-3"]);
      const preflight = await cli(["preflight", STACK]);
      assert.equal(preflight.code, ExitCode.ok, explain(preflight));
    });
  });

  describe("6. drift", () => {
    it("finds none after the roll", async () => {
      const run = await cli(["drift", STACK]);
      assert.equal(run.code, ExitCode.ok, explain(run));
      for (const node of NODES) assert.match(run.stdout, new RegExp(`^${node.name} .* ok$`, "m"));
    });

    it("reports a node changed behind the program's back, with the path", async () => {
      await emulator.patchConfig(
        "worker-1",
        'machine:\n  sysctls:\n    net.core.somaxconn: "65535"\n',
      );
      const run = await cli(["drift", STACK]);
      assert.equal(run.code, ExitCode.drift, explain(run));
      assert.match(run.stdout, /^worker-1 .* drift$/m);
      assert.match(run.stdout, /machine\.sysctls/);
      assert.doesNotMatch(run.stdout, /65535/, "paths only, never values");
      for (const node of NODES.filter((n) => n.name !== "worker-1")) {
        assert.match(run.stdout, new RegExp(`^${node.name} .* ok$`, "m"));
      }
    });
  });

  describe("7. destroy", () => {
    it("resets every node to maintenance mode", async () => {
      const unprotect = sandbox.pulumi(["state", "unprotect", "--all", "--yes", "--stack", STACK]);
      assert.equal(unprotect.code, 0, unprotect.stderr);
      const run = await cli(["destroy", STACK]);
      assert.equal(run.code, ExitCode.ok, explain(run));
      for (const node of NODES) {
        await waitFor(
          `${node.name} back in maintenance mode`,
          async () => {
            const status = await emulator.node(node.name);
            if (status.phase !== "maintenance") throw new Error(status.phase);
            return status;
          },
          60_000,
        );
      }
      const state = JSON.parse(fs.readFileSync(sandbox.stateFile(PROJECT, STACK), "utf8")) as {
        checkpoint: { latest?: { resources?: unknown[] } };
      };
      assert.deepEqual(state.checkpoint.latest?.resources ?? [], []);
    });
  });
});
