import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import {
  type CommandResult,
  type CommandRunner,
  spawnRunner,
} from "../../automation/dayTwo/toolRunner";
import { TalosctlClient } from "../../automation/dayTwo/talosctl";
import {
  imageSchematic,
  imageTag,
  normalizeTag,
  parseClientVersion,
  parseEtcdMembers,
  parseHealthFailure,
  parseKubeletVersion,
  parseMachineConfig,
  parseSchematic,
  parseMachineConfigs,
  parseServerVersion,
  parseServiceStatus,
  parseVolumeType,
  retagImage,
} from "../../automation/dayTwo/talosctlOutput";
import { ExitCode, UserError } from "../../automation/errors";
import { recording } from "../emulator/talosctlRecordings";
import { SCHEMATIC } from "./helpers";

const CONNECTION = { talosconfig: "/tmp/x/talosconfig", endpoints: ["192.0.2.11", "192.0.2.12"] };
const GLOBAL = ["--talosconfig", "/tmp/x/talosconfig", "--endpoints", "192.0.2.11,192.0.2.12"];

/** A runner that records each call and answers from a script. */
function scripted(answer: (args: readonly string[]) => Partial<CommandResult> | Error) {
  const calls: { command: string; args: readonly string[]; timeoutMs: number }[] = [];
  const run: CommandRunner = async (command, args, options) => {
    calls.push({ command, args, timeoutMs: options.timeoutMs });
    const result = answer(args);
    if (result instanceof Error) throw result;
    return { code: 0, stdout: "", stderr: "", timedOut: false, ...result };
  };
  return { calls, run };
}

