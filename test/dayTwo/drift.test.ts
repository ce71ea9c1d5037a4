import { strict as assert } from "node:assert";
import { runCli } from "../../automation/cli";
import { canonicalJson, configDifferences } from "../../automation/dayTwo/configCompare";
import { ExitCode } from "../../automation/errors";
import { cleanupRepos } from "../automation/helpers";
import { NODES, dayTwoFixture, foundationOutputs, generatedConfig, stackYaml } from "./helpers";

describe("drift: config comparison", () => {
  it("ignores comments, key order, quoting and document order", () => {
    const a = generatedConfig("cp-1", "controlplane");
    const b = [
      "# applied by hand",
      "apiVersion: v1alpha1",
      "kind: HostnameConfig",
      "auto: 'off'",
      'hostname: "cp-1"',
      "---",
      "cluster: { clusterName: staging }",
      "machine:",
      "  install: { disk: /dev/sda, image: 'factory.talos.dev/nocloud-installer/ce4c980550dd2ab1b17bbf2b08801c7eb59418eafe8f279833297925d67c7515:v1.13.9' }",
      "  token: secret-machine-token",
      "  type: controlplane",
      "version: v1alpha1",
      "",
    ].join("\n");
    assert.deepEqual(configDifferences(a, b), []);
  });

  it("names the paths that differ and the documents only one side has, never the values", () => {
    const a = generatedConfig("cp-1", "controlplane");
    const b = a
      .replace("token: secret-machine-token", "token: another-secret")
      .replace("kind: HostnameConfig", "kind: ResolverConfig");
    const paths = configDifferences(a, b);
    assert.deepEqual(paths, [
      "- HostnameConfig (only in the stack)",
      "+ ResolverConfig (only on the node)",
      "v1alpha1: machine.token",
    ]);
    assert.ok(!paths.join("\n").includes("secret"));
  });

  it("canonical JSON sorts keys at every level", () => {
    assert.equal(
      canonicalJson({ b: 1, a: { d: [2, { f: 1, e: 0 }], c: null } }),
      '{"a":{"c":null,"d":[2,{"e":0,"f":1}]},"b":1}',
    );
  });
});

