// components/config/rules/vip.ts: the layer-2 VIP (its address unclaimed, carried by every control
// plane, at one site, neither a gateway nor a subnet's network or broadcast address).
import { strict as assert } from "node:assert";
import {
  cloudCluster,
  itRefuses,
  mixedCluster,
  problemsOf,
  proxmoxCluster,
  RuleCase,
} from "../../fixtures";
import { itRefusesMutations } from "../arbitraryStack";

const cases: RuleCase[] = [
  {
    rule: "a node using the VIP as its address",
    base: proxmoxCluster,
    broken: (v) => (v.nodes[0].network.addresses = ["192.0.2.10/24"]),
    problems: [
      "nodes[0].network.addresses[0]: address 192.0.2.10 is already used by cluster.vip. Each address belongs to one node",
    ],
  },
  {
    rule: "a VIP outside the control planes' subnets",
    base: proxmoxCluster,
    broken: (v) => (v.cluster.vip = "198.51.100.10"),
    problems: [
      'cluster.vip: is not in the subnet of every control plane; got "198.51.100.10". A layer-2 VIP must share a subnet with every control plane; nodes[0] has 192.0.2.11/24; nodes[1] has 192.0.2.12/24; nodes[2] has 192.0.2.13/24',
    ],
  },
  {
    rule: "a bare-metal control plane without a network when a VIP is set",
    base: mixedCluster,
    broken: (v) => {
      v.nodes[4].role = "controlplane";
      v.nodes[3].role = "controlplane";
      delete v.nodes[4].network;
    },
    problems: [
      "nodes[4].network: required on control planes when cluster.vip is set (the VIP needs a link)",
      'nodes[4].baremetal.address: is not an IPv4 address; got "2001:db8::31". Each kubelet needs a node IP of the first service subnet\'s family, IPv4. Give network.addresses with one',
    ],
  },
  {
    rule: "a VIP with an OCI control plane",
    base: cloudCluster,
    broken: (v) => (v.nodes[3].role = "controlplane") && v.nodes.splice(2, 1),
    problems: [
      "cluster.vip: cannot float between OCI instances such as nodes[2]. OCI networks do not carry layer-2 VIPs: use cluster.endpoint with a DNS name or a network load balancer",
    ],
  },
  {
    rule: "a VIP with an OpenStack control plane but no subnet for its port",
    base: cloudCluster,
    broken: (v) => {
      v.nodes[6].role = "controlplane";
      v.nodes.splice(2, 1);
      delete v.openstack.subnetId;
      delete v.nodes[5].openstack.fixedIp;
      delete v.nodes[6].openstack.fixedIp;
    },
    problems: [
      "openstack.subnetId: required for the VIP port, because control plane nodes[5] runs on OpenStack and cluster.vip is set",
      'cluster.vip: a layer-2 VIP cannot span sites, and the control planes are at proxmox, openstack; got "192.0.2.10". Drop it and give cluster.endpoint a DNS name or a load balancer (docs/platforms.md, Sites)',
    ],
  },
  {
    rule: "a VIP shared by control planes at two sites",
    base: mixedCluster,
    broken: (v) => {
      v.nodes[4].site = "edge";
      v.nodes[4].role = "controlplane";
      v.nodes[3].role = "controlplane";
      v.cluster.network.connectivity = "routed";
    },
    problems: [
      'cluster.vip: a layer-2 VIP cannot span sites, and the control planes are at proxmox, edge; got "192.0.2.10". Drop it and give cluster.endpoint a DNS name or a load balancer (docs/platforms.md, Sites)',
    ],
  },
  {
    rule: "a VIP that is the gateway",
    base: proxmoxCluster,
    broken: (v) => (v.cluster.vip = "192.0.2.1"),
    problems: [
      'cluster.vip: is the gateway of nodes[0] (network.gateway); got "192.0.2.1". The VIP needs an unused address of the control planes\' subnet',
    ],
    valid: (v) => (v.cluster.vip = "192.0.2.2"),
  },
  {
    rule: "a VIP that is the subnet's broadcast address",
    base: proxmoxCluster,
    broken: (v) => (v.cluster.vip = "192.0.2.255"),
    problems: [
      'cluster.vip: is the broadcast address of subnet 192.0.2.0/24 (nodes[0]); got "192.0.2.255". The VIP needs an unused host address of the control planes\' subnet',
    ],
    valid: (v) => (v.cluster.vip = "192.0.2.254"),
  },
];

describe("rules: vip", () => {
  itRefuses(cases);

  it("reports a VIP outside the control planes' subnets once, not once per control plane", () => {
    const problems = problemsOf(proxmoxCluster, (v) => (v.cluster.vip = "198.51.100.10"));
    assert.equal(problems.filter((p) => p.startsWith("cluster.vip:")).length, 1);
  });

  itRefusesMutations({
    "a VIP that is the gateway": (v) => {
      if (!v.cluster.vip) return undefined;
      v.cluster.vip = "192.0.2.1";
      return "cluster.vip";
    },
  });
});
