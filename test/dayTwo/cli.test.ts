import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as path from "node:path";
import { parse } from "yaml";
import { runCli } from "../../automation/cli";
import { ExitCode } from "../../automation/errors";
import { ROOT, cleanupRepos, makeRepo, testContext } from "../automation/helpers";

describe("day-two commands in the CLI", () => {
  afterEach(cleanupRepos);

  it("lists every day-two command with an example, and the drift exit code", async () => {
    const ctx = testContext({ repoRoot: makeRepo() });
    assert.equal(await runCli(["--help"], ctx), ExitCode.ok);
    for (const command of ["preflight", "upgrade", "etcd", "replace-node", "drift"]) {
      assert.match(ctx.stdout.text, new RegExp(`^  ${command} `, "m"), command);
      assert.match(ctx.stdout.text, new RegExp(`npm run platform -- ${command}\\b`), command);
    }
    assert.match(ctx.stdout.text, /6 drift found/);
  });

  it("documents upgrade talos' options", async () => {
    const ctx = testContext({ repoRoot: makeRepo() });
    assert.equal(await runCli(["upgrade", "talos", "--help"], ctx), ExitCode.ok);
    for (const option of [
      "--to <version>",
      "--max-unavailable <n>",
      "--resume",
      "--no-write",
      "--keep-snapshots <n>",
    ]) {
      assert.ok(ctx.stdout.text.includes(option), option);
    }
  });

  it("needs --to for an upgrade (usage error before anything is read)", async () => {
    const ctx = testContext({ repoRoot: makeRepo() });
    assert.equal(await runCli(["upgrade", "talos", "staging"], ctx), ExitCode.usage);
    assert.match(ctx.stderr.text, /required option '--to <version>' not specified/);
    assert.equal(ctx.workspaces.calls.length, 0);
  });

  it("refuses an unknown environment, listing the known ones", async () => {
    const ctx = testContext({ repoRoot: makeRepo() });
    assert.equal(await runCli(["drift", "qa"], ctx), ExitCode.usage);
    assert.match(ctx.stderr.text, /no stack file Pulumi\.qa\.yaml .* Use one of: prod, staging/);
  });

  it("says to deploy first when the stack has no outputs", async () => {
    const ctx = testContext({
      repoRoot: makeRepo({
        foundation: {
          project: "talos-platform",
          stacks: {
            staging:
              "config:\n  talos-platform:cluster: { name: s, talosVersion: v1.13.9, kubernetesVersion: 1.36.3 }\n  talos-platform:nodes: [{ name: cp-1, role: controlplane }]\n",
          },
        },
      }),
    });
    assert.equal(await runCli(["preflight", "staging"], ctx), ExitCode.usage);
    assert.match(
      ctx.stderr.text,
      /foundation\/staging: the stack's outputs lack what day-two commands need; got \["clusterName","kubernetesVersion","nodes","talosVersion","talosconfig"\]\. Deploy the cluster .*npm run platform -- up staging/,
    );
  });
});

describe("scheduled drift workflow", () => {
  const workflow = parse(
    fs.readFileSync(path.join(ROOT, ".github", "workflows", "drift.yml"), "utf8"),
  ) as {
    on: { schedule?: { cron: string }[]; workflow_dispatch?: unknown };
    jobs: Record<
      string,
      { "runs-on": unknown; strategy: { matrix: { env: string[] } }; steps: { run?: string }[] }
    >;
  };
  const job = Object.values(workflow.jobs)[0];

  it("runs on a schedule for staging and prod on a self-hosted runner that reaches the nodes", () => {
    assert.ok(workflow.on.schedule && workflow.on.schedule.length > 0);
    assert.deepEqual(job.strategy.matrix.env, ["staging", "prod"]);
    assert.ok(JSON.stringify(job["runs-on"]).includes("self-hosted"));
  });

  it("runs the drift command and installs the talosctl of the stack's Talos version", () => {
    const runs = job.steps.map((s) => s.run ?? "").join("\n");
    // The environment reaches the scripts through env, never spliced into them.
    assert.match(runs, /npm run --silent platform -- drift "\$ENVIRONMENT"/);
    // The certificate check fails the job at 30 days left, health on an unhealthy cluster; both
    // run even when drift was found.
    assert.match(runs, /platform -- certs "\$ENVIRONMENT" --min-days 30/);
    assert.match(runs, /platform -- health "\$ENVIRONMENT"/);
    for (const step of job.steps.filter((s) =>
      /platform -- (drift|certs|health)/.test(s.run ?? ""),
    )) {
      assert.equal(
        (step as { env?: Record<string, string> }).env?.ENVIRONMENT,
        "${{ matrix.env }}",
      );
    }
    for (const step of job.steps.filter((s) => /platform -- (certs|health)/.test(s.run ?? ""))) {
      assert.equal((step as { if?: string }).if, "success() || failure()");
    }
    assert.match(runs, /scripts\/install-talosctl\.sh "\$ENVIRONMENT"/);
    const script = fs.readFileSync(path.join(ROOT, "scripts", "install-talosctl.sh"), "utf8");
    assert.match(script, /talosVersion/);
    assert.match(script, /releases\/download\/\$\{version\}\/talosctl-linux-amd64/);
  });
});
