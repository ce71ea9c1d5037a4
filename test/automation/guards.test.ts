import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as path from "node:path";
import { runCli } from "../../automation/cli";
import { ExitCode } from "../../automation/errors";
import { checkGuards, isCi } from "../../automation/guards";
import { cleanupRepos, makeRepo, testContext } from "./helpers";

const withApp = () =>
  makeRepo({
    app: {
      project: "talos-platform-app",
      stacks: { staging: "config: {}\n", prod: "config: {}\n" },
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

  it("lets CI preview and refresh the foundation layer", async () => {
    for (const command of ["preview", "refresh"]) {
      const ctx = testContext({ repoRoot: makeRepo(), env: { CI: "true" } });
      assert.equal(await runCli([command, "staging"], ctx), ExitCode.ok, command);
      assert.deepEqual(
        ctx.workspaces.callsOf("operation").map((c) => c.operation),
        [command],
      );
    }
  });

  it("lets CI up the app layer", async () => {
    const ctx = testContext({ repoRoot: withApp(), env: { CI: "true" } });
    assert.equal(await runCli(["up", "staging", "--layer", "app"], ctx), ExitCode.ok);
    assert.equal(ctx.workspaces.callsOf("operation").length, 1);
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
