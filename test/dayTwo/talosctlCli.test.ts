// The day-two commands through the command line with the real talosctl client: a talosctl that
// answers from the fake cluster in talosctl v1.13's own formats, so argument lists and parsers are
// part of every test here.
import { strict as assert } from "node:assert";
import { runCli } from "../../automation/cli";
import {
  imageTag,
  parseHealthFailure,
  parseKubeletVersion,
  retagImage,
} from "../../automation/dayTwo/talosctlOutput";
import { parseDuration } from "../../automation/dayTwo/clock";
import { ExitCode, UserError } from "../../automation/errors";
import { cleanupRepos } from "../automation/helpers";
import { dayTwoFixture } from "./helpers";

const DIGEST = `sha256:${"4f".repeat(32)}`;
const PINNED = `ghcr.io/siderolabs/kubelet:v1.36.3@${DIGEST}`;

/** The arguments of the talosctl runs of one command, without the connection flags. */
function runsOf(calls: readonly { args: readonly string[] }[], command: string): string[][] {
  return calls
    .filter((c) => c.args[0] === command)
    .map((c) => [...c.args.slice(0, c.args.indexOf("--talosconfig"))]);
}

describe("kubelet images pinned by digest", () => {
  afterEach(cleanupRepos);

  it("reads the version from the tag before the digest, with a registry port, and not from a digest alone", () => {
    assert.equal(imageTag(PINNED), "v1.36.3");
    assert.equal(imageTag("registry.lan:5000/siderolabs/kubelet:v1.36.3"), "v1.36.3");
    assert.equal(imageTag("registry.lan:5000/siderolabs/kubelet"), undefined);
    assert.equal(imageTag(`ghcr.io/siderolabs/kubelet@${DIGEST}`), undefined);
    const spec = (image: string) => `node: 192.0.2.11\nspec:\n    image: ${image}\n`;
    assert.equal(parseKubeletVersion(spec(PINNED)), "1.36.3");
    assert.throws(
      () => parseKubeletVersion(spec(`ghcr.io/siderolabs/kubelet@${DIGEST}`)),
      /expected spec\.image with a version tag .*a digest may follow/,
    );
  });

  it("retags an installer pinned by digest without its old digest", () => {
    assert.equal(
      retagImage(`factory.talos.dev/nocloud-installer/abc:v1.13.9@${DIGEST}`, "v1.14.1"),
      "factory.talos.dev/nocloud-installer/abc:v1.14.1",
    );
    assert.equal(
      retagImage("registry.lan:5000/installer:v1.13.9", "v1.14.1"),
      "registry.lan:5000/installer:v1.14.1",
    );
    assert.equal(retagImage(`factory.talos.dev/installer@${DIGEST}`, "v1.14.1"), undefined);
  });

  it("preflight passes on a cluster whose kubelets are pinned by digest", async () => {
    const f = dayTwoFixture({ talosctl: true });
    for (const node of f.talos.nodes) node.kubeletImage = PINNED;
    const code = await runCli(["preflight", "staging"], f.ctx);
    assert.equal(code, ExitCode.ok, f.ctx.stdout.text + f.ctx.stderr.text);
    assert.match(f.ctx.stdout.text, /ok {4}nodes-healthy +6 nodes answer; talosctl health passed/);
    assert.match(f.ctx.stdout.text, /ok {4}kubernetes-path +1\.36\.3 \(no change\)/);
    assert.equal(
      runsOf(f.talosctlCalls, "get").filter((args) => args[1] === "kubeletspec").length,
      6,
      "every kubelet was read through talosctl",
    );
  });

  it("drift shows the version of a digest-pinned kubelet and exits 0", async () => {
    const f = dayTwoFixture({ talosctl: true });
    for (const node of f.talos.nodes) node.kubeletImage = PINNED;
    assert.equal(await runCli(["drift", "staging"], f.ctx), ExitCode.ok, f.ctx.stderr.text);
    assert.match(f.ctx.stdout.text, /^cp-1 +controlplane +v1\.13\.9 +1\.36\.3 +\S+ +same +ok$/m);
    assert.match(f.ctx.stderr.text, /no drift; 6 nodes match/);
  });

  it("names a kubelet image without a version tag instead of calling the node silent", async () => {
    const f = dayTwoFixture({ talosctl: true });
    f.talos.byName("w-2").kubeletImage = `ghcr.io/siderolabs/kubelet@${DIGEST}`;
    assert.equal(await runCli(["drift", "staging"], f.ctx), ExitCode.failed);
    assert.match(
      f.ctx.stdout.text,
      /^w-2: kubelet: talosctl get kubeletspec: expected spec\.image with a version tag/m,
    );
  });
});