describe("talosctl output parsing, on talosctl v1.13.0's own output (test/fixtures/talosctl)", () => {
  it("reads the client version from --client --short, and from an older release's long form", () => {
    assert.equal(parseClientVersion(recording("version-client").stdout), "v1.13.0");
    // Releases before v1.13 print the long form even with --short: no v1.13 recording shows it.
    assert.equal(
      parseClientVersion(
        "Client:\n\tTag:         v1.12.4\n\tSHA:         abc\n\tBuilt:       \n\tGo version:  go1.24\n\tOS/Arch:     linux/amd64\n",
      ),
      "v1.12.4",
    );
  });

  it("reads the node's version under Server:, not the client's", () => {
    const { stdout } = recording("version");
    assert.match(stdout, /^Client:\n\tTag:\s+v1\.13\.0$/m, "the recording's client runs v1.13.0");
    assert.equal(parseServerVersion(stdout), "v1.13.9");
    // The hidden --json form, which the client does not ask for (so it is not recorded).
    assert.equal(
      parseServerVersion(
        '{"metadata":{"hostname":"192.0.2.11"},"version":{"tag":"v1.13.9","sha":"x"}}\n',
      ),
      "v1.13.9",
    );
    // talosctl prints the client's part and an empty Server: when the node does not answer.
    assert.throws(
      () => parseServerVersion(recording("version-unreachable").stdout),
      /expected a `Tag:` line under `Server:`/,
    );
  });

  it("reads etcd members by header position: every member the emulator had", () => {
    const recorded = recording("etcd-members");
    const members = parseEtcdMembers(recorded.stdout);
    assert.deepEqual(
      members.map((m) => [m.hostname, m.peerUrls, m.learner]),
      [
        ["cp-1", ["https://192.0.2.11:2380"], false],
        ["cp-2", ["https://192.0.2.12:2380"], false],
        ["cp-3", ["https://192.0.2.13:2380"], false],
      ],
    );
    assert.deepEqual(
      members.map((m) => m.id),
      recorded.emulator!.etcdMembers!.map((m) => m.id),
      "the ids the emulator gave them",
    );
    assert.throws(
      () => parseEtcdMembers(recording("etcd-members-unreachable").stderr),
      /expected a table with ID and HOSTNAME columns/,
    );
  });

  it("reads an unstarted learner, an IPv6 peer and an older release's table without NODE and LEARNER", () => {
    // Not recordable: a member is an unstarted learner only for the moment it joins, the emulator
    // runs on IPv4 loopback, and the columns NODE and LEARNER are those of today's talosctl.
    const current = [
      "NODE         ID                 HOSTNAME   PEER URLS                  CLIENT URLS                LEARNER",
      "192.0.2.11   3a1b2c3d4e5f6071   cp-1       https://192.0.2.11:2380    https://192.0.2.11:2379    false",
      "192.0.2.11   3a1b2c3d4e5f6072              https://192.0.2.12:2380                               true",
      "192.0.2.11   3a1b2c3d4e5f6073   cp-3       https://[2001:db8::13]:2380 https://[2001:db8::13]:2379 false",
    ].join("\n");
    const members = parseEtcdMembers(current);
    assert.equal(members[1].hostname, "");
    assert.equal(members[1].learner, true);
    assert.deepEqual(members[2].peerUrls, ["https://[2001:db8::13]:2380"]);
    const old =
      "ID                 HOSTNAME   PEER URLS                 CLIENT URLS\n2a1b2c3d4e5f6071   cp-1       https://192.0.2.11:2380   https://192.0.2.11:2379\n";
    assert.deepEqual(
      parseEtcdMembers(old).map((m) => [m.id, m.hostname, m.learner]),
      [["2a1b2c3d4e5f6071", "cp-1", false]],
    );
  });

  it("reads a service's STATE and HEALTH, running and waiting to join", () => {
    assert.deepEqual(parseServiceStatus(recording("service-etcd").stdout), {
      state: "Running",
      health: "OK",
    });
    assert.deepEqual(parseServiceStatus(recording("service-etcd-preparing").stdout), {
      state: "Preparing",
      health: "?",
    });
  });

  it("reads the kubelet version from the kubelet image tag", () => {
    assert.equal(parseKubeletVersion(recording("get-kubeletspec").stdout), "1.36.0");
  });

  it("reads the Image Factory schematic a node booted from its schematic extension, none without it", () => {
    assert.equal(parseSchematic(recording("get-extensions").stdout), SCHEMATIC);
    assert.equal(parseSchematic(""), undefined);
    assert.equal(
      imageSchematic(`factory.talos.dev/nocloud-installer/${SCHEMATIC}:v1.13.9`),
      SCHEMATIC,
    );
    assert.equal(imageSchematic("ghcr.io/siderolabs/installer:v1.13.9"), undefined);
  });

  it("reads the running and the staged machine config, every document of it", () => {
    const running = parseMachineConfig(recording("get-machineconfig-v1alpha1").stdout);
    const staged = parseMachineConfigs(recording("get-machineconfig").stdout).persistent!;
    for (const config of [running, staged]) {
      assert.match(config, /^version: v1alpha1\n/);
      assert.match(config, /^ {4}type: worker$/m);
      assert.match(config, /^---\napiVersion: v1alpha1\nkind: HostnameConfig\n/m);
      assert.match(config, /^hostname: w-1$/m);
    }
    assert.doesNotMatch(running, /somaxconn/);
    assert.match(staged, /net\.core\.somaxconn: "65535"/, "the change staged for the next reboot");
  });

  it("reads an older release's config as a mapping, and never echoes a config it cannot read", () => {
    // Not recordable with talosctl v1.13, which prints the spec as one string of every document.
    const asMap =
      "node: 192.0.2.11\nmetadata:\n    id: v1alpha1\nspec:\n    version: v1alpha1\n    machine:\n        token: s3cret\n";
    assert.match(parseMachineConfig(asMap), /token: s3cret/);
    assert.throws(
      () => parseMachineConfig("node: x\nmetadata: {}\ntoken: s3cret\n"),
      (error: Error) => !error.message.includes("s3cret") && /output withheld/.test(error.message),
    );
  });

  it("names the check talosctl health reported failing, with all of its error", () => {
    assert.equal(parseHealthFailure(recording("health").stderr), undefined);
    assert.deepEqual(parseHealthFailure(recording("health-failed").stderr), {
      check: "no diagnostics",
      reason: "active diagnostics: 192.0.2.22: emulated fault: node unhealthy",
    });
    const refused = (address: string) =>
      `1 error occurred: ${address}: rpc error: code = Unavailable desc = connection error: desc = "transport: Error while dialing: dial tcp ${address}:50000: connect: connection refused"`;
    const workerDown = { check: "apid to be ready", reason: refused("192.0.2.23") };
    assert.deepEqual(parseHealthFailure(recording("health-worker-down").stderr), workerDown);
    const cpDown = { check: "etcd to be healthy", reason: refused("192.0.2.13") };
    const { stderr } = recording("health-controlplane-down");
    assert.deepEqual(parseHealthFailure(stderr), cpDown);
    // When the wait runs out while a check is under way, talosctl prints the deadline as its status
    // first (seen in some recordings, not all: it is timing's); the error before it still counts.
    const final = stderr.lastIndexOf("healthcheck error:");
    const duringCheck =
      stderr.slice(0, final) +
      "waiting for etcd to be healthy: rpc error: code = DeadlineExceeded desc = context deadline exceeded\n" +
      stderr.slice(final);
    assert.deepEqual(parseHealthFailure(duringCheck), cpDown);
  });

  it("swaps the tag of an installer image, keeping registry, platform and schematic", () => {
    const image = "factory.talos.dev/nocloud-installer/ce4c98:v1.13.9";
    assert.equal(
      retagImage(image, "v1.14.1"),
      "factory.talos.dev/nocloud-installer/ce4c98:v1.14.1",
    );
    assert.equal(
      retagImage("registry.local:5000/metal-installer/abc:v1.13.9", "v1.14.1"),
      "registry.local:5000/metal-installer/abc:v1.14.1",
    );
    assert.equal(
      retagImage("factory.talos.dev/metal-installer/abc@sha256:00", "v1.14.1"),
      undefined,
    );
    assert.equal(imageTag("registry.local:5000/installer"), undefined);
    assert.equal(normalizeTag("1.14.0-alpha.1"), "v1.14.0-alpha.1");
  });
});

