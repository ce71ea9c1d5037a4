// The production workspace factory (Automation API LocalWorkspace) driving a fake `pulumi`
// executable that records its command lines and environment: what actually reaches the process
// table, the engine's environment and the stack file.
import { PulumiCommand } from "@pulumi/pulumi/automation";
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as path from "node:path";
import { runCli } from "../../automation/cli";
import { ExitCode } from "../../automation/errors";
import { localWorkspaceFactory } from "../../automation/workspace";
import { RUN_SECRETS_FILE_ENV } from "../../components/config/runSecretsEnv";
import { FAKE_ENCRYPTED_KEY, FakePulumi } from "./fakePulumi";
import { MemorySink, cleanupRepos, makeRepo, testContext } from "./helpers";

const KMS = "gcpkms://projects/example/locations/europe-west3/keyRings/pulumi/cryptoKeys/state";

/** A foundation stack that needs the Proxmox token, on a KMS secrets provider. */
const STACK = [
  "# staging: comments and layout are the operator's",
  `secretsprovider: ${KMS}`,
  "config:",
  "  talos-platform:backend: gs://example-state",
  "  talos-platform:nodes:",
  "    - { name: cp-1, role: controlplane, platform: proxmox }",
  "",
].join("\n");

/** The stack file after the engine's first run: the operator's text and the key the engine minted. */
const WITH_KEY = STACK.replace(
  `secretsprovider: ${KMS}\n`,
  `secretsprovider: ${KMS}\nencryptedkey: ${FAKE_ENCRYPTED_KEY}\n`,
);

const TOKEN = "pve-FAKE-SECRET-token";
const GCP_KEY = '{"type":"service_account","private_key":"FAKE-SECRET-gcp"}';

