// One owner of a running cluster: a bare `pulumi up` (or `preview`) generates configs for what the
// cluster runs, as the stack's last outputs record it, and leaves every disruptive change (a version,
// a schematic, etcd membership) to the CLI's sequenced `platform up`, which says what its steps
// reached (TALOS_PLATFORM_CONVERGE). Checked on what the program registers.
import * as pulumi from "@pulumi/pulumi";
import { strict as assert } from "node:assert";
import { parse } from "yaml";
import { StackConfigError } from "../components/config/problems";
import {
  CONVERGE_ENV,
  type ConvergeRequest,
  converge,
  lastDeployment,
} from "../components/talos/convergence";
import { clone, proxmoxCluster } from "./fixtures";
import { isSecret, runFoundation, type StackValues } from "./harness";
import { Recorder } from "./mocks";

const OWN_STACK = "organization/talos-platform/test";
const GET_CONFIGURATION = "talos:machine/getConfiguration:getConfiguration";
const INSTALLER_1_13_9 = (id = "a".repeat(64)) =>
  `factory.talos.dev/nocloud-installer/${id}:v1.13.9`;

/** What the last `up` of the fixture cluster recorded: Talos v1.13.9, Kubernetes 1.36.3, cp-1..3. */
function deployed(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    nodes: {
      controlplane: { "cp-1": "192.0.2.11", "cp-2": "192.0.2.12", "cp-3": "192.0.2.13" },
      worker: {},
    },
    talosVersion: "v1.13.9",
    kubernetesVersion: "1.36.3",
    installerImages: Object.fromEntries(
      ["cp-1", "cp-2", "cp-3"].map((name) => [name, INSTALLER_1_13_9()]),
    ),
    etcdBootstrap: { talosCaSha256: "0".repeat(64) },
    ...overrides,
  };
}

/** The last outputs of the cluster with `count` control planes cp-1, cp-2, … */
function deployedWith(count: number): Record<string, unknown> {
  const names = Array.from({ length: count }, (_, i) => `cp-${i + 1}`);
  return deployed({
    nodes: {
      controlplane: Object.fromEntries(names.map((n, i) => [n, `192.0.2.1${i + 1}`])),
      worker: {},
    },
  });
}

/** Runs the program over `values` with the stack's last outputs and the CLI's converge request. */
async function run(
  values: StackValues,
  last: Record<string, unknown> | undefined,
  request?: ConvergeRequest,
  options: { preview?: boolean } = {},
) {
  const recorder = new Recorder();
  if (last) recorder.behaviour.stackOutputs = { [OWN_STACK]: last };
  const warnings: string[] = [];
  const warn = pulumi.log.warn;
  const before = process.env[CONVERGE_ENV];
  pulumi.log.warn = async (message: string) => {
    warnings.push(message);
  };
  if (request) process.env[CONVERGE_ENV] = JSON.stringify(request);
  try {
    const result = await runFoundation(values, { recorder, ...options });
    return { ...result, warnings };
  } finally {
    pulumi.log.warn = warn;
    if (before === undefined) delete process.env[CONVERGE_ENV];
    else process.env[CONVERGE_ENV] = before;
  }
}

/** The stack with Kubernetes or Talos asked for. */
function asking(change: (cluster: any) => void, nodes?: (list: any[]) => void): StackValues {
  const values: any = clone(proxmoxCluster());
  change(values.cluster);
  nodes?.(values.nodes);
  return values;
}

const configs = (recorder: Recorder) => recorder.invokesOf(GET_CONFIGURATION);
const installImage = (patches: readonly string[]) =>
  patches
    .map((p) => parse(p) as { machine?: { install?: { image?: string } } })
    .find((doc) => doc?.machine?.install?.image)?.machine?.install?.image;

/** A fourth and fifth Proxmox control plane. */
function moreControlPlanes(list: any[]): void {
  for (const i of [4, 5]) {
    list.push({
      name: `cp-${i}`,
      role: "controlplane",
      platform: "proxmox",
      network: { addresses: [`192.0.2.1${i}/24`], gateway: "192.0.2.1" },
      proxmox: { host: `pve${i - 3}`, vmId: 100 + i },
    });
  }
}

