// components/config/normalize.ts: the defaults a valid stack file gets.
import { strict as assert } from "node:assert";
import { validatePlatformConfig } from "../../components/config/validate";
import type { NodeSpec } from "../../components/spec/types";
import { cloudCluster, mixedCluster, proxmoxCluster } from "../fixtures";

describe("stack config defaults", () => {
  const valid = () => validatePlatformConfig(mixedCluster(), "Pulumi.test.yaml");

  it("fills VM sizing and placement defaults", () => {
    const spec = validatePlatformConfig(proxmoxCluster(), "Pulumi.test.yaml");
    const node = spec.nodes[0];
    assert.equal(node.platform, "proxmox");
    if (node.platform !== "proxmox") return;
    assert.deepEqual(node.proxmox, {
      host: "pve1",
      vmId: 101,
      cores: 2,
      memory: 4096,
      diskSize: 32,
      datastore: "local-lvm",
      bridge: "vmbr0",
      vlan: 20,
      cpuType: "x86-64-v2-AES",
    });
    assert.equal(node.installDisk, "/dev/sda");
    assert.equal(node.talosAddress, "192.0.2.11");
  });

  it("derives a stable MAC for VMs without one and lowercases given ones", () => {
    const macOf = (node: NodeSpec) => (node.platform === "proxmox" ? node.network.mac : undefined);
    const first = macOf(validatePlatformConfig(proxmoxCluster(), "Pulumi.test.yaml").nodes[0]);
    const again = macOf(validatePlatformConfig(proxmoxCluster(), "Pulumi.test.yaml").nodes[0]);
    assert.match(first!, /^02(:[0-9a-f]{2}){5}$/);
    assert.equal(first, again);
    assert.equal(macOf(valid().nodes[3]), "bc:24:11:00:00:21");
  });

  it("normalizes versions and builds the endpoint URL", () => {
    const { cluster } = valid();
    assert.equal(cluster.talosVersion, "v1.13.9");
    assert.equal(cluster.kubernetesVersion, "1.36.3");
    assert.equal(cluster.configContract, "v1.13.9");
    assert.equal(cluster.endpointUrl, "https://api.demo.example.net:6443");
  });

  it("uses the VIP as endpoint when none is given, bracketing IPv6", () => {
    const values: any = proxmoxCluster();
    delete values.cluster.endpoint;
    assert.equal(
      validatePlatformConfig(values, "x").cluster.endpointUrl,
      "https://192.0.2.10:6443",
    );
    values.cluster.endpoint = "2001:db8::10";
    assert.equal(
      validatePlatformConfig(values, "x").cluster.endpointUrl,
      "https://[2001:db8::10]:6443",
    );
  });

  it("schedules workloads on control planes only when there are no workers", () => {
    assert.equal(
      validatePlatformConfig(proxmoxCluster(), "x").cluster.allowSchedulingOnControlPlanes,
      true,
    );
    assert.equal(valid().cluster.allowSchedulingOnControlPlanes, false);
  });

  it("protects control planes, checks health with a 10m timeout, stages changes that need a reboot and keeps flannel by default", () => {
    const { cluster } = valid();
    assert.equal(cluster.protectControlPlanes, true);
    assert.deepEqual(cluster.health, { enabled: true, timeout: "10m" });
    assert.equal(cluster.applyMode, "staged_if_needing_reboot");
    assert.equal(cluster.rollout.maxUnavailableWorkers, 1);
    assert.equal(cluster.network.cni, "flannel");
    assert.equal(cluster.network.kubeProxy, true);
  });

  it("resets bare-metal nodes on removal unless told not to", () => {
    const node = valid().nodes[4];
    assert.equal(node.platform === "baremetal" && node.baremetal.resetOnDestroy, true);
  });

  it("turns inline patches into YAML", () => {
    const values: any = proxmoxCluster();
    values.cluster.patches = { worker: [{ machine: { sysctls: { "vm.nr_hugepages": "64" } } }] };
    assert.deepEqual(validatePlatformConfig(values, "x").cluster.patches.worker, [
      'machine:\n  sysctls:\n    vm.nr_hugepages: "64"\n',
    ]);
  });

  it("defaults each node's site to its platform, and a cloud's to its platform and region", () => {
    const spec = validatePlatformConfig(cloudCluster(), "x");
    assert.deepEqual(Object.keys(spec.cluster.sites), [
      "proxmox",
      "oci-eu-frankfurt-1",
      "openstack",
    ]);
    assert.deepEqual(spec.cluster.sites.proxmox.controlPlaneCidrs, [
      "192.0.2.11/32",
      "192.0.2.12/32",
      "192.0.2.13/32",
    ]);
    assert.equal(spec.cluster.network.connectivity, "routed");
  });
});
