// components/config/rules/nodes.ts: each node among the others (unique names, addresses, VM IDs,
// MACs), its platform's settings, its Proxmox host and memory, somewhere for workloads to run.
import { cloudCluster, itRefuses, mixedCluster, proxmoxCluster, RuleCase } from "../../fixtures";
import { itRefusesMutations } from "../arbitraryStack";

const cases: RuleCase[] = [
  {
    rule: "a worker whose role is misspelt, without a follow-on 'no workers' problem",
    base: mixedCluster,
    broken: (v) => {
      v.cluster.allowSchedulingOnControlPlanes = false;
      v.nodes[3].role = "wroker";
      v.nodes[4].role = "wroker";
    },
    problems: [
      'nodes[3].role: expected one of controlplane, worker; got "wroker"',
      'nodes[4].role: expected one of controlplane, worker; got "wroker"',
    ],
    valid: (v) => (v.cluster.allowSchedulingOnControlPlanes = false),
  },
  {
    rule: "a maintenance address that is another node's address",
    base: mixedCluster,
    broken: (v) => (v.nodes[4].baremetal.maintenanceAddress = "192.0.2.21"),
    problems: [
      'nodes[4].baremetal.maintenanceAddress: address 192.0.2.21 is already used by nodes[3].network.addresses[0], so the first push would configure that machine; got "192.0.2.21". Give the address this machine answers on in maintenance mode (its DHCP or SLAAC address)',
    ],
    // Its own configured address is the default anyway.
    valid: (v) => (v.nodes[4].baremetal.maintenanceAddress = "192.0.2.31"),
  },
  {
    rule: "two bare-metal nodes sharing a maintenance address",
    base: mixedCluster,
    broken: (v) => {
      v.nodes[4].baremetal.maintenanceAddress = "2001:db8::99";
      v.nodes.push({
        ...JSON.parse(JSON.stringify(v.nodes[4])),
        name: "metal-2",
        network: { ...v.nodes[4].network, addresses: ["192.0.2.32/24", "2001:db8::32/64"] },
        baremetal: { address: "2001:db8::32", maintenanceAddress: "2001:db8:0::99" },
      });
    },
    problems: [
      'nodes[5].baremetal.maintenanceAddress: address 2001:db8::99 is already used by nodes[4].baremetal.maintenanceAddress, so the first push would configure that machine; got "2001:db8:0::99". Give the address this machine answers on in maintenance mode (its DHCP or SLAAC address)',
    ],
  },
  {
    rule: "an OpenStack fixed IP without openstack.subnetId",
    base: cloudCluster,
    broken: (v) => delete v.openstack.subnetId,
    problems: [
      "openstack.subnetId: required because nodes[6] sets openstack.fixedIp, and a fixed address is allocated on a named subnet. Give the ID of the network's IPv4 subnet, or leave openstack.fixedIp out (DHCP)",
    ],
    valid: (v) => {
      delete v.openstack.subnetId;
      for (const node of v.nodes) if (node.platform === "openstack") delete node.openstack.fixedIp;
    },
  },
  {
    rule: "an OpenStack fixed IPv6 without openstack.subnet6Id",
    base: cloudCluster,
    broken: (v) => (v.nodes[6].openstack.fixedIp6 = "2001:db8:6::21"),
    problems: [
      "openstack.subnet6Id: required because nodes[6] sets openstack.fixedIp6, and a fixed address is allocated on a named subnet. Give the ID of the network's IPv6 subnet, or leave openstack.fixedIp6 out (DHCP)",
    ],
    valid: (v) => {
      v.nodes[6].openstack.fixedIp6 = "2001:db8:6::21";
      v.openstack.subnet6Id = "subnet6-example";
    },
  },
  {
    rule: "two nodes sharing a name",
    base: proxmoxCluster,
    broken: (v) => (v.nodes[2].name = "cp-1"),
    problems: ["nodes[2].name: name cp-1 is already used by nodes[0]. Node names must be unique"],
  },
  {
    rule: "two nodes sharing an IP",
    base: proxmoxCluster,
    broken: (v) => (v.nodes[1].network.addresses = ["192.0.2.11/24"]),
    problems: [
      "nodes[1].network.addresses[0]: address 192.0.2.11 is already used by nodes[0].network.addresses[0]. Each address belongs to one node",
    ],
  },
  {
    rule: "two VMs sharing a VM ID",
    base: proxmoxCluster,
    broken: (v) => (v.nodes[2].proxmox.vmId = 101),
    problems: [
      "nodes[2].proxmox.vmId: VM ID 101 is already used by nodes[0]. Choose an unused VM ID",
    ],
  },
  {
    rule: "two spellings of one IPv6 address",
    base: mixedCluster,
    broken: (v) => (v.nodes[3].network.addresses = ["192.0.2.21/24", "2001:DB8:0::31/64"]),
    problems: [
      "nodes[4].network.addresses[1]: address 2001:db8::31 is already used by nodes[3].network.addresses[1]. Each address belongs to one node",
      "nodes[4].baremetal.address: address 2001:db8::31 is already used by nodes[3].network.addresses[1]. Each address belongs to one node",
    ],
  },
  {
    rule: "two NICs sharing a MAC",
    base: mixedCluster,
    broken: (v) => (v.nodes[1].network.mac = "bc:24:11:00:00:21"),
    problems: [
      "nodes[3].network.mac: MAC bc:24:11:00:00:21 is already used by nodes[1]. Each NIC needs its own MAC",
    ],
  },
  {
    rule: "two cloud nodes sharing a private IP",
    base: cloudCluster,
    broken: (v) => (v.nodes[4].oci.privateIp = "198.51.100.21"),
    problems: [
      "nodes[4].oci.privateIp: address 198.51.100.21 is already used by nodes[3].oci.privateIp. Each address belongs to one node",
    ],
  },
  {
    rule: "Proxmox nodes without Proxmox settings",
    base: proxmoxCluster,
    broken: (v) => delete v.proxmox,
    problems: [
      "proxmox: required because nodes[0] runs on Proxmox. Add proxmox.endpoint and proxmox.hosts",
    ],
  },
  {
    rule: "OCI nodes without OCI settings",
    base: cloudCluster,
    broken: (v) => delete v.oci,
    problems: [
      "oci: required because nodes[3] runs on OCI. Add oci.region, oci.compartmentId, oci.subnetId and oci.image",
    ],
  },
  {
    rule: "OpenStack nodes without OpenStack settings",
    base: cloudCluster,
    broken: (v) => delete v.openstack,
    problems: [
      "openstack: required because nodes[6] runs on OpenStack. Add openstack.networkId and openstack.flavor",
    ],
  },
  {
    rule: "a Proxmox host that is not declared",
    base: proxmoxCluster,
    broken: (v) => (v.nodes[1].proxmox.host = "pve9"),
    problems: [
      'nodes[1].proxmox.host: is not declared in proxmox.hosts; got "pve9". Declared: pve1, pve2, pve3',
    ],
  },
  {
    rule: "a Proxmox host declared twice",
    base: proxmoxCluster,
    broken: (v) => v.proxmox.hosts.push({ name: "pve1" }),
    problems: ["proxmox.hosts[3].name: host pve1 is listed twice"],
  },
  {
    rule: "a control plane with too little memory",
    base: proxmoxCluster,
    broken: (v) => (v.nodes[0].proxmox.memory = 1024),
    problems: ["nodes[0].proxmox.memory: a control plane needs at least 2048 MiB; got 1024"],
  },
  {
    rule: "no workers and no scheduling on control planes",
    base: proxmoxCluster,
    broken: (v) => (v.cluster.allowSchedulingOnControlPlanes = false),
    problems: [
      "cluster.allowSchedulingOnControlPlanes: is false, but the cluster has no workers, so no workload could run anywhere; got false. Add workers, or leave the key out (without workers it defaults to true)",
    ],
    valid: (v) => {
      v.cluster.allowSchedulingOnControlPlanes = false;
      v.nodes.push({
        name: "worker-1",
        role: "worker",
        platform: "proxmox",
        network: { addresses: ["192.0.2.21/24"], gateway: "192.0.2.1" },
        proxmox: { host: "pve1", vmId: 121 },
      });
    },
  },
];

describe("rules: nodes", () => {
  itRefuses(cases);

  itRefusesMutations({
    "no workers and no scheduling on control planes": (v) => {
      if (v.nodes.some((n: any) => n.role === "worker")) return undefined;
      v.cluster.allowSchedulingOnControlPlanes = false;
      return "cluster.allowSchedulingOnControlPlanes";
    },
  });
});
