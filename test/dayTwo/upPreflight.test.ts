// What `up` of the foundation does before the engine runs: the nodes asked what they run, every
// version the stack file asks for rolled out step by gated step, and a second etcd bootstrap
// refused. Through the command line, with the fake cluster.
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as path from "node:path";
import { parse } from "yaml";
import { runCli } from "../../automation/cli";
import { BOOTSTRAP_TYPE, SECRETS_TYPE } from "../../automation/dayTwo/preflight/up";
import { ExitCode } from "../../automation/errors";
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

/** The converge request the engine's `up` was given (components/talos/convergence.ts). */
function convergeOf(f: DayTwoFixture): Record<string, unknown> | undefined {
  const up = f.ctx.workspaces.callsOf("operation").find((c) => c.operation === "up");
  return up?.converge as Record<string, unknown> | undefined;
}

/** The order things happened in: the fake cluster's calls and the engine's runs, interleaved. */
function timeline(f: DayTwoFixture): string[] {
  return f.talos.log;
}

describe("up converges a running cluster to the stack file, step by gated step", () => {
  afterEach(cleanupRepos);

  it("upgrades Kubernetes with upgrade-k8s before the engine runs, then has the configs generated for it", async () => {
    const f = dayTwoFixture({ stack: stackYaml("v1.13.9", "1.36.3") });
    for (const node of f.talos.nodes) node.kubelet = "1.35.6";
    f.ctx.workspaces.outputs = foundationOutputs(undefined, {
      talos: "v1.13.9",
      kubernetes: "1.35.6",
    });
    f.ctx.workspaces.state = deployedState({ bootstrap: true });
    let beforeEngine: string[] = [];
    f.ctx.workspaces.during = () => {
      beforeEngine = [...timeline(f)];
    };
    assert.equal(await runCli(["up", "staging"], f.ctx), ExitCode.ok, f.ctx.stderr.text);
    assert.ok(
      beforeEngine.includes("upgrade-k8s via cp-1 --to 1.36.3"),
      "upgraded before the engine ran",
    );
    assert.ok(
      beforeEngine.indexOf("upgrade-k8s via cp-1 --to 1.36.3 --dry-run") <
        beforeEngine.indexOf("upgrade-k8s via cp-1 --to 1.36.3"),
    );
    assert.ok(
      beforeEngine.indexOf("snapshot via cp-1") <
        beforeEngine.indexOf("upgrade-k8s via cp-1 --to 1.36.3 --dry-run"),
    );
    assert.equal(convergeOf(f)?.kubernetesVersion, "1.36.3");
    assert.deepEqual(engineRuns(f), ["up"]);
    assert.match(
      f.ctx.stdout.text,
      /up foundation\/staging: Kubernetes 1\.35\.6 → 1\.36\.3, each gated, before the engine runs/,
    );
  });

  it("stops before the engine runs (exit 3) when upgrade-k8s would overwrite live manifest objects, unless --allow-manifest-overwrite", async () => {
    const upgrading = () => {
      const f = dayTwoFixture({ stack: stackYaml("v1.13.9", "1.36.3") });
      for (const node of f.talos.nodes) node.kubelet = "1.35.6";
      f.ctx.workspaces.outputs = foundationOutputs(undefined, {
        talos: "v1.13.9",
        kubernetes: "1.35.6",
      });
      f.ctx.workspaces.state = deployedState({ bootstrap: true });
      f.talos.kubernetesDryRun = "dry-run-flux-moved-on";
      return f;
    };
    const f = upgrading();
    assert.equal(await runCli(["up", "staging"], f.ctx), ExitCode.refused);
    assert.deepEqual(engineRuns(f), []);
    assert.deepEqual(f.talos.callsOf("upgrade-k8s"), [
      "upgrade-k8s via cp-1 --to 1.36.3 --dry-run",
    ]);
    assert.match(
      f.ctx.stderr.text,
      /would overwrite 2 live objects of the bootstrap manifests .*: npm run platform -- up staging --allow-manifest-overwrite$/m,
    );
    const allowed = upgrading();
    assert.equal(
      await runCli(["up", "staging", "--allow-manifest-overwrite"], allowed.ctx),
      ExitCode.ok,
      allowed.ctx.stderr.text,
    );
    assert.deepEqual(engineRuns(allowed), ["up"]);
    assert.equal(convergeOf(allowed)?.kubernetesVersion, "1.36.3");
  });

  it("rolls Talos node by node, control planes first, before the engine runs, and records each node's installer", async () => {
    const f = dayTwoFixture({ stack: stackYaml("v1.14.1", "1.36.3") });
    f.ctx.workspaces.state = deployedState({ bootstrap: true });
    assert.equal(await runCli(["up", "staging"], f.ctx), ExitCode.ok, f.ctx.stderr.text);
    assert.deepEqual(
      f.talos.callsOf("upgrade").map((l) => l.split(" ")[1]),
      ["cp-1", "cp-2", "cp-3", "w-1", "w-2", "w-3"],
    );
    const converge = convergeOf(f)!;
    assert.equal(converge.talosVersion, "v1.14.1");
    assert.deepEqual(
      Object.values(converge.installers as Record<string, string>).map((i) => i.split(":").pop()),
      ["v1.14.1", "v1.14.1", "v1.14.1", "v1.14.1", "v1.14.1", "v1.14.1"],
    );
    // The roll rebooted every node into Talos 1.14: what each booted is read for the outputs,
    // before the engine pushes (rebootState.ts), for its new boot.
    const records = converge.bootRecords as Record<string, { bootId: string }>;
    assert.deepEqual(
      Object.entries(records).map(([name, record]) => [name, record.bootId]),
      ["cp-1", "cp-2", "cp-3", "w-1", "w-2", "w-3"].map((n) => [n, `boot-${n}-2`]),
    );
    const lastUpgrade = f.talos.log.lastIndexOf(f.talos.callsOf("upgrade").at(-1)!);
    assert.ok(f.talos.log.indexOf("bootid cp-1") > lastUpgrade, "read after the roll");
  });

  it("reads what each Talos 1.14 node booted with before the engine pushes, where it still runs it", async () => {
    const f = dayTwoFixture({
      stack: stackYaml("v1.14.1", "1.36.3"),
      outputs: foundationOutputs(undefined, { talos: "v1.14.1", kubernetes: "1.36.3" }),
    });
    for (const node of f.talos.nodes) node.version = "v1.14.1";
    // w-3 took a config since it booted: what it booted can no longer be read from it.
    f.talos.applyNow("w-3", `${f.talos.byName("w-3").config}# changed\n`);
    f.ctx.workspaces.state = deployedState({ bootstrap: true });
    // --no-rollout: the fake engine pushes no config, so w-3 would still run its changed one.
    assert.equal(
      await runCli(["up", "staging", "--no-rollout"], f.ctx),
      ExitCode.ok,
      f.ctx.stderr.text,
    );
    const records = convergeOf(f)!.bootRecords as Record<string, { bootId: string }>;
    assert.deepEqual(Object.keys(records), ["cp-1", "cp-2", "cp-3", "w-1", "w-2"]);
    assert.equal(records["cp-1"].bootId, "boot-cp-1-1");
    // Talos 1.13 nodes (no BootID, and they stage what needs a reboot) are not asked.
    const old = dayTwoFixture();
    old.ctx.workspaces.state = deployedState({ bootstrap: true });
    assert.equal(await runCli(["up", "staging"], old.ctx), ExitCode.ok, old.ctx.stderr.text);
    assert.deepEqual(convergeOf(old)?.bootRecords ?? {}, {});
    assert.deepEqual(old.talos.callsOf("bootid"), []);
  });

  it("tells the engine what the nodes run when a change was made outside up, and upgrades nothing", async () => {
    // `upgrade kubernetes --no-write` ran: the nodes run 1.36.3, the state and the stack file say 1.35.6.
    const f = dayTwoFixture({ stack: stackYaml("v1.13.9", "1.35.6") });
    f.ctx.workspaces.outputs = foundationOutputs(undefined, {
      talos: "v1.13.9",
      kubernetes: "1.35.6",
    });
    f.ctx.workspaces.state = deployedState({ bootstrap: true });
    assert.equal(await runCli(["up", "staging"], f.ctx), ExitCode.ok, f.ctx.stderr.text);
    assert.deepEqual(f.talos.callsOf("upgrade-k8s"), []);
    assert.deepEqual(f.talos.callsOf("upgrade"), []);
    // The program then keeps 1.36.3: the stack file's older version is never rolled back.
    assert.equal(convergeOf(f)?.kubernetesVersion, "1.36.3");
    assert.equal(convergeOf(f)?.talosVersion, "v1.13.9");
  });

  it("refuses a version change while a node cannot be asked what it runs, before the engine runs", async () => {
    const f = dayTwoFixture({ stack: stackYaml("v1.14.1", "1.36.3") });
    f.ctx.workspaces.state = deployedState({ bootstrap: true });
    f.talos.byName("w-2").up = false;
    assert.equal(await runCli(["up", "staging"], f.ctx), ExitCode.refused);
    assert.deepEqual(engineRuns(f), []);
    assert.deepEqual(f.talos.callsOf("upgrade"), []);
    assert.match(
      f.ctx.stderr.text,
      /the stack file asks for Talos v1\.13\.9 → v1\.14\.1, and not every node could be asked what it runs; got w-2/,
    );
  });

  it("stops where the roll stopped, with no engine run, and resumes on the next up", async () => {
    const f = dayTwoFixture({ stack: stackYaml("v1.14.1", "1.36.3") });
    f.ctx.workspaces.state = deployedState({ bootstrap: true });
    f.talos.upgrades.set("cp-2", "fail");
    assert.equal(await runCli(["up", "staging"], f.ctx), ExitCode.failed);
    assert.deepEqual(engineRuns(f), []);
    assert.match(
      f.ctx.stderr.text,
      /stopped at cp-2 \(upgrade\).*then resume: npm run platform -- up staging/,
    );
    f.talos.upgrades.delete("cp-2");
    assert.equal(await runCli(["up", "staging"], f.ctx), ExitCode.ok, f.ctx.stderr.text);
    assert.deepEqual(
      f.talos.callsOf("upgrade").map((l) => l.split(" ")[1]),
      ["cp-1", "cp-2", "cp-2", "cp-3", "w-1", "w-2", "w-3"],
    );
    assert.deepEqual(engineRuns(f), ["up"]);
  });

  it("asks no node on a cluster's first up", async () => {
    const f = dayTwoFixture({ outputs: {} });
    assert.equal(await runCli(["up", "staging"], f.ctx), ExitCode.ok, f.ctx.stderr.text);
    assert.deepEqual(f.talos.log, []);
    assert.deepEqual(convergeOf(f), {});
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
    // A Kubernetes downgrade (an older branch) is refused as well.
    const f = dayTwoFixture({ stack: stackYaml("v1.13.9", "1.35.6") });
    f.ctx.workspaces.state = deployedState({ bootstrap: false });
    assert.equal(await runCli(["up", "staging"], f.ctx), ExitCode.refused);
    assert.match(
      f.ctx.stderr.text,
      /preflight foundation\/staging: 2 checks failed; nothing was changed/,
    );
    assert.match(f.ctx.stderr.text, /- Kubernetes upgrade path: .*\n {2}- etcd bootstrap: /);
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