describe("waits settable on the command line", () => {
  afterEach(cleanupRepos);

  it("parses Go-style durations and refuses anything else, naming the flag", () => {
    assert.equal(parseDuration("--health-timeout", "90s"), 90_000);
    assert.equal(parseDuration("--health-timeout", "20m"), 20 * 60_000);
    assert.equal(parseDuration("--health-timeout", "1h30m"), 90 * 60_000);
    for (const bad of ["10", "0s", "", "5 m", "1.5h", "30m1h"]) {
      assert.throws(
        () => parseDuration("--node-timeout", bad),
        (error: unknown) =>
          error instanceof UserError &&
          error.message ===
            `--node-timeout: must be a duration of more than zero, in hours, minutes and seconds; got ${JSON.stringify(bad)}. Use e.g. --node-timeout 20m, --node-timeout 90s or --node-timeout 1h30m`,
        bad,
      );
    }
  });

  it("documents each wait of upgrade talos with its default", async () => {
    const f = dayTwoFixture();
    assert.equal(await runCli(["upgrade", "talos", "--help"], f.ctx), ExitCode.ok);
    const help = f.ctx.stdout.text.replace(/\s+/g, " ");
    assert.match(help, /--upgrade-timeout <duration> .*\(default: 30m0s\)/);
    assert.match(help, /--node-timeout <duration> .*\(default: 15m0s\)/);
    assert.match(help, /--health-timeout <duration> .*\(default: 10m0s\)/);
  });

  it("passes upgrade talos' waits to talosctl and to the come-back wait", async () => {
    const f = dayTwoFixture({ talosctl: true });
    const code = await runCli(
      [
        "upgrade",
        "talos",
        "staging",
        "--to",
        "v1.14.1",
        "--upgrade-timeout",
        "45m",
        "--node-timeout",
        "5m",
        "--health-timeout",
        "2m",
      ],
      f.ctx,
    );
    assert.equal(code, ExitCode.ok, f.ctx.stdout.text + f.ctx.stderr.text);
    const upgrades = runsOf(f.talosctlCalls, "upgrade");
    assert.equal(upgrades.length, 6);
    for (const args of upgrades) {
      assert.deepEqual(args.slice(-5), ["--wait", "--timeout", "2700s", "--drain-timeout", "300s"]);
    }
    const health = runsOf(f.talosctlCalls, "health");
    assert.ok(health.length >= 7, "preflight, then after every node");
    for (const args of health)
      assert.deepEqual(args.slice(0, 3), ["health", "--wait-timeout", "120s"]);
    // talosctl is stopped only after its own wait (plus a margin), so it reports first.
    const upgradeRun = f.talosctlCalls.find((c) => c.args[0] === "upgrade")!;
    assert.ok(upgradeRun.timeoutMs > 45 * 60_000);
  });

  it("waits --node-timeout for a node that does not come back, and says so", async () => {
    const f = dayTwoFixture({ talosctl: true });
    f.talos.upgrades.set("cp-2", "down");
    const code = await runCli(
      ["upgrade", "talos", "staging", "--to", "v1.14.1", "--node-timeout", "4m"],
      f.ctx,
    );
    assert.equal(code, ExitCode.failed);
    assert.match(f.ctx.stdout.text, /stopped at: {2}cp-2: did not answer within 4m0s/);
  });

  it("refuses a bad wait before anything is read", async () => {
    const f = dayTwoFixture({ talosctl: true });
    const code = await runCli(
      ["upgrade", "talos", "staging", "--to", "v1.14.1", "--health-timeout", "10"],
      f.ctx,
    );
    assert.equal(code, ExitCode.usage);
    assert.match(f.ctx.stderr.text, /--health-timeout: must be a duration of more than zero/);
    assert.deepEqual(f.ctx.workspaces.calls, []);
    assert.deepEqual(f.talosctlCalls, []);
  });

  it("passes upgrade kubernetes' waits to upgrade-k8s and health, and preflight's to health", async () => {
    const f = dayTwoFixture({ talosctl: true });
    for (const node of f.talos.nodes) node.kubelet = "1.35.6";
    const code = await runCli(
      [
        "upgrade",
        "kubernetes",
        "staging",
        "--to",
        "1.36.3",
        "--upgrade-timeout",
        "90m",
        "--health-timeout",
        "15m",
      ],
      f.ctx,
    );
    assert.equal(code, ExitCode.ok, f.ctx.stdout.text + f.ctx.stderr.text);
    const k8s = f.talosctlCalls.filter((c) => c.args[0] === "upgrade-k8s");
    assert.deepEqual(
      k8s.map((c) => c.timeoutMs),
      [90 * 60_000, 90 * 60_000],
    );
    for (const args of runsOf(f.talosctlCalls, "health"))
      assert.deepEqual(args.slice(0, 3), ["health", "--wait-timeout", "900s"]);

    const p = dayTwoFixture({ talosctl: true });
    assert.equal(await runCli(["preflight", "staging", "--health-timeout", "1m"], p.ctx), 0);
    assert.deepEqual(runsOf(p.talosctlCalls, "health")[0].slice(0, 3), [
      "health",
      "--wait-timeout",
      "60s",
    ]);
  });
});

