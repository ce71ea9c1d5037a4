// What `up` of the foundation refuses before the engine runs: a config contract newer than the
// nodes run, and a second etcd bootstrap. Through the command line, with the fake cluster.
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as path from "node:path";
import { parse } from "yaml";
import { runCli } from "../../automation/cli";
import { BOOTSTRAP_TYPE, SECRETS_TYPE } from "../../automation/dayTwo/preflight/up";
import { ExitCode, UserError } from "../../automation/errors";
import { ROOT, cleanupRepos } from "../automation/helpers";
import {
  type DayTwoFixture,
  dayTwoFixture as fixture,
  foundationOutputs,
  stackYaml,
} from "./helpers";

/** The day-two fixture with the Proxmox credential `up` needs for the fixture's nodes. */
function dayTwoFixture(options: Parameters<typeof fixture>[0] = {}): DayTwoFixture {
  const f = fixture(options);
  (f.ctx.env as Record<string, string>).PROXMOX_VE_API_TOKEN =
    "root@pam!ci=00000000-0000-0000-0000-000000000000";
  return f;
}

/** The state of a deployed cluster, as `pulumi stack export` lists it. */
function deployedState(options: { bootstrap: boolean }) {
  const urn = (type: string, name: string) =>
    `urn:pulumi:staging::talos-platform::platform:talos:Cluster$${type}::${name}`;
  return [
    {
      urn: "urn:pulumi:staging::talos-platform::pulumi:pulumi:Stack::talos-platform-staging",
      type: "pulumi:pulumi:Stack",
    },
    { urn: urn(SECRETS_TYPE, "staging-secrets"), type: SECRETS_TYPE },
    ...(options.bootstrap
      ? [{ urn: urn(BOOTSTRAP_TYPE, "staging-bootstrap"), type: BOOTSTRAP_TYPE }]
      : []),
    {
      urn: urn("talos:cluster/kubeconfig:Kubeconfig", "staging-kubeconfig"),
      type: "talos:cluster/kubeconfig:Kubeconfig",
    },
  ];
}

/** The engine operations `up` started. */
function engineRuns(f: DayTwoFixture): string[] {
  return f.ctx.workspaces.callsOf("operation").map((c) => c.operation);
}

/** The stack file with a pinned config contract after the cluster's name. */
function pinned(talos: string, contract: string): string {
  return stackYaml(talos).replace(
    "    name: staging\n",
    `    name: staging\n    configContract: ${contract}\n`,
  );
}