describe("one owner: what a run may change on a running cluster", () => {
  describe("versions", () => {
    it("keeps generating for the Kubernetes the cluster runs when the stack file asks for a newer one", async () => {
      const { recorder, resolved, warnings } = await run(
        asking((c) => (c.kubernetesVersion = "1.36.9")),
        deployed(),
      );
      assert.deepEqual(
        configs(recorder).map((i) => i.inputs.kubernetesVersion),
        ["1.36.3", "1.36.3", "1.36.3"],
      );
      assert.equal(resolved.kubernetesVersion, "1.36.3");
      assert.deepEqual(resolved.pendingChanges.kubernetes, { from: "1.36.3", to: "1.36.9" });
      assert.equal(warnings.length, 1);
      assert.match(
        warnings[0],
        /^cluster\.kubernetesVersion: the stack file asks for 1\.36\.9; the cluster runs 1\.36\.3.*`npm run platform -- up test` upgrades it/,
      );
    });

    it("generates for the new Kubernetes once the CLI's upgrade step reports it done", async () => {
      const { recorder, resolved, warnings } = await run(
        asking((c) => (c.kubernetesVersion = "1.36.9")),
        deployed(),
        { kubernetesVersion: "1.36.9" },
      );
      assert.ok(configs(recorder).every((i) => i.inputs.kubernetesVersion === "1.36.9"));
      assert.equal(resolved.kubernetesVersion, "1.36.9");
      assert.equal(resolved.pendingChanges.kubernetes, undefined);
      assert.deepEqual(warnings, []);
    });

    it("never downgrades: an older stack file (an old branch) keeps what the cluster runs", async () => {
      const { recorder, warnings } = await run(
        asking((c) => (c.kubernetesVersion = "1.35.6")),
        deployed(),
      );
      assert.ok(configs(recorder).every((i) => i.inputs.kubernetesVersion === "1.36.3"));
      assert.match(warnings[0], /older than the 1\.36\.3 the cluster runs; nothing is downgraded/);
    });

    it("keeps each existing node on the installer it runs; only new nodes install the stack's", async () => {
      const { recorder, resolved, warnings } = await run(
        asking(
          (c) => {
            c.talosVersion = "v1.14.1";
            c.configContract = "v1.13.9";
          },
          (list) =>
            list.push({
              name: "w-1",
              role: "worker",
              platform: "proxmox",
              network: { addresses: ["192.0.2.21/24"], gateway: "192.0.2.1" },
              proxmox: { host: "pve1", vmId: 121 },
            }),
        ),
        deployed(),
      );
      const byHost = (name: string) =>
        configs(recorder).find((i) =>
          i.inputs.configPatches.some((p: string) => p.includes(`hostname: ${name}\n`)),
        )!;
      assert.equal(installImage(byHost("cp-1").inputs.configPatches), INSTALLER_1_13_9());
      assert.match(installImage(byHost("w-1").inputs.configPatches)!, /:v1\.14\.1$/);
      assert.equal(resolved.installerImages["cp-2"], INSTALLER_1_13_9());
      assert.match(resolved.desiredInstallers["cp-2"], /:v1\.14\.1$/);
      assert.equal(resolved.talosVersion, "v1.13.9");
      assert.deepEqual(resolved.pendingChanges.talos, { from: "v1.13.9", to: "v1.14.1" });
      assert.match(warnings.join("\n"), /cluster\.talosVersion: the stack file asks for v1\.14\.1/);
    });

    it("gives a node the installer the CLI's roll upgraded it to", async () => {
      const upgraded = INSTALLER_1_13_9("b".repeat(64)).replace("v1.13.9", "v1.14.1");
      const { resolved } = await run(
        asking((c) => {
          c.talosVersion = "v1.14.1";
          c.configContract = "v1.13.9";
        }),
        deployed(),
        {
          installers: { "cp-1": upgraded },
        },
      );
      assert.equal(resolved.installerImages["cp-1"], upgraded);
      assert.equal(resolved.installerImages["cp-2"], INSTALLER_1_13_9());
    });

    it("never generates configs for a newer contract than the Talos the nodes run", async () => {
      const { recorder, resolved } = await run(
        asking((c) => {
          c.talosVersion = "v1.13.9";
          c.configContract = "v1.13.9";
        }),
        deployed({ talosVersion: "v1.12.4" }),
      );
      assert.ok(configs(recorder).every((i) => i.inputs.talosVersion === "v1.12.4"));
      assert.equal(resolved.configContract, "v1.12.4");
    });

    it("refuses a config contract the provider's generator does not know, naming cluster.configContract", async () => {
      await assert.rejects(
        run(
          asking((c) => {
            c.talosVersion = "v1.14.1";
            c.configContract = "v1.14.1";
          }),
          deployed({ talosVersion: "v1.14.1" }),
        ),
        (error: unknown) =>
          error instanceof StackConfigError &&
          error.problems.length === 1 &&
          error.problems[0].startsWith(
            "cluster.configContract: Talos 1.14's config contract is not one the Talos provider's config generator knows",
          ),
      );
    });

    it("generates for the stack file's versions on a cluster's first up", async () => {
      const { recorder, warnings } = await run(
        asking((c) => (c.kubernetesVersion = "1.36.9")),
        undefined,
      );
      assert.ok(configs(recorder).every((i) => i.inputs.kubernetesVersion === "1.36.9"));
      assert.deepEqual(warnings, []);
    });
  });

  describe("etcd membership", () => {
    it("adds one control plane per run to a running cluster, the others waiting", async () => {
      const { recorder, resolved, warnings } = await run(
        asking(() => undefined, moreControlPlanes),
        deployed(),
      );
      assert.ok(recorder.resources.some((r) => r.name === "demo-cp-4-vm"));
      assert.ok(!recorder.resources.some((r) => r.name.startsWith("demo-cp-5")));
      assert.deepEqual(resolved.pendingChanges.addControlPlanes, ["cp-5"]);
      assert.match(warnings.join("\n"), /this run adds cp-4; cp-5 waits for the next/);
    });

    it("forms a new cluster's etcd from all its control planes at once", async () => {
      const { recorder } = await run(
        asking(() => undefined, moreControlPlanes),
        undefined,
      );
      assert.ok(recorder.resources.some((r) => r.name === "demo-cp-5-vm"));
    });

    it("refuses to remove a control plane that did not leave etcd, registering nothing, in a preview too", async () => {
      for (const preview of [false, true]) {
        const recorder = new Recorder();
        recorder.behaviour.stackOutputs = { [OWN_STACK]: deployedWith(4) };
        await assert.rejects(
          runFoundation(proxmoxCluster(), { recorder, preview }),
          (error: StackConfigError) =>
            error instanceof StackConfigError &&
            /^nodes: removing control plane cp-4 would take an etcd member away without leaving etcd/.test(
              error.problems[0],
            ),
        );
        assert.deepEqual(
          recorder.resources.filter((r) => r.type !== "pulumi:pulumi:StackReference"),
          [],
        );
      }
    });

    it("removes the control planes the CLI took out of etcd, and refuses while one of them has not left", async () => {
      const { recorder } = await run(proxmoxCluster(), deployedWith(5), {
        leftEtcd: ["cp-4", "cp-5"],
      });
      assert.ok(recorder.resources.some((r) => r.name === "demo-cp-3-vm"));
      assert.ok(!recorder.resources.some((r) => /^demo-cp-[45]/.test(r.name)));
      await assert.rejects(
        run(proxmoxCluster(), deployedWith(5), { leftEtcd: ["cp-5"] }),
        /removing control plane cp-4 would take an etcd member away without leaving etcd/,
      );
    });

    it("skips the health check of a run that deletes nodes (Kubernetes still lists them), and says so", async () => {
      const health = "talos:cluster/getHealth:getHealth";
      const kept = await run(proxmoxCluster(), deployedWith(3));
      assert.equal(kept.recorder.invokesOf(health).length, 1, "a run that deletes nothing checks");
      const removing = await run(proxmoxCluster(), deployedWith(5), {
        leftEtcd: ["cp-4", "cp-5"],
      });
      assert.deepEqual(removing.recorder.invokesOf(health), []);
      assert.ok(
        removing.warnings.some((w) =>
          /^nodes: this run deletes cp-4, cp-5, which Kubernetes lists until their machines are gone, so the health check is skipped; `npm run platform -- up \S+` drains them first/.test(
            w,
          ),
        ),
        removing.warnings.join("\n"),
      );
    });
  });

  describe("the rules on their own", () => {
    const desired = {
      talosVersion: "v1.13.9",
      kubernetesVersion: "1.36.3",
      configContract: "v1.13.9",
      nodes: [
        { name: "cp-1", role: "controlplane" as const },
        { name: "w-1", role: "worker" as const },
      ],
    };

    it("reads what a last up recorded, and nothing from a stack never deployed", () => {
      assert.deepEqual(lastDeployment({}), {
        exists: false,
        controlPlanes: [],
        workers: [],
        installerImages: {},
      });
      const last = lastDeployment(deployed());
      assert.equal(last.exists, true);
      assert.deepEqual(last.controlPlanes, ["cp-1", "cp-2", "cp-3"]);
      assert.equal(last.kubernetesVersion, "1.36.3");
    });

    it("lets workers come and go freely", () => {
      const plan = converge(
        desired,
        lastDeployment(
          deployed({ nodes: { controlplane: { "cp-1": "x" }, worker: { "w-9": "y" } } }),
        ),
        {},
        "staging",
      );
      assert.deepEqual(plan.refusals, []);
      assert.deepEqual([...plan.registered], ["cp-1", "w-1"]);
      assert.deepEqual(plan.removing, ["w-9"]);
    });
  });

  describe("boot records", () => {
    it("exports what the CLI read of each node's boot over the last outputs' records, for the stack's nodes only, as a secret", async () => {
      const { outputs, resolved } = await run(
        asking(() => undefined),
        deployed({
          bootRecords: {
            "cp-1": { bootId: "boot-1", fields: { "v1alpha1 cluster.etcd": "aa" } },
            "cp-2": { bootId: "boot-2", fields: {} },
            "cp-9": { bootId: "boot-9", fields: {} },
          },
        }),
        {
          bootRecords: { "cp-2": { bootId: "boot-2b", fields: { "v1alpha1 cluster.etcd": "bb" } } },
        },
      );
      assert.deepEqual(resolved.bootRecords, {
        "cp-1": { bootId: "boot-1", fields: { "v1alpha1 cluster.etcd": "aa" } },
        "cp-2": { bootId: "boot-2b", fields: { "v1alpha1 cluster.etcd": "bb" } },
      });
      assert.equal(await isSecret(outputs.bootRecords), true);
    });

    it("keeps the last records on a bare pulumi up, which reads no boot", async () => {
      const records = { "cp-3": { bootId: "boot-3", fields: { EnvironmentConfig: "cc" } } };
      const { resolved } = await run(
        asking(() => undefined),
        deployed({ bootRecords: records }),
      );
      assert.deepEqual(resolved.bootRecords, records);
    });
  });
});
