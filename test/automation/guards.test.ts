import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as path from "node:path";
import { runCli } from "../../automation/cli";
import { ExitCode } from "../../automation/errors";
import { isCi } from "../../automation/env";
import { checkGuards } from "../../automation/guards";
import { readSections } from "../../automation/summary";
import { StackNotFoundError } from "@pulumi/pulumi/automation";
import { cleanupRepos, makeRepo, testContext } from "./helpers";

const withApp = () =>
  makeRepo({
    app: {
      project: "talos-platform-app",
      stacks: { staging: "config: {}\n", prod: "config: {}\n" },
    },
  });

/** A stack file naming a shared backend, as a CI runner needs. */
const SHARED = (project: string) => `config:\n  ${project}:backend: gs://example-state\n`;
/** CI with the passphrase of the shared backend's stacks. */
const CI_SHARED = { CI: "true", PULUMI_CONFIG_PASSPHRASE: "test-passphrase" };
const sharedRepo = () =>
  makeRepo({
    foundation: { project: "talos-platform", stacks: { staging: SHARED("talos-platform") } },
    app: {
      project: "talos-platform-app",
      stacks: { staging: SHARED("talos-platform-app"), prod: SHARED("talos-platform-app") },
    },
  });

describe("guard rails", () => {
  afterEach(cleanupRepos);

  it("refuses to up the foundation layer when CI is set, before looking for the Pulumi CLI", async () => {
    const root = makeRepo();
    const ctx = testContext({ repoRoot: root, env: { CI: "true" } });
    assert.equal(await runCli(["up", "staging"], ctx), ExitCode.refused);
    assert.equal(
      ctx.stderr.text.split("\n")[0],
      'up foundation/staging: the foundation layer is not applied from CI; got CI="true". It can reboot nodes and must work while the cluster is down, so the operator applies it from a workstation on the cluster\'s network: run it there, without CI set',
    );
    assert.equal(ctx.workspaces.calls.length, 0);
    assert.equal(
      fs.existsSync(path.join(root, ".pulumi-state")),
      false,
      "a refusal writes nothing",
    );
  });

  it("refuses to destroy the foundation layer when CI is set", async () => {
    const ctx = testContext({ repoRoot: makeRepo(), env: { CI: "1" } });
    assert.equal(await runCli(["destroy", "staging"], ctx), ExitCode.refused);
    assert.match(
      ctx.stderr.text,
      /^destroy foundation\/staging: the foundation layer is not applied from CI/,
    );
  });

  it("refuses to up the bootstrap layer in CI: its state is on the operator's workstation", async () => {
    const root = makeRepo({
      bootstrap: { project: "talos-platform-bootstrap", stacks: { shared: "config: {}\n" } },
    });
    const ctx = testContext({ repoRoot: root, env: { CI: "true" } });
    assert.equal(await runCli(["up", "shared", "--layer", "bootstrap"], ctx), ExitCode.refused);
    assert.match(
      ctx.stderr.text,
      /^up bootstrap\/shared: the bootstrap layer is not applied from CI; got CI="true"\. Its state lives in the operator's local backend/,
    );
    assert.equal(ctx.workspaces.calls.length, 0);
  });

  it("lets CI preview the foundation layer", async () => {
    const ctx = testContext({ repoRoot: sharedRepo(), env: CI_SHARED });
    assert.equal(await runCli(["preview", "staging"], ctx), ExitCode.ok);
    assert.deepEqual(
      ctx.workspaces.callsOf("operation").map((c) => c.operation),
      ["preview"],
    );
  });

  it("refuses to refresh the foundation and bootstrap layers in CI, like up", async () => {
    const root = makeRepo({
      foundation: { project: "talos-platform", stacks: { staging: SHARED("talos-platform") } },
      bootstrap: {
        project: "talos-platform-bootstrap",
        stacks: { shared: SHARED("talos-platform-bootstrap") },
      },
    });
    for (const layer of ["foundation", "bootstrap"]) {
      const ctx = testContext({ repoRoot: root, env: CI_SHARED });
      const env = layer === "bootstrap" ? "shared" : "staging";
      assert.equal(await runCli(["refresh", env, "--layer", layer], ctx), ExitCode.refused, layer);
      assert.match(
        ctx.stderr.text,
        new RegExp(`^refresh ${layer}/${env}: the ${layer} layer is not applied from CI`),
      );
      assert.equal(ctx.workspaces.calls.length, 0);
    }
  });

  it("lets CI up the app layer on a shared backend", async () => {
    const ctx = testContext({ repoRoot: sharedRepo(), env: CI_SHARED });
    assert.equal(await runCli(["up", "staging", "--layer", "app"], ctx), ExitCode.ok);
    assert.equal(ctx.workspaces.callsOf("operation").length, 1);
  });

  it("refuses up, refresh and destroy in CI on the embedded backend, a folder the runner throws away", async () => {
    for (const command of ["up", "refresh", "destroy"]) {
      const root = withApp();
      const ctx = testContext({ repoRoot: root, env: { CI: "true" } });
      assert.equal(
        await runCli([command, "staging", "--layer", "app"], ctx),
        ExitCode.refused,
        command,
      );
      assert.equal(
        ctx.stderr.text.trim(),
        `${command} app/staging: the embedded backend is an empty folder on a CI runner: the state would start empty and be lost with the runner; ` +
          `got "file://${root}/.pulumi-state". Name the stack's backend (talos-platform-app:backend in its stack file, e.g. the bootstrap layer's gs:// bucket) or set PULUMI_BACKEND_URL`,
      );
      assert.equal(ctx.workspaces.calls.length, 0, "refused before the Pulumi CLI is looked for");
    }
  });

  it("refuses up in CI for a KMS stack file without its encryptedkey, which would re-key the state on every run", async () => {
    const kms = "gcpkms://projects/p/locations/l/keyRings/r/cryptoKeys/k";
    const stack = (key: string) =>
      `secretsprovider: ${kms}\n${key}config:\n  talos-platform-app:backend: gs://example-state\n`;
    const repo = (key: string) =>
      makeRepo({ app: { project: "talos-platform-app", stacks: { prod: stack(key) } } });
    const refused = testContext({ repoRoot: repo(""), env: { CI: "true" } });
    assert.equal(await runCli(["up", "prod", "--layer", "app"], refused), ExitCode.refused);
    assert.match(
      refused.stderr.text,
      /^up app\/prod: the stack file names a KMS secrets provider but no encryptedkey: on a runner the engine would mint a new data key on every run and re-key the state; got "gcpkms:\/\/projects\/p\/locations\/l\/keyRings\/r\/cryptoKeys\/k"\. Run `npm run platform -- preview prod --layer app` once from a workstation: the engine writes encryptedkey into the stack file; commit that line/,
    );
    assert.equal(refused.workspaces.calls.length, 0);
    const committed = testContext({
      repoRoot: repo("encryptedkey: CiQAbc==\n"),
      env: { CI: "true" },
    });
    assert.equal(await runCli(["up", "prod", "--layer", "app"], committed), ExitCode.ok);
    const workstation = testContext({ repoRoot: repo(""), env: {} });
    assert.equal(await runCli(["up", "prod", "--layer", "app"], workstation), ExitCode.ok);
  });

  it("refuses an empty PULUMI_CONFIG_PASSPHRASE in CI: a workflow secret that does not exist", async () => {
    const ctx = testContext({
      repoRoot: sharedRepo(),
      env: { CI: "true", PULUMI_CONFIG_PASSPHRASE: "" },
    });
    assert.equal(await runCli(["preview", "staging", "--layer", "app"], ctx), ExitCode.usage);
    assert.match(
      ctx.stderr.text,
      // One line of the readiness report printed before any engine work.
      /^ {2}- secrets: PULUMI_CONFIG_PASSPHRASE is set but empty \(in CI: a secret that does not exist\); got ""\./m,
    );
    assert.equal(ctx.workspaces.callsOf("openStack").length, 0);
  });

  it("never creates a stack for a preview in CI; a stack the backend does not have yet is skipped with the reason", async () => {
    const root = sharedRepo();
    const ctx = testContext({ repoRoot: root, env: CI_SHARED });
    // What LocalWorkspace.selectStack rejects with (errors.js: createCommandError).
    ctx.workspaces.openError = new (StackNotFoundError as unknown as new (m: string) => Error)(
      "code: 255\n stdout: \n stderr: error: no stack named 'prod' found\n err?: \n",
    );
    const summary = path.join(root, "preview.md");
    assert.equal(
      await runCli(["preview", "prod", "--layer", "app", "--summary", summary], ctx),
      ExitCode.ok,
    );
    const [open] = ctx.workspaces.callsOf("openStack");
    assert.equal(open.request.create, false);
    assert.match(
      ctx.stdout.text,
      /preview app\/prod: skipped; the stack does not exist on gs:\/\/example-state yet, and a preview in CI does not create it/,
    );
    assert.deepEqual(
      readSections(fs.readFileSync(summary, "utf8")).map((s) => `${s.layer}/${s.env} ${s.status}`),
      ["app/prod skipped"],
    );
    const workstation = testContext({ repoRoot: root, env: { PULUMI_CONFIG_PASSPHRASE: "p" } });
    await runCli(["preview", "prod", "--layer", "app"], workstation);
    assert.equal(workstation.workspaces.callsOf("openStack")[0].request.create, true);
  });

  it("with --layer all in CI, refuses before any layer runs", async () => {
    const ctx = testContext({ repoRoot: withApp(), env: { CI: "true" } });
    assert.equal(await runCli(["up", "staging", "--layer", "all"], ctx), ExitCode.refused);
    assert.equal(ctx.workspaces.calls.length, 0, "not even the app layer, which comes after");
  });

  it("refuses to destroy prod without --yes-destroy-prod, in any layer", async () => {
    for (const layer of ["foundation", "app"]) {
      const ctx = testContext({ repoRoot: withApp() });
      assert.equal(await runCli(["destroy", "prod", "--layer", layer], ctx), ExitCode.refused);
      assert.equal(
        ctx.stderr.text.trim(),
        `destroy ${layer}/prod: destroying prod needs --yes-destroy-prod; got no --yes-destroy-prod. Rerun with --yes-destroy-prod if you mean to delete every resource of ${layer}/prod`,
      );
      assert.equal(ctx.workspaces.calls.length, 0);
    }
  });

  it("destroys prod with --yes-destroy-prod", async () => {
    const ctx = testContext({ repoRoot: makeRepo() });
    assert.equal(await runCli(["destroy", "prod", "--yes-destroy-prod"], ctx), ExitCode.ok);
    assert.deepEqual(
      ctx.workspaces.callsOf("operation").map((c) => [c.operation, c.stackName]),
      [["destroy", "prod"]],
    );
  });

  it("destroys staging without the prod flag", async () => {
    const ctx = testContext({ repoRoot: makeRepo() });
    assert.equal(await runCli(["destroy", "staging"], ctx), ExitCode.ok);
  });

  it("reads CI the way CI systems set it", () => {
    assert.equal(isCi({ CI: "true" }), true);
    assert.equal(isCi({ CI: "1" }), true);
    assert.equal(isCi({ CI: "woodpecker" }), true);
    assert.equal(isCi({ CI: "false" }), false);
    assert.equal(isCi({ CI: "0" }), false);
    assert.equal(isCi({ CI: "" }), false);
    assert.equal(isCi({}), false);
  });

  it("checks nothing for operations no guard covers", () => {
    assert.doesNotThrow(() =>
      checkGuards(
        { operation: "preview", layer: "foundation", env: "prod", yesDestroyProd: false },
        { CI: "true" },
      ),
    );
    assert.throws(
      () =>
        checkGuards(
          { operation: "up", layer: "foundation", env: "prod", yesDestroyProd: true },
          { CI: "true" },
        ),
      (error: Error & { exitCode?: number }) => error.exitCode === ExitCode.refused,
    );
  });
});
