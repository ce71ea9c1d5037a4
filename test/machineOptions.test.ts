// What a change to a machine itself (not to its Talos config) does, as registered: no platform
// restarts or resizes a running node on its own, a replaced machine never runs beside the one it
// replaces, and a replaced machine gets its config pushed again. The mocks cannot diff, so these
// tests pin the options and inputs that make the engine and the providers behave so
// (docs/platforms.md, "Machine changes").
import * as pulumi from "@pulumi/pulumi";
import { strict as assert } from "node:assert";
import { clone, cloudCluster, mixedCluster } from "./fixtures";
import { runFoundation, StackValues } from "./harness";
import { RecordedResource, Recorder } from "./mocks";

const T = {
  vm: "proxmoxve:index/vmLegacy:VmLegacy",
  ociInstance: "oci:Core/instance:Instance",
  osInstance: "openstack:compute/instance:Instance",
  osPort: "openstack:networking/port:Port",
  apply: "talos:machine/configurationApply:ConfigurationApply",
  bootstrap: "talos:machine/bootstrap:Bootstrap",
};

/** Runs the program over a changed copy of `base`, collecting the warnings it logs. */
async function run(base: () => StackValues, change: (v: any) => void = () => undefined) {
  const values = clone(base());
  change(values);
  return runCollectingWarnings(values, new Recorder());
}

async function runCollectingWarnings(values: StackValues, recorder: Recorder) {
  const warnings: string[] = [];
  const warn = pulumi.log.warn;
  pulumi.log.warn = async (message: string) => {
    warnings.push(message);
  };
  try {
    const result = await runFoundation(values, { recorder });
    return { ...result, warnings };
  } finally {
    pulumi.log.warn = warn;
  }
}

/** The node a machine or config resource belongs to (`demo-cp-1-vm` → `cp-1`). */
const nodeOf = (r: RecordedResource) =>
  r.name.replace(/^demo-/, "").replace(/-(vm|instance|config|install)$/, "");

/** Each node's config push, by node name, with the URN of the machine it is replaced with. */
function pushesAndMachines(recorder: Recorder, machineType: string) {
  return recorder.ofType(machineType).map((machine) => {
    const apply = recorder.named(`demo-${nodeOf(machine)}-config`);
    return { node: nodeOf(machine), machine, apply };
  });
}

