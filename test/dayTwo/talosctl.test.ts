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
  imageTag,
  normalizeTag,
  parseClientVersion,
  parseEtcdMembers,
  parseKubeletVersion,
  parseMachineConfig,
  parseServerVersion,
  parseServiceStatus,
  retagImage,
} from "../../automation/dayTwo/talosctlOutput";
import { ExitCode, UserError } from "../../automation/errors";

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

describe("talosctl output parsing", () => {
  it("reads the client version from --client --short, and from the older long form", () => {
    assert.equal(parseClientVersion("Client:\nTalos v1.13.9\n"), "v1.13.9");
    assert.equal(
      parseClientVersion(
        "Client:\n\tTag:         v1.12.4\n\tSHA:         abc\n\tBuilt:       \n\tGo version:  go1.24\n\tOS/Arch:     linux/amd64\n",
      ),
      "v1.12.4",
    );
  });

  it("reads the node's version under Server:, not the client's", () => {
    const out = [
      "Client:",
      "\tTag:         v1.14.1",
      "\tSHA:         1234abcd",
      "Server:",
      "\tNODE:        192.0.2.11",
      "\tTag:         v1.13.9",
      "\tSHA:         deadbeef",
      "\tEnabled:     RBAC",
    ].join("\n");
    assert.equal(parseServerVersion(out), "v1.13.9");
    assert.equal(
      parseServerVersion(
        '{"metadata":{"hostname":"192.0.2.11"},"version":{"tag":"v1.13.9","sha":"x"}}\n',
      ),
      "v1.13.9",
      "the hidden --json form",
    );
    assert.throws(
      () => parseServerVersion("Client:\n\tTag: v1.14.1\n"),
      /expected a `Tag:` line under `Server:`/,
    );
  });

  it("reads etcd members by header position, with or without NODE and LEARNER, and with an unstarted member", () => {
    const current = [
      "NODE         ID                 HOSTNAME   PEER URLS                  CLIENT URLS                LEARNER",
      "192.0.2.11   3a1b2c3d4e5f6071   cp-1       https://192.0.2.11:2380    https://192.0.2.11:2379    false",
      "192.0.2.11   3a1b2c3d4e5f6072              https://192.0.2.12:2380                               true",
      "192.0.2.11   3a1b2c3d4e5f6073   cp-3       https://[2001:db8::13]:2380 https://[2001:db8::13]:2379 false",
    ].join("\n");
    const members = parseEtcdMembers(current);
    assert.deepEqual(members[0], {
      id: "3a1b2c3d4e5f6071",
      hostname: "cp-1",
      peerUrls: ["https://192.0.2.11:2380"],
      learner: false,
    });
    assert.equal(members[1].hostname, "");
    assert.equal(members[1].learner, true);
    assert.equal(members.length, 3);
    const old =
      "ID                 HOSTNAME   PEER URLS                 CLIENT URLS\n2a1b2c3d4e5f6071   cp-1       https://192.0.2.11:2380   https://192.0.2.11:2379\n";
    assert.deepEqual(
      parseEtcdMembers(old).map((m) => [m.id, m.hostname, m.learner]),
      [["2a1b2c3d4e5f6071", "cp-1", false]],
    );
    assert.throws(
      () => parseEtcdMembers("error: something"),
      /expected a table with ID and HOSTNAME columns/,
    );
  });

  it("reads a service's STATE and HEALTH", () => {
    const out =
      "NODE     192.0.2.11\nID       etcd\nSTATE    Preparing\nHEALTH   ?\nEVENTS   [Preparing]: Running pre state (2m ago)\n";
    assert.deepEqual(parseServiceStatus(out), { state: "Preparing", health: "?" });
  });

  it("reads the kubelet version from the kubelet image tag", () => {
    const out =
      "node: 192.0.2.11\nmetadata:\n    namespace: k8s\n    type: KubeletSpecs.kubernetes.talos.dev\n    id: kubelet\nspec:\n    image: ghcr.io/siderolabs/kubelet:v1.36.3\n    args: []\n";
    assert.equal(parseKubeletVersion(out), "1.36.3");
  });

  it("reads the machine config whether the spec is the documents as a string or a mapping, and never echoes it on failure", () => {
    const asString =
      "node: 192.0.2.11\nmetadata:\n    id: v1alpha1\nspec: |\n    version: v1alpha1\n    machine:\n        token: s3cret\n    ---\n    apiVersion: v1alpha1\n    kind: HostnameConfig\n    hostname: cp-1\n";
    assert.match(
      parseMachineConfig(asString),
      /^version: v1alpha1\nmachine:\n {4}token: s3cret\n---\napiVersion/,
    );
    const asMap =
      "node: 192.0.2.11\nmetadata:\n    id: v1alpha1\nspec:\n    version: v1alpha1\n    machine:\n        token: s3cret\n";
    assert.match(parseMachineConfig(asMap), /token: s3cret/);
    assert.throws(
      () => parseMachineConfig("node: x\nmetadata: {}\ntoken: s3cret\n"),
      (error: Error) => !error.message.includes("s3cret") && /output withheld/.test(error.message),
    );
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

describe("TalosctlClient: the talosctl command lines", () => {
  it("passes the cluster's talosconfig, every control plane as endpoint and exactly one node", async () => {
    const { calls, run } = scripted(() => ({
      stdout: "Client:\n\tTag: v1.14.1\nServer:\n\tNODE: 192.0.2.13\n\tTag: v1.13.9\n",
    }));
    const client = new TalosctlClient({ connection: CONNECTION, run });
    assert.equal(await client.nodeVersion("192.0.2.13"), "v1.13.9");
    assert.deepEqual(calls[0].args, ["version", ...GLOBAL, "--nodes", "192.0.2.13"]);
    assert.equal(calls[0].command, "talosctl");
  });

  it("builds each command exactly", async () => {
    const { calls, run } = scripted((args) => {
      if (args[0] === "etcd" && args[1] === "members") return { stdout: "ID  HOSTNAME\n" };
      if (args[0] === "service") return { stdout: "STATE Running\nHEALTH OK\n" };
      if (args[0] === "get") return { stdout: "node: 192.0.2.21\nspec: |\n  version: v1alpha1\n" };
      return {};
    });
    const client = new TalosctlClient({ connection: CONNECTION, run, binary: "/opt/talosctl" });
    await client.upgrade(
      "192.0.2.12",
      "factory.talos.dev/nocloud-installer/abc:v1.14.1",
      30 * 60_000,
    );
    await client.upgradeKubernetes("192.0.2.11", "v1.37.1", true, 60 * 60_000);
    await client.upgradeKubernetes("192.0.2.11", "1.37.1", false, 60 * 60_000);
    await client.health({
      via: "192.0.2.11",
      controlPlanes: ["192.0.2.11", "192.0.2.12"],
      workers: ["192.0.2.21"],
      timeoutMs: 600_000,
    });
    await client.etcdSnapshot("192.0.2.11", "/s/staging.snapshot");
    await client.etcdMembers("192.0.2.11");
    await client.service("192.0.2.11", "etcd");
    await client.etcdLeave("192.0.2.12");
    await client.etcdRemoveMember("192.0.2.11", "3a1b2c3d4e5f6072");
    await client.wipeEphemeral("192.0.2.12");
    await client.bootstrapRecover("192.0.2.11", "/s/db.snapshot", false);
    await client.bootstrapRecover("192.0.2.11", "/s/db", true);
    await client.stagedConfig("192.0.2.21");
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
        ["upgrade-k8s", "--to", "1.37.1", ...node("192.0.2.11")],
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
        ["etcd", "leave", ...node("192.0.2.12")],
        ["etcd", "remove-member", "3a1b2c3d4e5f6072", ...node("192.0.2.11")],
        [
          "reset",
          "--graceful=false",
          "--reboot",
          "--system-labels-to-wipe=EPHEMERAL",
          ...node("192.0.2.12"),
        ],
        ["bootstrap", "--recover-from=/s/db.snapshot", ...node("192.0.2.11")],
        ["bootstrap", "--recover-from=/s/db", "--recover-skip-hash-check", ...node("192.0.2.11")],
        ["get", "machineconfig", "persistent", "--output", "yaml", ...node("192.0.2.21")],
        ["reboot", "--wait", "--timeout", "1800s", ...node("192.0.2.21")],
      ],
    );
    assert.ok(calls.every((c) => c.command === "/opt/talosctl"));
    // talosctl gets its own time-out and ours is longer, so it reports before it is killed.
    assert.ok(calls[0].timeoutMs > 30 * 60_000);
    assert.ok(calls[3].timeoutMs > 600_000);
  });

  it("asks the client version without touching the cluster", async () => {
    const { calls, run } = scripted(() => ({ stdout: "Client:\nTalos v1.13.9\n" }));
    assert.equal(
      await new TalosctlClient({ connection: CONNECTION, run }).clientVersion(),
      "v1.13.9",
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
    const { run } = scripted(() => ({
      code: 1,
      stderr: "some progress\nerror: rpc error: code = Unavailable desc = connection refused\n",
    }));
    await assert.rejects(
      new TalosctlClient({ connection: CONNECTION, run }).etcdLeave("192.0.2.12"),
      (error: UserError) => {
        assert.equal(
          error.message,
          'talosctl etcd leave --nodes 192.0.2.12: failed with exit code 1; got "error: rpc error: code = Unavailable desc = connection refused". Fix the cause (the node\'s state, its reachability) and rerun',
        );
        assert.ok(!error.message.includes("/tmp/x/talosconfig"));
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
        stdout: args[0] === "get" ? "spec: |\n  version: v1alpha1\n" : "",
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