describe("what the Automation API spawns", () => {
  let fake: FakePulumi;
  beforeEach(() => {
    fake = new FakePulumi();
  });
  afterEach(() => {
    fake.remove();
    cleanupRepos();
  });

  /** The CLI with the production factory over the fake Pulumi CLI. */
  const context = (repoRoot: string, env: Record<string, string>) => ({
    ...testContext({ repoRoot, env }),
    workspaces: localWorkspaceFactory({
      cliSource: {
        get: () => PulumiCommand.get({ root: fake.dir, skipVersionCheck: true }),
        install: () => PulumiCommand.get({ root: fake.dir, skipVersionCheck: true }),
      },
    }),
  });

  const runUp = async (stack = STACK) => {
    const repo = makeRepo({
      foundation: { project: "talos-platform", stacks: { staging: stack } },
    });
    const bws = async () =>
      JSON.stringify([
        { key: "proxmox-api-token", value: TOKEN },
        { key: "gcp-credentials", value: GCP_KEY },
      ]);
    const ctx = { ...context(repo, { BWS_ACCESS_TOKEN: "0.bws-FAKE-SECRET" }), bws };
    const code = await runCli(["up", "staging"], ctx);
    return { repo, ctx, code, file: path.join(repo, "Pulumi.staging.yaml") };
  };

  it("puts no credential on any command line, in the stack file or in the engine's environment: the up gets them in a file", async () => {
    const { code, ctx, file } = await runUp();
    assert.equal(code, ExitCode.ok, ctx.stderr.text);
    const calls = fake.calls();
    assert.ok(
      calls.some((c) => c.args[0] === "up"),
      "the engine ran",
    );
    for (const call of calls) {
      const argv = call.args.join(" ");
      for (const secret of [TOKEN, "FAKE-SECRET-gcp", "bws-FAKE-SECRET"]) {
        assert.ok(!argv.includes(secret), `no secret in: pulumi ${argv}`);
      }
      assert.notEqual(call.args[0], "config", "no `pulumi config set-all --secret …`");
    }
    // Only the up, which runs the program, gets the credentials: in a 0600 file of the run's temp
    // folder, named in its environment, and gone once it ended. No environment holds them.
    const up = calls.find((c) => c.args[0] === "up")!;
    assert.deepEqual(JSON.parse(up.runSecretsFile!.content), {
      "talos-platform:proxmoxApiToken": TOKEN,
      "talos-platform:gcpCredentials": GCP_KEY,
    });
    assert.equal(up.runSecretsFile!.mode, 0o600);
    assert.ok(!fs.existsSync(up.env[RUN_SECRETS_FILE_ENV]!), "the credentials file is removed");
    for (const call of calls.filter((c) => c !== up)) {
      assert.equal(call.runSecretsFile, undefined, call.args.join(" "));
    }
    for (const call of calls) {
      assert.doesNotMatch(JSON.stringify(call.env), new RegExp(TOKEN), call.args.join(" "));
    }
    // The shell's credential variables are blanked for the engine and so for every plugin (the
    // `pulumi version` probe runs before any workspace, and starts nothing).
    for (const call of calls.filter((c) => c.args[0] !== "version")) {
      assert.equal(call.env.BWS_ACCESS_TOKEN, "", call.args.join(" "));
      assert.equal(call.env.PROXMOX_VE_API_TOKEN, "", call.args.join(" "));
    }
    // The GCP key from Bitwarden also reaches the engine itself, for gs:// and gcpkms://
    // (pkg/authhelpers/gcpauth.go reads GOOGLE_CREDENTIALS).
    for (const call of calls.filter((c) => c.args[0] !== "version")) {
      assert.equal(call.env.GOOGLE_CREDENTIALS, GCP_KEY, call.args.join(" "));
    }
    // Never in the stack file, not even while the engine runs.
    for (const call of calls) {
      assert.doesNotMatch(call.stackFile ?? "", /proxmoxApiToken|gcpCredentials|secure:/);
    }
    assert.doesNotMatch(fs.readFileSync(file, "utf8"), /proxmoxApiToken|secure:/);
  });

  it("keeps the encryptedkey the engine writes for a KMS secrets provider, with the operator's comments, and says to commit it", async () => {
    const { file, ctx } = await runUp();
    // The engine re-serialised the file; the CLI put the operator's text back with the new key.
    assert.equal(fs.readFileSync(file, "utf8"), WITH_KEY);
    assert.match(
      ctx.stderr.text,
      /note: the engine wrote the data key of gcpkms:\/\/\S+ \(encryptedkey\) into Pulumi\.staging\.yaml: commit it/,
    );
    // A second run reuses it: the engine mints nothing, the file does not change, no note.
    const before = fs.readFileSync(file, "utf8");
    const again = { ...ctx, stderr: new MemorySink() };
    assert.equal(await runCli(["up", "staging"], again), ExitCode.ok);
    assert.equal(fs.readFileSync(file, "utf8"), before);
    assert.doesNotMatch(again.stderr.text, /encryptedkey/);
  });

  it("keeps a credential stored in the stack file when the run takes it from Bitwarden, and says which it uses", async () => {
    const stored = `${STACK}  talos-platform:proxmoxApiToken:\n    secure: v1:stored-cipher\n`;
    const { file, ctx, code } = await runUp(stored);
    assert.equal(code, ExitCode.ok, ctx.stderr.text);
    const up = fake.calls().find((c) => c.args[0] === "up")!;
    assert.match(up.stackFile ?? "", /proxmoxApiToken:\n    secure: v1:stored-cipher/);
    assert.match(fs.readFileSync(file, "utf8"), /secure: v1:stored-cipher/, "kept");
    assert.match(
      ctx.stderr.text,
      /note: Pulumi\.staging\.yaml also holds proxmoxApiToken \(encrypted\); this run takes it from bitwarden, which comes first, and leaves the stack's value as it is/,
    );
    assert.doesNotMatch(ctx.stderr.text, /older version/);
  });

  it("opens an existing stack in CI for a preview without `stack init`", async () => {
    const stack = `${STACK.replace(`secretsprovider: ${KMS}\n`, "")}`;
    const repo = makeRepo({ foundation: { project: "talos-platform", stacks: { prod: stack } } });
    const ctx = context(repo, {
      CI: "true",
      PULUMI_CONFIG_PASSPHRASE: "ci-passphrase",
      PROXMOX_VE_API_TOKEN: TOKEN,
    });
    assert.equal(await runCli(["preview", "prod"], ctx), ExitCode.ok);
    assert.match(ctx.stdout.text, /preview foundation\/prod: skipped; the stack does not exist/);
    assert.ok(!fake.calls().some((c) => c.args[0] === "stack" && c.args[1] === "init"));
    fake.addStack("prod");
    const again = context(repo, ctx.env as Record<string, string>);
    assert.equal(await runCli(["preview", "prod"], again), ExitCode.ok);
    assert.ok(fake.calls().some((c) => c.args[0] === "preview"));
    assert.ok(!fake.calls().some((c) => c.args[0] === "stack" && c.args[1] === "init"));
  });
});