describe("machine changes: no unsequenced restart, resize or side-by-side replacement", () => {
  describe("Proxmox VMs", () => {
    let recorder: Recorder;
    before(async () => ({ recorder } = await run(mixedCluster)));

    it("never lets the provider restart a VM after an update", () => {
      const vms = recorder.ofType(T.vm);
      assert.equal(vms.length, 4);
      for (const vm of vms) assert.equal(vm.inputs.rebootAfterUpdate, false, vm.name);
    });

    it("deletes a VM before creating its replacement (same MAC, static IP and VM ID)", () => {
      for (const vm of recorder.ofType(T.vm)) {
        assert.equal(vm.options.deleteBeforeReplace, true, vm.name);
      }
    });

    it("replaces each VM node's config push with its VM, so a new VM is configured", () => {
      const pairs = pushesAndMachines(recorder, T.vm);
      assert.deepEqual(pairs.map((p) => p.node).sort(), ["cp-1", "cp-2", "cp-3", "worker-1"]);
      for (const { node, machine, apply } of pairs) {
        assert.ok(machine.urn.endsWith(`::demo-${node}-vm`), machine.urn);
        assert.deepEqual(apply.options.replaceWith, [machine.urn], node);
      }
    });

    it("leaves bare metal, which has no machine resource, without a replaceWith", async () => {
      const withInstall = await run(mixedCluster, (v) => {
        v.nodes[4].baremetal.maintenanceAddress = "192.0.2.200";
      });
      for (const name of ["demo-metal-1-config", "demo-metal-1-install"]) {
        assert.deepEqual(withInstall.recorder.named(name).options.replaceWith, [], name);
      }
    });

    it("never replaces the Bootstrap with the first control plane's machine", () => {
      const [bootstrap] = recorder.ofType(T.bootstrap);
      assert.deepEqual(bootstrap.options.replaceWith, []);
      assert.equal(bootstrap.options.deleteBeforeReplace, false);
    });

    it("a replaced VM (moved to another host): the VM changes, its config push does not, and replaceWith pushes it again", async () => {
      const moved = (
        await run(mixedCluster, (v) => {
          v.proxmox.hosts.push({ name: "pve4" });
          v.nodes[1].proxmox.host = "pve4"; // cp-2, from pve2
        })
      ).recorder;
      const vm = moved.named("demo-cp-2-vm");
      assert.equal(vm.inputs.nodeName, "pve4");
      assert.equal(recorder.named("demo-cp-2-vm").inputs.nodeName, "pve2");
      // Nothing in the push differs: without replaceWith the engine would leave it as it was and
      // the new VM would wait in maintenance mode.
      const push = moved.named("demo-cp-2-config");
      assert.deepEqual(push.inputs, recorder.named("demo-cp-2-config").inputs);
      assert.deepEqual(push.options.replaceWith, [vm.urn]);
      assert.equal(vm.options.deleteBeforeReplace, true);
      assert.equal(vm.options.protect, true, "a control plane's VM is replaced only unprotected");
    });

    it("a CPU and memory change on every VM: new sizes, no restart, nothing else changes", async () => {
      const bigger = (
        await run(mixedCluster, (v) => {
          for (const node of v.nodes) {
            if (node.platform !== "proxmox") continue;
            node.proxmox.cores = 8;
            node.proxmox.memory = 16384;
          }
        })
      ).recorder;
      for (const vm of bigger.ofType(T.vm)) {
        const before = recorder.named(vm.name);
        assert.deepEqual([vm.inputs.cpu.cores, vm.inputs.memory.dedicated], [8, 16384], vm.name);
        assert.equal(vm.inputs.rebootAfterUpdate, false, vm.name);
        assert.deepEqual(vm.options, before.options, `${vm.name}: the same options`);
        const sizeless = (inputs: Record<string, unknown>) => ({
          ...inputs,
          cpu: undefined,
          memory: undefined,
        });
        assert.deepEqual(
          sizeless(vm.inputs),
          sizeless(before.inputs),
          `${vm.name}: only CPU and memory differ`,
        );
      }
      // The machine configs do not depend on the VM's size: no node gets a push from it.
      for (const apply of bigger.ofType(T.apply)) {
        assert.deepEqual(apply.inputs, recorder.named(apply.name).inputs, apply.name);
      }
    });
  });

  describe("cloud instances", () => {
    let recorder: Recorder;
    let warnings: string[];
    before(async () => ({ recorder, warnings } = await run(cloudCluster)));

    it("refuses an OCI update that needs a reboot instead of rebooting (AVOID_DOWNTIME)", () => {
      const instances = recorder.ofType(T.ociInstance);
      assert.equal(instances.length, 3);
      for (const instance of instances) {
        assert.equal(instance.inputs.updateOperationConstraint, "AVOID_DOWNTIME", instance.name);
      }
    });

    it("deletes an OCI instance before its replacement (same name, hostname label, private IP)", () => {
      for (const instance of recorder.ofType(T.ociInstance)) {
        assert.equal(instance.options.deleteBeforeReplace, true, instance.name);
      }
    });

    it("never resizes an OpenStack instance in place: a new flavor is ignored until a replacement", () => {
      for (const instance of recorder.ofType(T.osInstance)) {
        assert.ok(instance.options.ignoreChanges.includes("flavorName"), instance.name);
        assert.ok(instance.options.ignoreChanges.includes("userData"), instance.name);
      }
    });

    it("deletes an OpenStack instance and port before their replacements (one server per port and volume)", () => {
      const resources = [...recorder.ofType(T.osInstance), ...recorder.ofType(T.osPort)];
      assert.equal(resources.length, 4);
      for (const r of resources) assert.equal(r.options.deleteBeforeReplace, true, r.name);
    });

    it("replaces each cloud node's config push with its instance", () => {
      const pairs = [
        ...pushesAndMachines(recorder, T.ociInstance),
        ...pushesAndMachines(recorder, T.osInstance),
      ];
      assert.deepEqual(pairs.map((p) => p.node).sort(), [
        "oci-1",
        "oci-2",
        "oci-3",
        "os-1",
        "os-2",
      ]);
      for (const { node, machine, apply } of pairs) {
        assert.ok(machine.urn.endsWith(`::demo-${node}-instance`), machine.urn);
        assert.deepEqual(apply.options.replaceWith, [machine.urn], node);
      }
    });

    it("says nothing about flavors while every instance runs the stack file's", () => {
      assert.deepEqual(
        warnings.filter((w) => w.includes("flavor")),
        [],
      );
    });

    it("warns when an instance still runs its old flavor, naming the replacement that applies it", async () => {
      const recorder = new Recorder();
      // The state's flavor, as the ignored change left it.
      recorder.behaviour.recordedState = { "demo-os-2-instance": { flavorName: "m1.small" } };
      const values: any = clone(cloudCluster());
      values.nodes[7].openstack.flavor = "m1.xlarge"; // os-2
      const { warnings } = await runCollectingWarnings(values, recorder);
      const urn = recorder.named("demo-os-2-instance").urn;
      assert.deepEqual(
        warnings.filter((w) => w.includes("flavor")),
        [
          `nodes[7].openstack.flavor: os-2 keeps running m1.small; up never resizes an instance in place ` +
            `(Nova's resize shuts it down, on every node at once); got m1.xlarge. Replace the instance, ` +
            `one node at a time: pulumi up --target-replace '${urn}' (it boots from its own volumes ` +
            `again; docs/platforms.md, "OpenStack instances")`,
        ],
      );
      assert.equal(recorder.named("demo-os-2-instance").inputs.flavorName, "m1.xlarge");
    });

    it("tells a control plane's replacement to unprotect its instance first", async () => {
      const recorder = new Recorder();
      recorder.behaviour.recordedState = { "demo-os-1-instance": { flavorName: "m1.large" } };
      const values: any = clone(cloudCluster());
      values.nodes = values.nodes.filter((n: any) => n.platform === "openstack");
      values.nodes[0].role = "controlplane";
      values.nodes[0].openstack.flavor = "m1.xlarge";
      delete values.proxmox;
      delete values.oci;
      const { warnings } = await runCollectingWarnings(values, recorder);
      const urn = recorder.named("demo-os-1-instance").urn;
      const [warning] = warnings.filter((w) => w.includes("flavor"));
      assert.ok(
        warning.includes(
          `pulumi state unprotect '${urn}', then pulumi up --target-replace '${urn}'`,
        ),
        warning,
      );
    });
  });
});