describe("a failing health check", () => {
  afterEach(cleanupRepos);

  it("finds the check talosctl reported failing, not its final deadline error", () => {
    const output = [
      'discovered nodes: ["192.0.2.11"]',
      "waiting for etcd to be healthy: ...",
      "waiting for etcd to be healthy: 192.0.2.12: rpc error: code = Unavailable",
      "waiting for etcd to be healthy: OK",
      "waiting for all k8s nodes to report ready: ...",
      "waiting for all k8s nodes to report ready: some nodes are not ready: [w-1]",
      "rpc error: code = DeadlineExceeded desc = context deadline exceeded",
    ].join("\n");
    assert.deepEqual(parseHealthFailure(output), {
      check: "all k8s nodes to report ready",
      reason: "some nodes are not ready: [w-1]",
    });
    assert.equal(
      parseHealthFailure("waiting for etcd to be healthy: x\nwaiting for etcd to be healthy: OK\n"),
      undefined,
      "a check that recovered is not a failure",
    );
    assert.equal(parseHealthFailure("error: rpc error: code = Unavailable\n"), undefined);
  });

  it("stops the roll naming the failing check as talosctl reported it, shown while it waited", async () => {
    const f = dayTwoFixture({ talosctl: true });
    f.talos.healthFailsAfter = "cp-2";
    const code = await runCli(
      ["upgrade", "talos", "staging", "--to", "v1.14.1", "--health-timeout", "3m"],
      f.ctx,
    );
    assert.equal(code, ExitCode.failed);
    // Streamed as talosctl printed it, before the roll's own report.
    const streamed = f.ctx.stderr.text.indexOf(
      "    | waiting for all k8s nodes to report ready: some nodes are not ready: [cp-2]",
    );
    const refusal = f.ctx.stderr.text.indexOf("upgrade talos staging: stopped at cp-2 (health)");
    assert.ok(streamed >= 0 && refusal > streamed, f.ctx.stderr.text);
    assert.match(
      f.ctx.stdout.text,
      /stopped at: {2}cp-2: the cluster health check failed: talosctl health --wait-timeout 180s .* the check "all k8s nodes to report ready" did not pass \(waited up to 3m0s\): "some nodes are not ready: \[cp-2\]"/,
    );
    assert.ok(!f.ctx.stdout.text.includes("context deadline exceeded"));
    assert.deepEqual(
      f.talos.callsOf("upgrade").map((l) => l.split(" ")[1]),
      ["cp-1", "cp-2"],
      "no further node was touched",
    );
  });

  it("fails preflight with the failing check", async () => {
    const f = dayTwoFixture({ talosctl: true });
    f.talos.healthFailsAfter = true;
    assert.equal(await runCli(["preflight", "staging"], f.ctx), ExitCode.refused);
    assert.match(
      f.ctx.stdout.text,
      /FAIL {2}nodes-healthy +cluster health: talosctl health did not pass; got ".*the check \\"all k8s nodes to report ready\\" did not pass/,
    );
  });
});
