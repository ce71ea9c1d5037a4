import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as path from "node:path";
import { runCli } from "../../automation/cli";
import { ExitCode } from "../../automation/errors";
import { createPrivateFileOnce, fileMode, writePrivateFile } from "../../automation/files";
import { cleanupRepos, makeRepo, testContext } from "./helpers";

const KUBECONFIG =
  "apiVersion: v1\nkind: Config\nusers:\n- name: admin\n  user:\n    client-key-data: S3CR3T-KUBE-KEY\n";
const TALOSCONFIG = "context: staging\ncontexts:\n  staging:\n    key: S3CR3T-TALOS-KEY\n";

function withOutputs(root: string, cwd = root) {
  const ctx = testContext({ repoRoot: root, cwd });
  ctx.workspaces.outputs = {
    clusterName: { value: "staging", secret: false },
    endpoint: { value: "https://api.staging.example.net:6443", secret: false },
    nodes: { value: { controlplane: { "stg-cp-1": "192.0.2.11" }, worker: {} }, secret: false },
    talosVersion: { value: "v1.13.9", secret: false },
    kubernetesVersion: { value: "1.36.3", secret: false },
    configHashes: { value: { "stg-cp-1": "ab12" }, secret: false },
    proxmoxToken: { value: "S3CR3T-TOKEN", secret: true },
    kubeconfig: { value: KUBECONFIG, secret: true },
    talosconfig: { value: TALOSCONFIG, secret: true },
  };
  return ctx;
}

describe("files with secrets", () => {
  let dir: string;
  beforeEach(() => {
    dir = makeRepo();
  });
  afterEach(cleanupRepos);

  it("creates a secret file with mode 0600 even under a permissive umask", () => {
    const file = path.join(dir, "kubeconfig");
    const previous = process.umask(0);
    try {
      writePrivateFile(file, "secret");
    } finally {
      process.umask(previous);
    }
    assert.equal(fileMode(file), 0o600);
    assert.equal(fs.readFileSync(file, "utf8"), "secret");
  });

  it("replaces an existing readable file with a 0600 one and leaves no temporary file", () => {
    const file = path.join(dir, "staging.kubeconfig");
    fs.writeFileSync(file, "old", { mode: 0o644 });
    fs.chmodSync(file, 0o644);
    writePrivateFile(file, "new");
    assert.equal(fileMode(file), 0o600);
    assert.equal(fs.readFileSync(file, "utf8"), "new");
    assert.deepEqual(
      fs.readdirSync(dir).filter((f) => f.endsWith(".tmp")),
      [],
    );
  });

  it("creates a file once and never overwrites it", () => {
    const file = path.join(dir, "passphrase");
    assert.equal(createPrivateFileOnce(file, "first"), true);
    assert.equal(createPrivateFileOnce(file, "second"), false);
    assert.equal(fs.readFileSync(file, "utf8"), "first");
    assert.equal(fileMode(file), 0o600);
  });

  it("writes the kubeconfig to ./<env>.kubeconfig with mode 0600 and prints its path, never its content", async () => {
    const cwd = path.join(dir, "ops");
    fs.mkdirSync(cwd);
    const ctx = withOutputs(dir, cwd);
    assert.equal(await runCli(["kubeconfig", "staging"], ctx), ExitCode.ok);
    const file = path.join(cwd, "staging.kubeconfig");
    assert.equal(fs.readFileSync(file, "utf8"), KUBECONFIG);
    assert.equal(fileMode(file), 0o600);
    assert.equal(ctx.stdout.text, `${file}\n`);
    assert.match(ctx.stderr.text, new RegExp(`export KUBECONFIG=${file}`));
    assert.doesNotMatch(ctx.stdout.text + ctx.stderr.text, /S3CR3T/);
    assert.deepEqual(
      ctx.workspaces.callsOf("outputs").map((c) => c.stackName),
      ["staging"],
    );
  });

  it("writes the talosconfig where --out says, replacing an existing file with --force and tightening it to 0600", async () => {
    const ctx = withOutputs(dir);
    const file = path.join(dir, "talos", "config");
    fs.mkdirSync(path.dirname(file));
    fs.writeFileSync(file, "stale");
    fs.chmodSync(file, 0o644);
    assert.equal(
      await runCli(["talosconfig", "staging", "--out", "talos/config", "--force"], ctx),
      ExitCode.ok,
    );
    assert.equal(fs.readFileSync(file, "utf8"), TALOSCONFIG);
    assert.equal(fileMode(file), 0o600);
    assert.match(ctx.stderr.text, /export TALOSCONFIG=/);
    assert.doesNotMatch(ctx.stdout.text + ctx.stderr.text, /S3CR3T/);
  });

  it("says how to get a kubeconfig when the stack has none yet", async () => {
    const ctx = testContext({ repoRoot: dir });
    assert.equal(await runCli(["kubeconfig", "prod"], ctx), ExitCode.usage);
    assert.equal(
      ctx.stderr.text.trim(),
      "foundation/prod: the stack has no kubeconfig output; got []. Create the cluster first: npm run platform -- up prod",
    );
    assert.equal(fs.existsSync(path.join(dir, "prod.kubeconfig")), false);
  });

  it("prints the outputs with secrets as [secret]", async () => {
    const ctx = withOutputs(dir);
    assert.equal(await runCli(["outputs", "staging"], ctx), ExitCode.ok);
    assert.equal(
      ctx.stdout.text,
      [
        "clusterName: staging",
        "configHashes:",
        "  stg-cp-1: ab12",
        "endpoint: https://api.staging.example.net:6443",
        'kubeconfig: "[secret]"',
        "kubernetesVersion: 1.36.3",
        "nodes:",
        "  controlplane:",
        "    stg-cp-1: 192.0.2.11",
        "  worker: {}",
        'proxmoxToken: "[secret]"',
        "talosVersion: v1.13.9",
        'talosconfig: "[secret]"',
        "",
      ].join("\n"),
    );
  });

  it("shows secrets with --show-secrets, but never the kubeconfig or talosconfig content", async () => {
    const ctx = withOutputs(dir);
    assert.equal(
      await runCli(["outputs", "staging", "--show-secrets", "--json"], ctx),
      ExitCode.ok,
    );
    const shown = JSON.parse(ctx.stdout.text) as Record<string, unknown>;
    assert.equal(shown.proxmoxToken, "S3CR3T-TOKEN");
    assert.equal(
      shown.kubeconfig,
      "[secret] (write it to a file with: npm run platform -- kubeconfig staging)",
    );
    assert.equal(
      shown.talosconfig,
      "[secret] (write it to a file with: npm run platform -- talosconfig staging)",
    );
    assert.doesNotMatch(ctx.stdout.text, /S3CR3T-KUBE-KEY|S3CR3T-TALOS-KEY/);
  });
});