/**
 * A resource as talosctl's YAML output prints it (cmd/talosctl/cmd/talos/output/yaml.go: `node:`,
 * then COSI's metadata and the spec), for resources of Talos 1.14 that the Talos 1.13 emulator
 * cannot serve, so no recording exists: the spec's keys are the Go types' YAML tags (pkg/machinery
 * v1.14.1 resources/runtime/boot_id.go BootIDSpec, resources/block/volume_status.go VolumeStatusSpec).
 */
function talos114Resource(type: string, id: string, spec: string): string {
  return [
    "node: 192.0.2.11",
    "metadata:",
    "    namespace: runtime",
    `    type: ${type}`,
    `    id: ${id}`,
    "    version: 1",
    "    owner: runtime.BootIDController",
    "    phase: running",
    "    created: 2026-12-02T04:02:23Z",
    "    updated: 2026-12-02T04:02:23Z",
    "spec:",
    ...spec.split("\n").map((line) => `    ${line}`),
    "",
  ].join("\n");
}

/** talosctl's error when a resource, or its type on an older Talos, does not exist. */
const NOT_FOUND = (what: string) => ({
  code: 1,
  stderr: `error getting resource: rpc error: code = NotFound desc = ${what}\n`,
});

describe("TalosctlClient: what Talos 1.14 adds (MachineConfig versions, BootID, a dedicated ETCD volume)", () => {
  it("lists the node's MachineConfigs: the running one with its version, and persistent when there is one", async () => {
    const list = recording("get-machineconfig");
    const configs = parseMachineConfigs(list.stdout);
    assert.match(configs.running, /^version: v1alpha1$/m);
    assert.ok(configs.runningVersion >= 1);
    assert.match(configs.persistent ?? "", /somaxconn/, "w-1's staged sysctl is on disk");
    assert.doesNotMatch(configs.running, /somaxconn/, "and not running");
    // A node that took no config since it booted has no persistent resource (Talos'
    // config.AcquireController persists only configs from other sources than STATE).
    const running = list.stdout.split(/^---\n/m).find((r) => /^ {4}id: v1alpha1$/m.test(r))!;
    assert.equal(parseMachineConfigs(running).persistent, undefined);
    assert.equal(parseMachineConfigs(running).runningVersion, configs.runningVersion);
    assert.throws(() => parseMachineConfigs("node: x\n"), /output withheld/);
  });

  it("reads the BootID, and none from a Talos without the resource type", async () => {
    const { calls, run } = scripted((args) =>
      args.includes("192.0.2.12")
        ? NOT_FOUND('resource "bootid" is not registered')
        : {
            stdout: talos114Resource(
              "BootIDs.runtime.talos.dev",
              "boot-id",
              "bootID: 3b5c0d62-8f4e-4c63-9f38-1d2f7a5e9b10",
            ),
          },
    );
    const client = new TalosctlClient({ connection: CONNECTION, run });
    assert.equal(await client.bootId("192.0.2.11"), "3b5c0d62-8f4e-4c63-9f38-1d2f7a5e9b10");
    assert.equal(await client.bootId("192.0.2.12"), undefined);
    assert.deepEqual(calls[0].args.slice(0, 4), ["get", "bootid", "boot-id", "--output"]);
  });

  it("reads the ETCD volume's type, none where it does not exist, and fails on anything else", async () => {
    const { calls, run } = scripted((args) => {
      if (args.includes("192.0.2.12"))
        return NOT_FOUND(
          "resource VolumeStatuses.block.talos.dev(runtime/ETCD@undefined) doesn't exist",
        );
      if (args.includes("192.0.2.13"))
        return { code: 1, stderr: "rpc error: code = Unavailable desc = connection refused\n" };
      return {
        stdout: talos114Resource(
          "VolumeStatuses.block.talos.dev",
          "ETCD",
          "phase: ready\ntype: partition\nlocation: /dev/sda5\nfilesystem: xfs",
        ),
      };
    });
    const client = new TalosctlClient({ connection: CONNECTION, run });
    assert.equal(await client.etcdVolume("192.0.2.11"), "partition");
    assert.equal(await client.etcdVolume("192.0.2.12"), undefined);
    await assert.rejects(client.etcdVolume("192.0.2.13"), /connection refused/);
    assert.deepEqual(calls[0].args.slice(0, 5), [
      "get",
      "volumestatus",
      "ETCD",
      "--output",
      "yaml",
    ]);
    assert.equal(parseVolumeType(talos114Resource("x", "ETCD", "type: directory")), "directory");
  });
});

