import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as path from "node:path";
import {
  chooseBackend,
  chooseSecretsProvider,
  preparePassphrase,
  resolveStackSettings,
} from "../../automation/backend";
import { runCli } from "../../automation/cli";
import { ExitCode, UserError } from "../../automation/errors";
import { fileMode } from "../../automation/files";
import { readStackFile, resolveLayer } from "../../automation/layers";
import { cleanupRepos, makeRepo, testContext } from "./helpers";

const GS = "gs://example-pulumi-state/talos-platform";
const KMS = "gcpkms://projects/example/locations/europe-west4/keyRings/platform/cryptoKeys/pulumi";

function foundation(stackFile: string, projectExtra = "") {
  const root = makeRepo({
    foundation: { project: "talos-platform", stacks: { staging: stackFile }, projectExtra },
  });
  const layer = resolveLayer(root, "foundation");
  return { root, layer, stackFile: readStackFile(layer, "staging") };
}

describe("backend and secrets provider selection", () => {
  afterEach(cleanupRepos);

  it("defaults to a file backend in the repository's .pulumi-state folder", () => {
    const { root, layer, stackFile } = foundation("config: {}\n");
    assert.deepEqual(chooseBackend({ env: {}, layer, stackFile, repoRoot: root }), {
      url: `file://${root}/.pulumi-state`,
      source: "default",
      isDefault: true,
    });
  });

  it("takes the backend from the stack file's <project>:backend key", () => {
    const { root, layer, stackFile } = foundation(`config:\n  talos-platform:backend: ${GS}\n`);
    const backend = chooseBackend({ env: {}, layer, stackFile, repoRoot: root });
    assert.equal(backend.url, GS);
    assert.equal(backend.source, "Pulumi.staging.yaml (talos-platform:backend)");
  });

  it("lets PULUMI_BACKEND_URL take precedence over the stack file", () => {
    const { root, layer, stackFile } = foundation(`config:\n  talos-platform:backend: ${GS}\n`);
    const env = { PULUMI_BACKEND_URL: "s3://other" };
    assert.deepEqual(chooseBackend({ env, layer, stackFile, repoRoot: root }), {
      url: "s3://other",
      source: "PULUMI_BACKEND_URL",
      isDefault: false,
    });
  });

  it("ignores an empty PULUMI_BACKEND_URL (an unset CI variable)", () => {
    const { root, layer, stackFile } = foundation(`config:\n  talos-platform:backend: ${GS}\n`);
    const env = { PULUMI_BACKEND_URL: "" };
    assert.equal(chooseBackend({ env, layer, stackFile, repoRoot: root }).url, GS);
  });

  it("falls back to Pulumi.yaml's backend.url before the default", () => {
    const { root, layer, stackFile } = foundation(
      "config: {}\n",
      "backend:\n  url: file:///srv/pulumi\n",
    );
    const backend = chooseBackend({ env: {}, layer, stackFile, repoRoot: root });
    assert.equal(backend.url, "file:///srv/pulumi");
    assert.equal(backend.source, "Pulumi.yaml (backend.url)");
  });

  it("refuses a backend key that is not a plain backend URL", () => {
    const { root, layer, stackFile } = foundation(
      "config:\n  talos-platform:backend:\n    secure: AAABAHw=\n",
    );
    assert.throws(
      () => chooseBackend({ env: {}, layer, stackFile, repoRoot: root }),
      (error: UserError) =>
        error.message.startsWith(
          'Pulumi.staging.yaml talos-platform:backend: must be a backend URL in plain text; got {"secure":"AAABAHw="}.',
        ),
    );
  });

  it("reads the secrets provider from the stack file's own secretsprovider key", () => {
    const { stackFile } = foundation(`secretsprovider: ${KMS}\nconfig: {}\n`);
    assert.deepEqual(chooseSecretsProvider(stackFile), {
      provider: KMS,
      source: "Pulumi.staging.yaml (secretsprovider)",
    });
    assert.deepEqual(chooseSecretsProvider(foundation("config: {}\n").stackFile), {
      provider: "passphrase",
      source: "default",
    });
  });

  it("generates a passphrase once into a 0600 file in a 0700 state folder and hands it over as PULUMI_CONFIG_PASSPHRASE_FILE", () => {
    const { root, layer, stackFile } = foundation("config: {}\n");
    const first = resolveStackSettings({
      env: {},
      layer,
      stackFile,
      repoRoot: root,
      mayCreate: true,
    });
    const file = path.join(root, ".pulumi-state", "passphrase");
    assert.equal(first.envVars.PULUMI_CONFIG_PASSPHRASE_FILE, file);
    assert.equal(first.envVars.PULUMI_BACKEND_URL, `file://${root}/.pulumi-state`);
    assert.equal(fileMode(file), 0o600);
    assert.equal(fileMode(path.join(root, ".pulumi-state")), 0o700);
    const passphrase = fs.readFileSync(file, "utf8").trim();
    assert.match(passphrase, /^[A-Za-z0-9_-]{43}$/, "32 random bytes, base64url");
    assert.equal(first.notices.length, 1);
    assert.match(
      first.notices[0],
      new RegExp(`Generated a passphrase .* in ${file} \\(mode 0600\\)\\. Back it up`),
    );

    const second = resolveStackSettings({
      env: {},
      layer,
      stackFile,
      repoRoot: root,
      mayCreate: true,
    });
    assert.equal(second.envVars.PULUMI_CONFIG_PASSPHRASE_FILE, file);
    assert.deepEqual(second.notices, [], "the operator is told once");
    assert.equal(fs.readFileSync(file, "utf8").trim(), passphrase, "never regenerated");
  });

  it("generates no passphrase when PULUMI_CONFIG_PASSPHRASE or PULUMI_CONFIG_PASSPHRASE_FILE is set", () => {
    for (const env of [
      { PULUMI_CONFIG_PASSPHRASE: "correct horse" },
      { PULUMI_CONFIG_PASSPHRASE: "" },
      { PULUMI_CONFIG_PASSPHRASE_FILE: "/secure/passphrase" },
    ]) {
      const { root, layer, stackFile } = foundation("config: {}\n");
      const settings = resolveStackSettings({
        env,
        layer,
        stackFile,
        repoRoot: root,
        mayCreate: true,
      });
      assert.equal(settings.envVars.PULUMI_CONFIG_PASSPHRASE_FILE, undefined, JSON.stringify(env));
      assert.equal(fs.existsSync(path.join(root, ".pulumi-state", "passphrase")), false);
    }
  });

  it("generates no passphrase for a KMS secrets provider", () => {
    const { root, layer, stackFile } = foundation(`secretsprovider: ${KMS}\nconfig: {}\n`);
    const settings = resolveStackSettings({
      env: {},
      layer,
      stackFile,
      repoRoot: root,
      mayCreate: true,
    });
    assert.equal(settings.envVars.PULUMI_CONFIG_PASSPHRASE_FILE, undefined);
    assert.equal(fs.existsSync(path.join(root, ".pulumi-state", "passphrase")), false);
  });

  it("refuses the passphrase provider on a shared backend without a passphrase", () => {
    const { root, layer, stackFile } = foundation(`config:\n  talos-platform:backend: ${GS}\n`);
    assert.throws(
      () => resolveStackSettings({ env: {}, layer, stackFile, repoRoot: root, mayCreate: true }),
      (error: UserError) =>
        error.exitCode === ExitCode.usage &&
        /^secrets: the passphrase provider needs PULUMI_CONFIG_PASSPHRASE or PULUMI_CONFIG_PASSPHRASE_FILE with backend gs:\/\//.test(
          error.message,
        ),
    );
    assert.equal(fs.existsSync(path.join(root, ".pulumi-state", "passphrase")), false);
  });

  it("does not generate a passphrase for commands that only read a stack", () => {
    const { root, layer, stackFile } = foundation("config: {}\n");
    const setup = preparePassphrase({
      env: {},
      secrets: { provider: "passphrase", source: "default" },
      backend: chooseBackend({ env: {}, layer, stackFile, repoRoot: root }),
      repoRoot: root,
      mayCreate: false,
    });
    assert.deepEqual(setup, { envVars: {} });
    assert.equal(fs.existsSync(path.join(root, ".pulumi-state", "passphrase")), false);
  });

  it("gives the engine the chosen backend, secrets provider and passphrase file, and tells the operator to back the passphrase up", async () => {
    const root = makeRepo({
      foundation: {
        project: "talos-platform",
        stacks: { staging: `secretsprovider: passphrase\nconfig: {}\n` },
      },
    });
    const ctx = testContext({ repoRoot: root });
    assert.equal(await runCli(["up", "staging"], ctx), ExitCode.ok);
    const [open] = ctx.workspaces.callsOf("openStack");
    assert.deepEqual(open.request.envVars, {
      PULUMI_BACKEND_URL: `file://${root}/.pulumi-state`,
      PULUMI_SKIP_UPDATE_CHECK: "true",
      PULUMI_CONFIG_PASSPHRASE_FILE: path.join(root, ".pulumi-state", "passphrase"),
    });
    assert.equal(open.request.secretsProvider, "passphrase");
    assert.match(ctx.stderr.text, /^note: Generated a passphrase .*Back it up/m);
    assert.match(
      ctx.stdout.text,
      /^up foundation\/staging: backend file:\/\/.*\/\.pulumi-state \(default\), secrets passphrase \(Pulumi\.staging\.yaml \(secretsprovider\)\)/m,
    );
  });

  it("reads outputs without generating a passphrase", async () => {
    const root = makeRepo();
    const ctx = testContext({ repoRoot: root });
    assert.equal(await runCli(["outputs", "staging"], ctx), ExitCode.ok);
    assert.equal(fs.existsSync(path.join(root, ".pulumi-state", "passphrase")), false);
    assert.equal(
      ctx.workspaces.callsOf("openStack")[0].request.envVars.PULUMI_CONFIG_PASSPHRASE_FILE,
      undefined,
    );
  });
});