describe("drift <env>", () => {
  afterEach(cleanupRepos);

  it("prints one row per node and exits 0 when every node matches the stack", async () => {
    const f = dayTwoFixture();
    assert.equal(await runCli(["drift", "staging"], f.ctx), ExitCode.ok, f.ctx.stderr.text);
    const lines = f.ctx.stdout.text.trimEnd().split("\n");
    assert.match(lines[0], /^NODE +ROLE +TALOS +KUBERNETES +SCHEMATIC +CONFIG +STATUS$/);
    assert.match(lines[1], /^cp-1 +controlplane +v1\.13\.9 +1\.36\.3 +ce4c980550dd +same +ok$/);
    assert.equal(lines.length, 7);
    assert.match(f.ctx.stderr.text, /drift staging: no drift; 6 nodes match Pulumi\.staging\.yaml/);
  });

  it("exits 6 and shows what differs: a Talos version, a kubelet, a config path", async () => {
    const f = dayTwoFixture();
    f.talos.byName("cp-2").version = "v1.13.8";
    f.talos.byName("w-1").kubelet = "1.36.2";
    f.talos.byName("w-3").config = f.talos
      .byName("w-3")
      .config.replace("disk: /dev/sda", "disk: /dev/vda");
    assert.equal(await runCli(["drift", "staging"], f.ctx), ExitCode.drift);
    const out = f.ctx.stdout.text;
    assert.match(
      out,
      /^cp-2 +controlplane +v1\.13\.8 \(stack: v1\.13\.9\) +1\.36\.3 +\S+ +same +drift$/m,
    );
    assert.match(out, /^w-1 +worker +v1\.13\.9 +1\.36\.2 \(stack: 1\.36\.3\) +\S+ +same +drift$/m);
    assert.match(out, /^w-3 +worker +v1\.13\.9 +1\.36\.3 +\S+ +1 path differs +drift$/m);
    assert.match(out, /^w-3 config differs at:\n {2}v1alpha1: machine\.install\.disk$/m);
    assert.ok(!out.includes("secret-machine-token"), "config values are never printed");
    assert.match(
      f.ctx.stderr.text,
      /drift staging: 3 of 6 nodes differ from Pulumi\.staging\.yaml:\n {2}changed behind the program's back: cp-2, w-1, w-3 \(up restores/,
    );
  });

  it("tells a staged change and a version the stack file asks for from a change behind its back", async () => {
    const f = dayTwoFixture({ stack: stackYaml("v1.13.9", "1.37.1") });
    f.talos.stage("w-1", "vm.swappiness: 1");
    // The stack generated w-1's staged config (an up staged it), and its running one is the old.
    const generated = f.ctx.workspaces.outputs.machineConfigurations.value as Record<
      string,
      string
    >;
    generated["w-1"] = f.talos.staged.get("w-1")!;
    f.talos.byName("w-2").config = f.talos.byName("w-2").config.replace("/dev/sda", "/dev/vda");
    assert.equal(await runCli(["drift", "staging"], f.ctx), ExitCode.drift);
    const out = f.ctx.stdout.text;
    assert.match(
      out,
      /^cp-1 +controlplane +v1\.13\.9 +1\.36\.3 \(stack: 1\.37\.1\) +\S+ +same +pending$/m,
    );
    assert.match(
      out,
      /^w-1 +worker +v1\.13\.9 +1\.36\.3 \(stack: 1\.37\.1\) +\S+ +1 path differs \(staged\) +pending$/m,
    );
    assert.match(out, /^w-2 +worker .* +1 path differs +drift$/m);
    const summary = f.ctx.stderr.text;
    assert.match(summary, /changed behind the program's back: w-2 \(up restores/);
    assert.match(summary, /not the stack file's: cp-1, cp-2, cp-3, w-1, w-3 \(up converges them\)/);
  });

  it("names a node whose only difference is the stack's staged config as waiting for rollout", async () => {
    const f = dayTwoFixture();
    f.talos.stage("w-3", "vm.swappiness: 1");
    const generated = f.ctx.workspaces.outputs.machineConfigurations.value as Record<
      string,
      string
    >;
    generated["w-3"] = f.talos.staged.get("w-3")!;
    assert.equal(await runCli(["drift", "staging"], f.ctx), ExitCode.drift);
    assert.match(f.ctx.stdout.text, /^w-3 +worker .* +staged$/m);
    assert.match(
      f.ctx.stderr.text,
      /the stack's config staged, waiting for a reboot: w-3 \(rollout\)/,
    );
  });

  it("tells a schematic up has yet to roll from one changed behind the program's back", async () => {
    const NEW = "b".repeat(64);
    const f = dayTwoFixture();
    f.ctx.workspaces.outputs = {
      ...f.ctx.workspaces.outputs,
      desiredInstallers: {
        value: Object.fromEntries(
          NODES.map((n) => [n.name, `factory.talos.dev/nocloud-installer/${NEW}:v1.13.9`]),
        ),
        secret: false,
      },
    };
    f.talos.byName("cp-1").schematic = NEW;
    f.talos.byName("w-2").schematic = "c".repeat(64);
    assert.equal(await runCli(["drift", "staging"], f.ctx), ExitCode.drift);
    const out = f.ctx.stdout.text;
    assert.match(out, /^cp-1 +controlplane +v1\.13\.9 +1\.36\.3 +bbbbbbbbbbbb +same +ok$/m);
    assert.match(
      out,
      /^cp-2 +controlplane +v1\.13\.9 +1\.36\.3 +ce4c980550dd \(stack: bbbbbbbbbbbb\) +same +pending$/m,
    );
    assert.match(out, /^w-2 +worker +.* +cccccccccccc \(stack: bbbbbbbbbbbb\) +same +drift$/m);
  });

  it("compares against the stack file's versions, not the last deployed ones", async () => {
    const f = dayTwoFixture({ stack: stackYaml("v1.14.1", "1.36.3") });
    assert.equal(await runCli(["drift", "staging"], f.ctx), ExitCode.drift);
    assert.match(f.ctx.stdout.text, /^cp-1 +controlplane +v1\.13\.9 \(stack: v1\.14\.1\)/m);
  });

  it("reports a node that does not answer and exits 1 when nothing else drifted", async () => {
    const f = dayTwoFixture();
    f.talos.byName("w-2").up = false;
    assert.equal(await runCli(["drift", "staging"], f.ctx), ExitCode.failed);
    assert.match(f.ctx.stdout.text, /^w-2 +worker +\? +\? +\? +\? +unreachable$/m);
    assert.match(f.ctx.stdout.text, /^w-2: rpc error: code = Unavailable/m);
  });

  it("shows declared nodes that were never deployed as drift", async () => {
    const nodes = [...NODES, { name: "w-4", address: "192.0.2.24", role: "worker" as const }];
    const f = dayTwoFixture({
      stack: stackYaml("v1.13.9", "1.36.3", nodes),
      outputs: foundationOutputs(),
    });
    assert.equal(await runCli(["drift", "staging"], f.ctx), ExitCode.drift);
    assert.match(f.ctx.stdout.text, /^w-4 +worker +- +- +- +- +not deployed$/m);
  });

  it("writes the talosconfig to a 0600 temp file for talosctl and removes it afterwards", async () => {
    const f = dayTwoFixture();
    let mode = 0;
    let existed = false;
    const original = f.talos.nodeVersion.bind(f.talos);
    const fs = await import("node:fs");
    f.talos.nodeVersion = async (node) => {
      const file = f.talos.connections[0].talosconfig;
      existed = fs.existsSync(file);
      mode = fs.statSync(file).mode & 0o777;
      return original(node);
    };
    await runCli(["drift", "staging"], f.ctx);
    const connection = f.talos.connections[0];
    assert.ok(existed);
    assert.equal(mode, 0o600);
    assert.ok(!fs.existsSync(connection.talosconfig), "removed after the command");
    assert.deepEqual(connection.endpoints, ["192.0.2.11", "192.0.2.12", "192.0.2.13"]);
    assert.ok(!f.ctx.stdout.text.includes("c2VjcmV0") && !f.ctx.stderr.text.includes("c2VjcmV0"));
  });
});