describe("TalosctlClient: the talosctl command lines", () => {
  it("asks a node's extensions and hands etcd's leadership over exactly", async () => {
    const { calls, run } = scripted((args) =>
      args[0] === "get" ? { stdout: recording("get-extensions").stdout } : {},
    );
    const client = new TalosctlClient({ connection: CONNECTION, run });
    assert.equal(await client.schematic("192.0.2.21"), SCHEMATIC);
    await client.etcdForfeitLeadership("192.0.2.13");
    const node = (n: string) => [...GLOBAL, "--nodes", n];
    assert.deepEqual(
      calls.map((c) => c.args),
      [
        ["get", "extensions", "--output", "yaml", ...node("192.0.2.21")],
        ["etcd", "forfeit-leadership", ...node("192.0.2.13")],
      ],
    );
  });

  it("passes the cluster's talosconfig, every control plane as endpoint and exactly one node", async () => {
    const { calls, run } = scripted(() => ({ stdout: recording("version").stdout }));
    const client = new TalosctlClient({ connection: CONNECTION, run });
    assert.equal(await client.nodeVersion("192.0.2.21"), "v1.13.9");
    assert.deepEqual(calls[0].args, ["version", ...GLOBAL, "--nodes", "192.0.2.21"]);
    assert.equal(calls[0].command, "talosctl");
  });

  it("builds each command exactly", async () => {
    const { calls, run } = scripted((args) => {
      if (args[0] === "etcd" && args[1] === "members")
        return { stdout: recording("etcd-members").stdout };
      if (args[0] === "service") return { stdout: recording("service-etcd").stdout };
      if (args[0] === "get") return { stdout: recording("get-machineconfig-v1alpha1").stdout };
      return {};
    });
    const client = new TalosctlClient({ connection: CONNECTION, run, binary: "/opt/talosctl" });
    await client.upgrade(
      "192.0.2.12",
      "factory.talos.dev/nocloud-installer/abc:v1.14.1",
      30 * 60_000,
    );
    await client.upgradeKubernetes("192.0.2.11", {
      to: "v1.37.1",
      dryRun: true,
      timeoutMs: 60 * 60_000,
    });
    await client.upgradeKubernetes("192.0.2.11", {
      to: "1.37.1",
      dryRun: false,
      timeoutMs: 60 * 60_000,
      noPrune: true,
      // The flags come in one order (upgrade-k8s's own), whatever this object's.
      images: {
        proxy: "registry.example.net:5000/k8s/kube-proxy",
        kubelet: "registry.example.net:5000/siderolabs/kubelet",
        apiserver: "registry.example.net:5000/k8s/kube-apiserver",
        "controller-manager": "registry.example.net:5000/k8s/kube-controller-manager",
        scheduler: "registry.example.net:5000/k8s/kube-scheduler",
      },
    });
    await client.health({
      via: "192.0.2.11",
      controlPlanes: ["192.0.2.11", "192.0.2.12"],
      workers: ["192.0.2.21"],
      timeoutMs: 600_000,
    });
    await client.etcdSnapshot("192.0.2.11", "/s/staging.snapshot");
    await client.etcdMembers("192.0.2.11");
    await client.service("192.0.2.11", "etcd");
    await client.etcdForfeitLeadership("192.0.2.12");
    await client.etcdLeave("192.0.2.12");
    await client.etcdRemoveMember("192.0.2.11", "3a1b2c3d4e5f6072");
    await client.wipeVolumes("192.0.2.12", ["EPHEMERAL", "ETCD"]);
    await client.bootstrapRecover("192.0.2.11", "/s/db.snapshot", false);
    await client.bootstrapRecover("192.0.2.11", "/s/db", true);
    await client.machineConfigs("192.0.2.21");
    await client.reboot("192.0.2.21", 30 * 60_000);
    const node = (n: string) => [...GLOBAL, "--nodes", n];
    assert.deepEqual(
      calls.map((c) => c.args),
      [
        [
          "upgrade",
          "--image",
          "factory.talos.dev/nocloud-installer/abc:v1.14.1",
          "--wait",
          "--timeout",
          "1800s",
          ...node("192.0.2.12"),
        ],
        ["upgrade-k8s", "--to", "1.37.1", "--dry-run", ...node("192.0.2.11")],
        [
          "upgrade-k8s",
          "--to",
          "1.37.1",
          "--manifests-no-prune",
          "--kubelet-image",
          "registry.example.net:5000/siderolabs/kubelet",
          "--apiserver-image",
          "registry.example.net:5000/k8s/kube-apiserver",
          "--controller-manager-image",
          "registry.example.net:5000/k8s/kube-controller-manager",
          "--scheduler-image",
          "registry.example.net:5000/k8s/kube-scheduler",
          "--proxy-image",
          "registry.example.net:5000/k8s/kube-proxy",
          ...node("192.0.2.11"),
        ],
        [
          "health",
          "--wait-timeout",
          "600s",
          "--control-plane-nodes",
          "192.0.2.11,192.0.2.12",
          "--worker-nodes",
          "192.0.2.21",
          ...node("192.0.2.11"),
        ],
        ["etcd", "snapshot", "/s/staging.snapshot", ...node("192.0.2.11")],
        ["etcd", "members", ...node("192.0.2.11")],
        ["service", "etcd", ...node("192.0.2.11")],
        ["etcd", "forfeit-leadership", ...node("192.0.2.12")],
        ["etcd", "leave", ...node("192.0.2.12")],
        ["etcd", "remove-member", "3a1b2c3d4e5f6072", ...node("192.0.2.11")],
        [
          "reset",
          "--graceful=false",
          "--reboot",
          "--system-labels-to-wipe=EPHEMERAL,ETCD",
          ...node("192.0.2.12"),
        ],
        ["bootstrap", "--recover-from=/s/db.snapshot", ...node("192.0.2.11")],
        ["bootstrap", "--recover-from=/s/db", "--recover-skip-hash-check", ...node("192.0.2.11")],
        ["get", "machineconfig", "--output", "yaml", ...node("192.0.2.21")],
        ["reboot", "--wait", "--timeout", "1800s", ...node("192.0.2.21")],
      ],
    );
    assert.ok(calls.every((c) => c.command === "/opt/talosctl"));
    // talosctl gets its own time-out and ours is longer, so it reports before it is killed.
    assert.ok(calls[0].timeoutMs > 30 * 60_000);
    assert.ok(calls[3].timeoutMs > 600_000);
  });

  it("streams upgrade-k8s's progress without a Secret's diff", async () => {
    const stdout = [
      'updating kubelet to version "1.37.1"',
      "updating manifests",
      " < created Secret/flux-system/flux-system",
      "--- a/v1.Secret/flux-system/flux-system",
      "+++ b/v1.Secret/flux-system/flux-system",
      "@@ -0,0 +1,2 @@",
      "+stringData:",
      "+  identity: private-key-material",
      "",
      "done",
      "",
    ].join("\n");
    const run: CommandRunner = async (_command, _args, options) => {
      options.onOutput?.(stdout);
      return { code: 0, stdout, stderr: "", timedOut: false };
    };
    let progress = "";
    const client = new TalosctlClient({
      connection: CONNECTION,
      run,
      progress: (text) => (progress += text),
    });
    await client.upgradeKubernetes("192.0.2.11", {
      to: "1.37.1",
      dryRun: false,
      timeoutMs: 60_000,
    });
    assert.doesNotMatch(progress, /private-key-material|stringData/);
    assert.match(progress, /^updating kubelet to version "1\.37\.1"\n/);
    assert.match(progress, /\(a Secret: its diff is not shown\)\ndone\n$/);
  });

  it("asks the client version without touching the cluster", async () => {
    const { calls, run } = scripted(() => ({ stdout: recording("version-client").stdout }));
    assert.equal(
      await new TalosctlClient({ connection: CONNECTION, run }).clientVersion(),
      "v1.13.0",
    );
    assert.deepEqual(calls[0].args, ["version", "--client", "--short"]);
  });

  it("says which talosctl to install when it is missing (exit 5)", async () => {
    const { run } = scripted(() =>
      Object.assign(new Error("spawn talosctl ENOENT"), { code: "ENOENT" }),
    );
    const client = new TalosctlClient({
      connection: { ...CONNECTION, clusterTalosVersion: "v1.13.9" },
      run,
    });
    await assert.rejects(client.clientVersion(), (error: UserError) => {
      assert.equal(error.exitCode, ExitCode.missingCli);
      assert.match(
        error.message,
        /^talosctl: could not be started \(not found\); got "talosctl"\. Install talosctl v1\.13 \(the cluster runs Talos v1\.13\.9\): https:\/\/github\.com\/siderolabs\/talos\/releases\/download\/v1\.13\.9\/talosctl-/,
      );
      return true;
    });
  });

  it("turns a failure into one message with talosctl's last error line", async () => {
    const { exitCode, stderr } = recording("etcd-leave-unreachable");
    const { run } = scripted(() => ({ code: exitCode, stderr }));
    await assert.rejects(
      new TalosctlClient({ connection: CONNECTION, run }).etcdLeave("192.0.2.13"),
      (error: UserError) => {
        // talosctl's last line is the node's error, indented under "1 error occurred:".
        assert.equal(
          error.message,
          'talosctl etcd leave --nodes 192.0.2.13: failed with exit code 1; got "\\t* 192.0.2.13: rpc error: code = Unavailable desc = connection error: desc = \\"transport: Error while dialing: dial tcp 192.0.2.13:50000: connect: connection refused\\"". Fix the cause (the node\'s state, its reachability) and rerun',
        );
        assert.ok(!error.message.includes("/tmp/x/talosconfig"));
        return true;
      },
    );
  });

  it("names the failing health check and the node's error, not the final deadline", async () => {
    const { exitCode, stderr } = recording("health-worker-down");
    const { run } = scripted(() => ({ code: exitCode, stderr }));
    const check = { via: "192.0.2.11", controlPlanes: [], workers: [], timeoutMs: 20_000 };
    await assert.rejects(
      new TalosctlClient({ connection: CONNECTION, run }).health(check),
      (error: UserError) => {
        assert.match(
          error.message,
          /^talosctl health --wait-timeout 20s --nodes 192\.0\.2\.11: the check "apid to be ready" did not pass \(waited up to 20s\); got "1 error occurred: 192\.0\.2\.23: rpc error: code = Unavailable .*connection refused\\"". Fix what it names/,
        );
        assert.doesNotMatch(error.message, /DeadlineExceeded/);
        return true;
      },
    );
  });

  it("reports a time-out", async () => {
    const { run } = scripted(() => ({ code: null, timedOut: true }));
    await assert.rejects(
      new TalosctlClient({ connection: CONNECTION, run }).nodeVersion("192.0.2.12"),
      /did not finish within 1m0s and was stopped/,
    );
  });

  it("streams progress of long commands only, never the machine config", async () => {
    const seen: string[] = [];
    const run: CommandRunner = async (_c, args, options) => {
      options.onOutput?.(`progress of ${args[0]}\n`);
      return {
        code: 0,
        stdout: args[0] === "get" ? recording("get-machineconfig-v1alpha1").stdout : "",
        stderr: "",
        timedOut: false,
      };
    };
    const client = new TalosctlClient({
      connection: CONNECTION,
      run,
      progress: (t) => seen.push(t),
    });
    await client.upgrade("192.0.2.12", "img:v1", 1000);
    await client.machineConfig("192.0.2.12");
    assert.deepEqual(seen, ["progress of upgrade\n"]);
  });
});

describe("spawnRunner", () => {
  it("stops a process that runs past its time-out", async () => {
    const result = await spawnRunner(process.execPath, ["-e", "setTimeout(() => {}, 20000)"], {
      timeoutMs: 150,
    });
    assert.equal(result.timedOut, true);
  });

  it("collects output and the exit code", async () => {
    const result = await spawnRunner(
      process.execPath,
      ["-e", "console.log('out'); console.error('err'); process.exit(3)"],
      { timeoutMs: 10_000 },
    );
    assert.deepEqual(
      [result.code, result.stdout, result.stderr, result.timedOut],
      [3, "out\n", "err\n", false],
    );
  });

  it("rejects with ENOENT when the program does not exist", async () => {
    const missing = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "no-talosctl-")), "talosctl");
    await assert.rejects(
      spawnRunner(missing, [], { timeoutMs: 1000 }),
      (error: NodeJS.ErrnoException) => error.code === "ENOENT",
    );
  });
});
