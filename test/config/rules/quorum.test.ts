// components/config/rules/quorum.ts: etcd's quorum (control plane count, failure domains, Nova's
// anti-affinity, apply modes that reboot too many nodes at once).
import { strict as assert } from "node:assert";
import { maxPerFailureDomain } from "../../../components/config/rules/quorum";
import {
  clone,
  cloudCluster,
  itRefuses,
  problemsOf,
  proxmoxCluster,
  RuleCase,
} from "../../fixtures";
import type { StackValues } from "../../harness";
import { itRefusesMutations } from "../arbitraryStack";

/** Three OCI control planes in one listed availability domain, spread over the fault domains. */
function ociControlPlanes(): StackValues {
  const values: any = cloudCluster();
  delete values.cluster.vip;
  values.oci.availabilityDomains = ["Uocm:EU-FRANKFURT-1-AD-1"];
  values.nodes = [1, 2, 3].map((i) => ({
    name: `oci-cp-${i}`,
    role: "controlplane",
    platform: "oci",
    oci: { privateIp: `198.51.100.${10 + i}` },
  }));
  delete values.proxmox;
  delete values.openstack;
  return values;
}

/** What Nova's anti-affinity makes of a second control plane pinned to compute-1. */
const ANTI_AFFINITY_COMPUTE_1 = (index: number) =>
  `nodes[${index}].openstack.availabilityZone: pins a second control plane to OpenStack host compute-1, where nodes[0] is: anti-affinity forbids it; got "nova:compute-1". Pin it to another host, or set openstack.controlPlaneServerGroup: soft-anti-affinity`;

/** Three OpenStack control planes pinned to compute hosts (`zone:host`). */
function openstackControlPlanes(): StackValues {
  const values: any = cloudCluster();
  delete values.cluster.vip;
  values.nodes = [1, 2, 3].map((i) => ({
    name: `os-cp-${i}`,
    role: "controlplane",
    platform: "openstack",
    openstack: { availabilityZone: `nova:compute-${i}` },
  }));
  delete values.proxmox;
  delete values.oci;
  return values;
}

/** `count` Proxmox control planes, each on a host of its own. */
function controlPlanesOnOwnHosts(v: any, count: number): void {
  const ids = Array.from({ length: count }, (_, i) => i + 1);
  v.proxmox.hosts = ids.map((i) => ({ name: `pve${i}` }));
  v.nodes = ids.map((i) => ({
    name: `cp-${i}`,
    role: "controlplane",
    platform: "proxmox",
    network: { addresses: [`192.0.2.${10 + i}/24`], gateway: "192.0.2.1" },
    proxmox: { host: `pve${i}`, vmId: 100 + i },
  }));
}

