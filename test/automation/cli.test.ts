import { ConcurrentUpdateError } from "@pulumi/pulumi/automation";
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as path from "node:path";
import { runCli } from "../../automation/cli";
import { ExitCode } from "../../automation/errors";
import { listEnvironments, resolveLayer } from "../../automation/layers";
import { missingCliError } from "../../automation/pulumiCli";
import { cleanupRepos, loadEngineEvents, makeRepo, testContext } from "./helpers";

describe("platform CLI: parsing and dispatch", () => {
  afterEach(cleanupRepos);

  it("prints its usage with every command and an example of each", async () => {
    const ctx = testContext({ repoRoot: makeRepo() });
    const code = await runCli(["--help"], ctx);
    assert.equal(code, ExitCode.ok);
    for (const command of [
      "preview",
      "up",
      "refresh",
      "destroy",
      "outputs",
      "kubeconfig",
      "talosconfig",
      "stacks",
    ]) {
      assert.match(ctx.stdout.text, new RegExp(`^  ${command} `, "m"), `usage lists ${command}`);
      assert.match(
        ctx.stdout.text,
        new RegExp(`npm run platform -- ${command}\\b`),
        `example of ${command}`,
      );
    }
    assert.match(ctx.stdout.text, /Exit codes: 0 ok, 1 operation failed, 2 usage error/);
  });

  it("documents --layer with its choices and --install-cli in a command's help", async () => {
    const ctx = testContext({ repoRoot: makeRepo() });
    assert.equal(await runCli(["up", "--help"], ctx), ExitCode.ok);
    assert.match(
      ctx.stdout.text,
      /--layer <layer> .*\(choices:\s+"bootstrap",\s+"foundation",\s+"app",\s+"all",\s+default:\s+"foundation"\)/s,
    );
    assert.match(ctx.stdout.text, /--install-cli/);
  });

  it("refuses a missing environment as a usage error", async () => {
    const ctx = testContext({ repoRoot: makeRepo() });
    assert.equal(await runCli(["up"], ctx), ExitCode.usage);
    assert.match(ctx.stderr.text, /missing required argument 'env'/);
    assert.match(ctx.stderr.text, /^\(run `npm run platform -- up --help` for usage\)$/m);
    assert.equal(ctx.workspaces.calls.length, 0);
  });

  it("refuses an unknown --layer, naming the choices", async () => {
    const ctx = testContext({ repoRoot: makeRepo() });
    assert.equal(await runCli(["up", "staging", "--layer", "cluster"], ctx), ExitCode.usage);
    assert.match(ctx.stderr.text, /Allowed choices are bootstrap, foundation, app, all/);
  });

  it("refuses an unknown command", async () => {
    const ctx = testContext({ repoRoot: makeRepo() });
    assert.equal(await runCli(["deploy", "staging"], ctx), ExitCode.usage);
    assert.match(ctx.stderr.text, /unknown command 'deploy'/);
  });

  it("runs up on the foundation layer by default: the repository root, the stack named after the environment", async () => {
    const root = makeRepo();
    const ctx = testContext({ repoRoot: root });
    assert.equal(await runCli(["up", "staging"], ctx), ExitCode.ok);
    const [open] = ctx.workspaces.callsOf("openStack");
    assert.equal(open.request.workDir, root);
    assert.equal(open.request.stackName, "staging");
    assert.equal(open.request.create, true);
    assert.deepEqual(
      ctx.workspaces.callsOf("operation").map((c) => c.operation),
      ["up"],
    );
    assert.deepEqual(ctx.workspaces.callsOf("ensureCli"), [{ kind: "ensureCli", install: false }]);
  });

  it("runs a layer's command in its own folder", async () => {
    const root = makeRepo({
      app: { project: "talos-platform-app", stacks: { staging: "config: {}\n" } },
    });
    const ctx = testContext({ repoRoot: root });
    assert.equal(await runCli(["preview", "staging", "--layer", "app"], ctx), ExitCode.ok);
    assert.equal(ctx.workspaces.callsOf("openStack")[0].request.workDir, path.join(root, "app"));
  });

  it("refuses an unknown environment, listing the known ones, before looking for the Pulumi CLI", async () => {
    const ctx = testContext({ repoRoot: makeRepo() });
    assert.equal(await runCli(["up", "stagign"], ctx), ExitCode.usage);
    assert.equal(
      ctx.stderr.text.trim(),
      'environment: no stack file Pulumi.stagign.yaml in the foundation layer (.); got "stagign". Use one of: prod, staging',
    );
    assert.equal(ctx.workspaces.calls.length, 0);
  });

  it("refuses a stack file named .yml, which Pulumi would ignore, naming the rename", async () => {
    const root = makeRepo({
      foundation: { project: "talos-platform", stacks: { prod: "config: {}\n" } },
      app: { project: "talos-platform-app", stacks: {} },
    });
    fs.writeFileSync(path.join(root, "Pulumi.staging.yml"), "config: {}\n");
    fs.writeFileSync(path.join(root, "app", "Pulumi.staging.yml"), "config: {}\n");
    for (const args of [
      ["up", "staging"],
      ["preview", "staging", "--layer", "all"],
    ]) {
      const ctx = testContext({ repoRoot: root });
      assert.equal(await runCli(args, ctx), ExitCode.usage, args.join(" "));
      assert.equal(
        ctx.stderr.text.trim(),
        'Pulumi.staging.yml: Pulumi ignores stack files named .yml: it reads Pulumi.<env>.yaml, after the project\'s Pulumi.yaml; got "Pulumi.staging.yml". Rename it to Pulumi.staging.yaml (merge it into that file if both exist)',
      );
      assert.equal(ctx.workspaces.calls.length, 0);
    }
    const stacks = testContext({ repoRoot: root });
    assert.equal(await runCli(["stacks", "--layer", "all"], stacks), ExitCode.ok);
    assert.match(
      stacks.stdout.text,
      /^ {2}Pulumi\.staging\.yml: ignored by Pulumi \(it reads \.yaml\); rename it to \.yaml$/m,
    );
    assert.doesNotMatch(stacks.stdout.text, /^ {2}staging /m, "not listed as an environment");
  });

  it("names the folder when a layer has no Pulumi.yaml", async () => {
    const root = makeRepo();
    const ctx = testContext({ repoRoot: root });
    assert.equal(await runCli(["preview", "staging", "--layer", "bootstrap"], ctx), ExitCode.usage);
    assert.match(
      ctx.stderr.text,
      /^layer bootstrap: its folder bootstrap\/ has no Pulumi\.yaml; got ".*bootstrap\/Pulumi\.yaml"\./,
    );
    assert.equal(ctx.workspaces.calls.length, 0);
  });

  it("with --layer all, brings layers up bootstrap → foundation → app and destroys them in reverse", async () => {
    const layers = {
      bootstrap: { project: "talos-platform-bootstrap", stacks: { staging: "config: {}\n" } },
      app: { project: "talos-platform-app", stacks: { staging: "config: {}\n" } },
    };
    const root = makeRepo(layers);
    const up = testContext({ repoRoot: root });
    assert.equal(await runCli(["up", "staging", "--layer", "all"], up), ExitCode.ok);
    const dirs = (ctx: typeof up) =>
      ctx.workspaces.callsOf("operation").map((c) => path.relative(root, c.workDir) || ".");
    assert.deepEqual(dirs(up), ["bootstrap", ".", "app"]);
    const destroy = testContext({ repoRoot: root });
    assert.equal(await runCli(["destroy", "staging", "--layer", "all"], destroy), ExitCode.ok);
    assert.deepEqual(dirs(destroy), ["app", ".", "bootstrap"]);
  });

  it("with --layer all, stops at the first failing layer", async () => {
    const root = makeRepo({
      bootstrap: { project: "talos-platform-bootstrap", stacks: { staging: "config: {}\n" } },
    });
    const ctx = testContext({ repoRoot: root });
    ctx.workspaces.runs.up = {
      events: loadEngineEvents("up-foundation-staging-failed"),
      error: new Error("code: 255"),
    };
    assert.equal(await runCli(["up", "staging", "--layer", "all"], ctx), ExitCode.failed);
    assert.equal(ctx.workspaces.callsOf("operation").length, 1);
  });

  it("passes --diff to the engine and shows the engine's diff text", async () => {
    const ctx = testContext({ repoRoot: makeRepo() });
    ctx.workspaces.runs.preview = {
      output: "  ~ talos:machine/configurationApply:ConfigurationApply\n",
    };
    assert.equal(await runCli(["preview", "staging", "--diff"], ctx), ExitCode.ok);
    assert.equal(ctx.workspaces.callsOf("operation")[0].diff, true);
    assert.match(ctx.stdout.text, /~ talos:machine\/configurationApply:ConfigurationApply/);
  });

  it("never creates a stack for refresh, destroy or outputs", async () => {
    for (const argv of [
      ["refresh", "staging"],
      ["destroy", "staging"],
      ["outputs", "staging"],
    ]) {
      const ctx = testContext({ repoRoot: makeRepo() });
      assert.equal(await runCli(argv, ctx), ExitCode.ok, argv.join(" "));
      assert.equal(ctx.workspaces.callsOf("openStack")[0].request.create, false, argv.join(" "));
    }
  });

  it("exits 1 naming the failing resource and its error when an operation fails", async () => {
    const ctx = testContext({ repoRoot: makeRepo() });
    ctx.workspaces.runs.up = {
      events: loadEngineEvents("up-foundation-staging-failed"),
      error: new Error("code: 255\n stdout: \n stderr: error: update failed\n err?: \n"),
    };
    assert.equal(await runCli(["up", "staging"], ctx), ExitCode.failed);
    assert.match(
      ctx.stderr.text,
      /^up foundation\/staging: 1 resource failed; got:\n  - create talos:machine\/configurationApply:ConfigurationApply "staging-stg-worker-1-config": .*dial tcp 192\.0\.2\.21:50000: connect: connection refused/m,
    );
    assert.doesNotMatch(ctx.stderr.text, /update failed|\n\s+at /);
  });

  it("reports the program's own error when no resource failed", async () => {
    const ctx = testContext({ repoRoot: makeRepo() });
    ctx.workspaces.runs.preview = {
      events: [
        {
          sequence: 1,
          timestamp: 1,
          diagnosticEvent: {
            urn: "urn:pulumi:staging::talos-platform::pulumi:pulumi:Stack::talos-platform-staging",
            message:
              "<{%reset%}>Pulumi.staging.yaml has 1 problem; nothing was created:\n  - nodes: etcd needs an odd number of control planes; got 2. Use 1, 3 or 5<{%reset%}>\n",
            color: "raw",
            severity: "error",
          },
        },
      ],
      error: new Error("code: 255"),
    };
    assert.equal(await runCli(["preview", "staging"], ctx), ExitCode.failed);
    assert.match(
      ctx.stderr.text,
      /^preview foundation\/staging: the engine reported an error; got Pulumi\.staging\.yaml has 1 problem; nothing was created:\n  - nodes: etcd needs an odd number of control planes/m,
    );
  });

  it("turns the engine's ConcurrentUpdateError into a 'locked' message and exit code", async () => {
    const ctx = testContext({ repoRoot: makeRepo() });
    ctx.workspaces.runs.up = {
      error: new ConcurrentUpdateError(
        "code: 255\n stdout: \n stderr: error: the stack is currently locked by 1 lock(s). Either wait for the other process(es) to end or delete the lock file with `pulumi cancel`.\n err?: \n",
      ),
    };
    assert.equal(await runCli(["up", "staging"], ctx), ExitCode.locked);
    assert.match(
      ctx.stderr.text,
      /^foundation\/staging: another update of this stack is in progress \(the engine's lock in the backend\); got "error: the stack is currently locked by 1 lock\(s\)/m,
    );
  });

  it("names an engine lock a killed run of this host left, and the `pulumi cancel` that removes it", async () => {
    const locked = (host: string) =>
      new ConcurrentUpdateError(
        "code: 255\n stdout: \n stderr: error: the stack is currently locked by 1 lock(s). Either wait for the other process(es) to end or delete the lock file with `pulumi cancel`.\n" +
          `  file:///state/.pulumi/locks/organization/talos-platform/staging/1.json: created by op@${host} (pid 4242) at 2026-12-03T07:00:00Z\n err?: \n`,
      );
    const root = makeRepo();
    const dead = { ...testContext({ repoRoot: root }) };
    const ctx = { ...dead, host: { ...dead.host, isAlive: (pid: number) => pid !== 4242 } };
    ctx.workspaces.runs.up = { error: locked("test-host") };
    assert.equal(await runCli(["up", "staging"], ctx), ExitCode.locked);
    assert.match(
      ctx.stderr.text,
      new RegExp(
        "^foundation/staging: the engine's lock in the backend was left by a run that was killed \\(pid 4242 of this host no longer runs\\);.*" +
          `Remove it with \`pulumi cancel --yes --stack staging\` in ${root.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")} \\(it deletes the stack's lock files, nothing of its state\\) and rerun$`,
        "m",
      ),
    );
    // Another host's lock, or a live process's, is another run's: wait for it.
    const other = testContext({ repoRoot: makeRepo() });
    other.workspaces.runs.up = { error: locked("other-host") };
    assert.equal(await runCli(["up", "staging"], other), ExitCode.locked);
    assert.match(other.stderr.text, /another update of this stack is in progress/);
  });

  it("reports a missing Pulumi CLI with what to install, exit 5, and writes nothing", async () => {
    const root = makeRepo();
    const ctx = testContext({ repoRoot: root });
    ctx.workspaces.cliError = missingCliError(
      "/home/op/.pulumi/versions/3.276.0",
      new Error("Command failed with ENOENT: pulumi version\nspawn pulumi ENOENT"),
    );
    assert.equal(await runCli(["up", "staging"], ctx), ExitCode.missingCli);
    assert.match(ctx.stderr.text, /https:\/\/www\.pulumi\.com\/docs\/install\//);
    assert.match(ctx.stderr.text, /--install-cli/);
    assert.equal(ctx.workspaces.callsOf("openStack").length, 0);
    assert.equal(fs.existsSync(path.join(root, ".pulumi-state")), false);
  });

  it("asks the factory to install the CLI with --install-cli", async () => {
    const ctx = testContext({ repoRoot: makeRepo() });
    assert.equal(await runCli(["preview", "staging", "--install-cli"], ctx), ExitCode.ok);
    assert.deepEqual(ctx.workspaces.callsOf("ensureCli"), [{ kind: "ensureCli", install: true }]);
  });

  it("with --skip-missing-layer, notes a layer without Pulumi.yaml and succeeds without the engine", async () => {
    const ctx = testContext({ repoRoot: makeRepo() });
    assert.equal(
      await runCli(["up", "prod", "--layer", "app", "--skip-missing-layer"], ctx),
      ExitCode.ok,
    );
    assert.match(ctx.stdout.text, /up app\/prod: skipped; app\/Pulumi\.yaml does not exist yet\./);
    assert.equal(ctx.workspaces.calls.length, 0);
  });

  it("hands the engine a cancellation signal", async () => {
    const controller = new AbortController();
    const ctx = testContext({ repoRoot: makeRepo(), signal: controller.signal });
    assert.equal(await runCli(["up", "staging"], ctx), ExitCode.ok);
    assert.equal(ctx.workspaces.callsOf("operation")[0].signal, true);
  });

  it("prints an unexpected error as one line without a stack trace", async () => {
    const ctx = testContext({ repoRoot: makeRepo() });
    ctx.workspaces.openError = new TypeError("Cannot read properties of undefined (reading 'x')");
    assert.equal(await runCli(["up", "staging"], ctx), ExitCode.failed);
    assert.match(ctx.stderr.text, /^platform: unexpected error; got "Cannot read properties/m);
    assert.match(ctx.stderr.text, /PLATFORM_DEBUG=1/);
    assert.doesNotMatch(ctx.stderr.text, /\n\s+at /);
  });

  it("lists each layer's environments with their backend and secrets provider", async () => {
    const root = makeRepo({
      app: { project: "talos-platform-app", stacks: { prod: "config: {}\n" } },
    });
    const ctx = testContext({ repoRoot: root });
    assert.equal(await runCli(["stacks"], ctx), ExitCode.ok);
    assert.equal(
      ctx.stdout.text,
      [
        "bootstrap: no bootstrap/Pulumi.yaml yet",
        "foundation: project talos-platform in .",
        `  prod     backend file://${root}/.pulumi-state (default); secrets passphrase (default)`,
        `  staging  backend file://${root}/.pulumi-state (default); secrets passphrase (default)`,
        "app: project talos-platform-app in app/",
        `  prod  backend file://${root}/.pulumi-state (default); secrets passphrase (default)`,
        "",
      ].join("\n"),
    );
    assert.equal(ctx.workspaces.calls.length, 0, "stacks needs no Pulumi CLI");
  });

  it("lists the other environments when one stack file is broken, and reports that one", async () => {
    const root = makeRepo({
      foundation: {
        project: "talos-platform",
        stacks: { bad: "config: [\n", good: "config: {}\n" },
      },
    });
    const ctx = testContext({ repoRoot: root });
    assert.equal(await runCli(["stacks", "--layer", "foundation"], ctx), ExitCode.usage);
    assert.match(
      ctx.stdout.text,
      /^ {2}bad {3}not listed: .*Pulumi\.bad\.yaml: could not be read as YAML/m,
    );
    assert.match(
      ctx.stdout.text,
      /^ {2}good {2}backend file:\/\/.* \(default\); secrets passphrase/m,
    );
    assert.match(ctx.stderr.text, /^stacks: 1 stack file could not be read \(above\)/m);
  });

  it("lists the repository's own environments", async () => {
    const ctx = testContext({ repoRoot: path.resolve(__dirname, "..", "..") });
    assert.equal(await runCli(["stacks", "--layer", "foundation"], ctx), ExitCode.ok);
    const envs = listEnvironments(resolveLayer(ctx.repoRoot, "foundation"));
    assert.equal(
      ctx.stdout.text.split("\n").filter((line) => line.startsWith("  ")).length,
      envs.length,
    );
    for (const env of envs) assert.match(ctx.stdout.text, new RegExp(`^  ${env} +backend `, "m"));
  });
});