describe("up refuses a config contract newer than the nodes run", () => {
  afterEach(cleanupRepos);

  it("refuses a talosVersion bump that moves an unpinned contract while the nodes run the older minor", async () => {
    const f = dayTwoFixture({ stack: stackYaml("v1.14.1") });
    f.ctx.workspaces.state = deployedState({ bootstrap: true });
    assert.equal(await runCli(["up", "staging"], f.ctx), ExitCode.refused);
    assert.deepEqual(engineRuns(f), [], "the engine never ran");
    const err = f.ctx.stderr.text;
    assert.match(err, /preflight foundation\/staging: 1 check failed; nothing was changed/);
    assert.match(
      err,
      /Pulumi\.staging\.yaml talosVersion \(configContract is not pinned\): moves the config contract from v1\.13\.9 to v1\.14\.1, newer than what nodes run; up would push them configs they do not know; got cp-1 v1\.13\.9, cp-2 v1\.13\.9, cp-3 v1\.13\.9, w-1 v1\.13\.9, w-2 v1\.13\.9, w-3 v1\.13\.9\. Upgrade the nodes first \(npm run platform -- upgrade talos staging --to v1\.14\.1\), or pin configContract: v1\.13\.9 in Pulumi\.staging\.yaml/,
    );
    assert.deepEqual(f.talos.callsOf("version"), [
      "version cp-1",
      "version cp-2",
      "version cp-3",
      "version w-1",
      "version w-2",
      "version w-3",
    ]);
    assert.equal(f.talos.connections[0].talosconfig.includes("platform-talos-"), true);
  });

  it("goes ahead after upgrade talos moved every node to the new minor", async () => {
    const f = dayTwoFixture();
    f.ctx.workspaces.state = deployedState({ bootstrap: true });
    assert.equal(
      await runCli(["upgrade", "talos", "staging", "--to", "v1.14.1"], f.ctx),
      ExitCode.ok,
      f.ctx.stderr.text,
    );
    // The roll bumped the stack file; the outputs still say what the last up deployed.
    assert.match(fs.readFileSync(f.stackFile, "utf8"), /talosVersion: v1\.14\.1/);
    assert.equal(await runCli(["up", "staging"], f.ctx), ExitCode.ok, f.ctx.stderr.text);
    assert.deepEqual(engineRuns(f), ["up"]);
  });

  it("refuses while a roll stopped partway, naming only the nodes still on the older minor", async () => {
    const f = dayTwoFixture({ stack: stackYaml("v1.14.1") });
    f.ctx.workspaces.state = deployedState({ bootstrap: true });
    for (const name of ["cp-1", "cp-2", "cp-3", "w-1"]) f.talos.byName(name).version = "v1.14.1";
    assert.equal(await runCli(["up", "staging"], f.ctx), ExitCode.refused);
    assert.match(
      f.ctx.stderr.text,
      /nodes run; up would push them configs they do not know; got w-2 v1\.13\.9, w-3 v1\.13\.9\./,
    );
  });

  it("refuses a pinned contract moved ahead of the nodes, and one whose nodes cannot all be asked", async () => {
    const f = dayTwoFixture({ stack: pinned("v1.14.1", "v1.14.0") });
    f.ctx.workspaces.state = deployedState({ bootstrap: true });
    assert.equal(await runCli(["up", "staging"], f.ctx), ExitCode.refused);
    assert.match(
      f.ctx.stderr.text,
      /Pulumi\.staging\.yaml configContract: moves the config contract from v1\.13\.9 to v1\.14\.0/,
    );

    const g = dayTwoFixture({ stack: stackYaml("v1.14.1") });
    for (const node of g.talos.nodes) node.version = "v1.14.1";
    g.talos.byName("w-3").up = false;
    assert.equal(await runCli(["up", "staging"], g.ctx), ExitCode.refused);
    assert.match(
      g.ctx.stderr.text,
      /not every node could be asked its version; got w-3 \(rpc error: code = Unavailable/,
    );
  });

  it("refuses when talosctl is missing, saying what to install or pin", async () => {
    const f = dayTwoFixture({ stack: stackYaml("v1.14.1") });
    f.talos.client = new UserError(
      {
        what: "talosctl",
        problem: "could not be started (not found)",
        got: '"talosctl"',
        fix: "Install talosctl v1.14",
      },
      ExitCode.missingCli,
    );
    assert.equal(await runCli(["up", "staging"], f.ctx), ExitCode.refused);
    assert.match(
      f.ctx.stderr.text,
      /checking that the nodes run it needs talosctl; got "talosctl could not be started \(not found\).*Install talosctl, or pin configContract: v1\.13\.9/,
    );
  });

  it("goes ahead with a note when the contract is pinned and only talosVersion moves, asking no node", async () => {
    const f = dayTwoFixture({ stack: pinned("v1.14.1", "v1.13.9") });
    f.ctx.workspaces.state = deployedState({ bootstrap: true });
    assert.equal(await runCli(["up", "staging"], f.ctx), ExitCode.ok, f.ctx.stderr.text);
    assert.match(
      f.ctx.stderr.text,
      /note: Pulumi\.staging\.yaml moves talosVersion from v1\.13\.9 \(deployed\) to v1\.14\.1: `up` does not upgrade nodes/,
    );
    assert.deepEqual(f.talos.log, [], "no node was asked");
    assert.deepEqual(engineRuns(f), ["up"]);
  });

  it("falls back to the deployed talosVersion for stacks deployed before the configContract output", async () => {
    const outputs = foundationOutputs();
    delete outputs.configContract;
    const f = dayTwoFixture({ stack: stackYaml("v1.14.1"), outputs });
    assert.equal(await runCli(["up", "staging"], f.ctx), ExitCode.refused);
    assert.match(f.ctx.stderr.text, /moves the config contract from v1\.13\.9 to v1\.14\.1/);
  });

  it("pins configContract in every foundation stack file of the repository, at or below talosVersion", () => {
    const files = [
      ...fs
        .readdirSync(ROOT)
        .filter((f) => /^Pulumi\.[^.]+\.ya?ml$/.test(f) && f !== "Pulumi.yaml"),
      ...(fs.existsSync(path.join(ROOT, "examples"))
        ? fs
            .readdirSync(path.join(ROOT, "examples"), { recursive: true, encoding: "utf8" })
            .filter((f) => /(^|\/)Pulumi\.[^./]+\.ya?ml$/.test(f))
            .map((f) => path.join("examples", f))
        : []),
    ];
    assert.ok(files.includes("Pulumi.staging.yaml") && files.includes("Pulumi.prod.yaml"));
    for (const file of files) {
      const config = (
        parse(fs.readFileSync(path.join(ROOT, file), "utf8")) as {
          config?: Record<string, unknown>;
        }
      ).config;
      const cluster = config?.["talos-platform:cluster"] as
        { talosVersion?: string; configContract?: string } | undefined;
      if (!cluster) continue; // not a foundation stack file
      assert.match(
        String(cluster.configContract),
        /^v\d+\.\d+\.\d+$/,
        `${file} pins configContract`,
      );
      const minor = (v: string) => v.replace(/^v/, "").split(".").slice(0, 2).map(Number);
      const [cMajor, cMinor] = minor(String(cluster.configContract));
      const [tMajor, tMinor] = minor(String(cluster.talosVersion));
      assert.ok(
        cMajor < tMajor || (cMajor === tMajor && cMinor <= tMinor),
        `${file}: contract at or below talosVersion`,
      );
    }
  });
});

describe("up never bootstraps etcd a second time", () => {
  afterEach(cleanupRepos);

  it("refuses when the state lost the Bootstrap of a cluster that was bootstrapped (a state delete of the first control plane)", async () => {
    const f = dayTwoFixture();
    f.ctx.workspaces.state = deployedState({ bootstrap: false });
    assert.equal(await runCli(["up", "staging"], f.ctx), ExitCode.refused);
    assert.deepEqual(engineRuns(f), [], "the engine never ran");
    assert.match(
      f.ctx.stderr.text,
      /etcd bootstrap: the state has lost the cluster's talos:machine\/bootstrap:Bootstrap resource although etcd was bootstrapped \(the stack has a kubeconfig output\), so up would bootstrap etcd again; got cp-1 would be bootstrapped: a second, empty etcd beside the running one\. Put the Bootstrap back into the state before any up: .*docs\/runbooks\/lost-proxmox-host\.md step 6/,
    );
  });

  it("reads the bootstrap by the program's own rule: the etcdBootstrap output says so without a kubeconfig", async () => {
    const outputs = foundationOutputs();
    delete (outputs as Record<string, unknown>).kubeconfig;
    const f = dayTwoFixture({
      outputs: {
        ...outputs,
        etcdBootstrap: { value: { talosCaSha256: "0".repeat(64) }, secret: false },
      },
    });
    f.ctx.workspaces.state = deployedState({ bootstrap: false });
    assert.equal(await runCli(["up", "staging"], f.ctx), ExitCode.refused);
    assert.deepEqual(engineRuns(f), [], "the engine never ran");
    assert.match(
      f.ctx.stderr.text,
      /etcd bootstrap: the state has lost the cluster's talos:machine\/bootstrap:Bootstrap resource although etcd was bootstrapped \(the stack has an etcdBootstrap output\), so up would bootstrap etcd again; got cp-1 would be bootstrapped/,
    );
  });

  it("reports it together with every other refusal", async () => {
    const f = dayTwoFixture({ stack: stackYaml("v1.14.1") });
    f.ctx.workspaces.state = deployedState({ bootstrap: false });
    assert.equal(await runCli(["up", "staging"], f.ctx), ExitCode.refused);
    assert.match(
      f.ctx.stderr.text,
      /preflight foundation\/staging: 2 checks failed; nothing was changed/,
    );
    assert.match(f.ctx.stderr.text, /- .*configContract is not pinned.*\n {2}- etcd bootstrap: /);
  });

  it("goes ahead while the state keeps the Bootstrap (it is never created again), on a first up, and after a first up that never bootstrapped", async () => {
    const kept = dayTwoFixture();
    kept.ctx.workspaces.state = deployedState({ bootstrap: true });
    assert.equal(await runCli(["up", "staging"], kept.ctx), ExitCode.ok, kept.ctx.stderr.text);
    assert.deepEqual(engineRuns(kept), ["up"]);

    const first = dayTwoFixture({ outputs: {} });
    assert.equal(await runCli(["up", "staging"], first.ctx), ExitCode.ok, first.ctx.stderr.text);
    assert.deepEqual(engineRuns(first), ["up"]);

    // Secrets created, but the first up failed before the bootstrap: no kubeconfig was ever exported.
    const failed = dayTwoFixture({ outputs: {} });
    failed.ctx.workspaces.state = deployedState({ bootstrap: false });
    assert.equal(await runCli(["up", "staging"], failed.ctx), ExitCode.ok, failed.ctx.stderr.text);
  });

  it("leaves preview alone: it shows what up would do", async () => {
    const f = dayTwoFixture();
    f.ctx.workspaces.state = deployedState({ bootstrap: false });
    assert.equal(await runCli(["preview", "staging"], f.ctx), ExitCode.ok, f.ctx.stderr.text);
    assert.deepEqual(engineRuns(f), ["preview"]);
  });
});