const cases: RuleCase[] = [
  {
    rule: "two of three control planes on one Proxmox host",
    base: proxmoxCluster,
    broken: (v) => (v.nodes[2].proxmox.host = "pve1"),
    problems: [
      "nodes[2].proxmox.host: puts 2 of the 3 control planes (nodes[0], nodes[2]) on Proxmox host pve1, whose loss would lose etcd quorum. Move one elsewhere: at most 1 of 3 may share a failure domain",
    ],
    // Five control planes may put two on one host.
    valid: (v) => {
      v.nodes.push(
        ...[4, 5].map((i) => ({
          name: `cp-${i}`,
          role: "controlplane",
          platform: "proxmox",
          network: { addresses: [`192.0.2.1${i}/24`], gateway: "192.0.2.1" },
          proxmox: { host: `pve${i - 3}`, vmId: 100 + i },
        })),
      );
    },
  },
  {
    rule: "two of three control planes in one OCI fault domain",
    base: ociControlPlanes,
    broken: (v) => (v.nodes[1].oci.faultDomain = "FAULT-DOMAIN-1"),
    problems: [
      "nodes[1].oci.faultDomain: puts 2 of the 3 control planes (nodes[0], nodes[1]) on OCI fault domain FAULT-DOMAIN-1 of Uocm:EU-FRANKFURT-1-AD-1, whose loss would lose etcd quorum. Move one elsewhere: at most 1 of 3 may share a failure domain",
    ],
    valid: (v) => (v.nodes[1].oci.faultDomain = "FAULT-DOMAIN-2"),
  },
  {
    rule: "two of three control planes on one OpenStack compute host",
    base: openstackControlPlanes,
    broken: (v) => (v.nodes[2].openstack.availabilityZone = "nova:compute-1"),
    problems: [
      "nodes[2].openstack.availabilityZone: puts 2 of the 3 control planes (nodes[0], nodes[2]) on OpenStack host compute-1, whose loss would lose etcd quorum. Move one elsewhere: at most 1 of 3 may share a failure domain",
      ANTI_AFFINITY_COMPUTE_1(2),
    ],
    valid: (v) => (v.nodes[2].openstack.availabilityZone = "nova"),
  },
  {
    rule: "two OpenStack control planes pinned to one host of their anti-affinity server group",
    base: () => {
      const values: any = openstackControlPlanes();
      values.nodes.push(
        ...[4, 5].map((i) => ({ ...values.nodes[0], name: `os-cp-${i}`, openstack: {} })),
      );
      return values;
    },
    // 2 of 5 on one host keeps quorum, but Nova's anti-affinity refuses to schedule the second.
    broken: (v) => (v.nodes[1].openstack.availabilityZone = "nova:compute-1"),
    problems: [ANTI_AFFINITY_COMPUTE_1(1)],
    valid: (v) => {
      v.nodes[1].openstack.availabilityZone = "nova:compute-1";
      v.openstack.controlPlaneServerGroup = "soft-anti-affinity";
    },
  },
  {
    rule: "an even number of control planes",
    base: proxmoxCluster,
    broken: (v) => v.nodes.pop(),
    problems: ["nodes: etcd needs an odd number of control planes; got 2. Use 1, 3 or 5"],
  },
  {
    rule: "seven control planes (an odd count, but not 1, 3 or 5)",
    base: proxmoxCluster,
    broken: (v) => controlPlanesOnOwnHosts(v, 7),
    problems: [
      "nodes: more than 5 control planes is not supported; got 7. Use 1, 3 or 5 control planes, and run the rest as workers (role: worker)",
    ],
    valid: (v) => controlPlanesOnOwnHosts(v, 5),
  },
  {
    rule: "no control plane",
    base: proxmoxCluster,
    broken: (v) => v.nodes.forEach((n: any) => (n.role = "worker")),
    problems: ["nodes: a cluster needs at least one control plane; got 0. Use 1, 3 or 5"],
  },
  {
    rule: "no nodes",
    base: proxmoxCluster,
    broken: (v) => (v.nodes = []),
    problems: ["nodes: the cluster has no nodes. List 1, 3 or 5 control planes and any workers"],
  },
  {
    rule: "staged, which never leaves maintenance mode on a new node",
    base: proxmoxCluster,
    broken: (v) => (v.cluster.applyMode = "staged"),
    problems: [
      'cluster.applyMode: never takes effect on a new node, which keeps a staged config in maintenance mode; got "staged". Use staged_if_needing_reboot, the default (docs/platforms.md, "Config changes without quorum loss")',
    ],
  },
  {
    rule: "auto with three control planes",
    base: proxmoxCluster,
    broken: (v) => (v.cluster.applyMode = "auto"),
    problems: [
      'cluster.applyMode: reboots every node a change needs at once: here up to 3 control planes (etcd loses quorum); got "auto". Use staged_if_needing_reboot (the default) and `npm run platform -- rollout <env>`, or no_reboot',
    ],
  },
  {
    rule: "reboot with more workers than the rollout allows",
    base: proxmoxCluster,
    broken: (v) => {
      v.cluster.applyMode = "reboot";
      v.nodes.splice(1, 2);
      v.nodes.push({ ...clone(v.nodes[0]), name: "w-1", role: "worker" });
      v.nodes[1].proxmox = { host: "pve2", vmId: 201 };
      v.nodes[1].network = { addresses: ["192.0.2.41/24"] };
      v.nodes.push({ ...clone(v.nodes[1]), name: "w-2" });
      v.nodes[2].proxmox = { host: "pve3", vmId: 202 };
      v.nodes[2].network = { addresses: ["192.0.2.42/24"] };
    },
    problems: [
      'cluster.applyMode: reboots every node a change needs at once: here up to 2 workers (cluster.rollout.maxUnavailableWorkers is 1); got "reboot". Use staged_if_needing_reboot (the default) and `npm run platform -- rollout <env>`, or no_reboot',
    ],
  },
  {
    rule: "reboot on Talos 1.14, which removed the mode (a configured node answers Unimplemented)",
    base: proxmoxCluster,
    broken: (v) => {
      v.cluster.applyMode = "reboot";
      v.cluster.talosVersion = "v1.14.1";
      v.cluster.configContract = "v1.13.9";
      v.nodes.splice(1);
    },
    problems: [
      'cluster.applyMode: is a mode Talos 1.14 removed; got "reboot". Use staged_if_needing_reboot (the default) and `npm run platform -- rollout <env>`',
    ],
    // On Talos 1.14 `auto` is no-reboot: it never reboots anything, whatever the cluster's size.
    valid: (v) => {
      v.cluster.applyMode = "auto";
      v.cluster.talosVersion = "v1.14.1";
      v.cluster.configContract = "v1.13.9";
    },
  },
];

describe("rules: quorum", () => {
  itRefuses(cases);

  it("allows auto where no limit can be broken, and no_reboot anywhere", () => {
    assert.deepEqual(
      problemsOf(proxmoxCluster, (v) => {
        v.cluster.applyMode = "auto";
        v.nodes.splice(1);
      }),
      [],
    );
    assert.deepEqual(
      problemsOf(proxmoxCluster, (v) => (v.cluster.applyMode = "no_reboot")),
      [],
    );
  });

  itRefusesMutations({
    "more control planes on one Proxmox host than quorum allows": (v) => {
      const cps = v.nodes
        .map((n: any, i: number) =>
          n.role === "controlplane" && n.platform === "proxmox" ? i : -1,
        )
        .filter((i: number) => i >= 0);
      const total = v.nodes.filter((n: any) => n.role === "controlplane").length;
      const allowed = maxPerFailureDomain(total);
      if (total < 3 || cps.length < allowed + 1) return undefined;
      const moved = cps.slice(1, allowed + 1);
      for (const i of moved) v.nodes[i].proxmox.host = v.nodes[cps[0]].proxmox.host;
      return `nodes[${moved[moved.length - 1]}].proxmox.host`;
    },
  });
});
