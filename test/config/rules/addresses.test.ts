// components/config/rules/addresses.ts: node addresses that cannot work (networks, gateways,
// network and broadcast addresses, the primary service family, overlapping ranges, MACs, a public
// maintenance address).
import { strict as assert } from "node:assert";
import { itRefuses, mixedCluster, proxmoxCluster, RuleCase } from "../../fixtures";
import { itRefusesMutations, staticIndexes } from "../arbitraryStack";
import { isPublicAddress } from "../../../components/config/rules/addresses";

const PUBLIC =
  "is a public address, and the first push goes there unauthenticated (Talos maintenance mode): anyone who reaches it first can claim the node, and anyone in the path reads its machine config with the cluster's keys";
const PUBLIC_HINT =
  "Push the first config over a private network (the node's LAN address as baremetal.maintenanceAddress), or set nodes[4].baremetal.allowPublicMaintenance: true to accept the risk";

const cases: RuleCase[] = [
  {
    rule: "Proxmox nodes without a network",
    base: proxmoxCluster,
    broken: (v) => delete v.nodes[0].network,
    problems: [
      "nodes[0].network: required for Proxmox nodes. Give network.addresses (the VM's static address, e.g. 192.0.2.11/24) and network.gateway",
    ],
  },
  {
    rule: "a gateway outside the node's subnet",
    base: proxmoxCluster,
    broken: (v) => (v.nodes[0].network.gateway = "198.51.100.1"),
    problems: [
      'nodes[0].network.gateway: is outside every IPv4 subnet of the node; got "198.51.100.1". The node\'s addresses are 192.0.2.11/24',
    ],
  },
  {
    rule: "a bare-metal network with neither MAC nor interface",
    base: mixedCluster,
    broken: (v) => delete v.nodes[4].network.interface,
    problems: [
      "nodes[4].network: name the link to configure with mac or interface. mac selects the NIC by hardware address; interface takes a name such as enp1s0",
    ],
  },
  {
    rule: "a bare-metal address the node will not keep",
    base: mixedCluster,
    broken: (v) => (v.nodes[4].baremetal.address = "2001:db8::99"),
    problems: [
      'nodes[4].baremetal.address: is not one of network.addresses, so the node would stop answering there once configured; got "2001:db8::99". List it in network.addresses, or use the static address the node will keep',
    ],
  },
  {
    rule: "a gateway that is the node's own address",
    base: proxmoxCluster,
    broken: (v) => (v.nodes[1].network.gateway = "192.0.2.12"),
    problems: [
      "nodes[1].network.gateway: is the node's own address; a gateway is the router the node sends through; got \"192.0.2.12\". Use the router's address on the node's subnet",
    ],
    valid: (v) => (v.nodes[1].network.gateway = "192.0.2.254"),
  },
  {
    rule: "a node address that is its subnet's network address",
    base: proxmoxCluster,
    broken: (v) => {
      v.nodes[2].network.addresses = ["192.0.2.128/25"];
      v.nodes[2].network.gateway = "192.0.2.129";
    },
    problems: [
      'cluster.vip: is not in the subnet of every control plane; got "192.0.2.10". A layer-2 VIP must share a subnet with every control plane; nodes[2] has 192.0.2.128/25',
      'nodes[2].network.addresses[0]: is the network address of its subnet 192.0.2.128/25, not a host address; got "192.0.2.128/25". Give the node an address inside the subnet, e.g. the network address + 11',
    ],
    valid: (v) => (v.nodes[2].network.addresses = ["192.0.2.13/25"]),
  },
  {
    rule: "a pod subnet overlapping the nodes' network",
    base: proxmoxCluster,
    broken: (v) => (v.cluster.network.podSubnets = ["192.0.0.0/16"]),
    problems: [
      'cluster.network.podSubnets[0]: overlaps the node network of nodes[0].network.addresses[0] (192.0.2.11/24); got "192.0.0.0/16". Pod and service ranges must be separate from the networks the nodes are on',
    ],
    valid: (v) => (v.cluster.network.podSubnets = ["10.244.0.0/16"]),
  },
  {
    rule: "pod and service subnets that overlap",
    base: proxmoxCluster,
    broken: (v) => {
      v.cluster.network.podSubnets = ["10.200.0.0/16"];
      v.cluster.network.serviceSubnets = ["10.200.128.0/20"];
    },
    problems: [
      'cluster.network.serviceSubnets[0]: overlaps cluster.network.podSubnets (10.200.0.0/16); got "10.200.128.0/20". Pods and services need separate ranges',
    ],
    valid: (v) => {
      v.cluster.network.podSubnets = ["10.200.0.0/16"];
      v.cluster.network.serviceSubnets = ["10.201.0.0/20"];
    },
  },
  {
    rule: "two IPv4 service subnets",
    base: proxmoxCluster,
    broken: (v) => (v.cluster.network.serviceSubnets = ["10.96.0.0/16", "10.97.0.0/16"]),
    problems: [
      'cluster.network.serviceSubnets[1]: is a second IPv4 service subnet (after cluster.network.serviceSubnets[0]); Kubernetes takes one service range per IP family; got "10.97.0.0/16". Keep one IPv4 and at most one IPv6 service subnet (the first one\'s family is primary); widen that one if it is too small',
    ],
    valid: (v) => (v.cluster.network.serviceSubnets = ["10.96.0.0/16", "fd00:96::/112"]),
  },
  {
    rule: "overlapping pod subnets in one list",
    base: proxmoxCluster,
    broken: (v) => (v.cluster.network.podSubnets = ["10.244.0.0/16", "10.244.128.0/17"]),
    problems: [
      'cluster.network.podSubnets[1]: overlaps cluster.network.podSubnets[0] (10.244.0.0/16); got "10.244.128.0/17". List separate ranges, one per IP family',
    ],
    valid: (v) => (v.cluster.network.podSubnets = ["10.244.0.0/16", "fd00:244::/56"]),
  },
  {
    rule: "overlapping service subnets in one list",
    base: proxmoxCluster,
    broken: (v) => (v.cluster.network.serviceSubnets = ["10.96.0.0/12", "10.96.0.0/16"]),
    problems: [
      'cluster.network.serviceSubnets[1]: overlaps cluster.network.serviceSubnets[0] (10.96.0.0/12); got "10.96.0.0/16". List separate ranges, one per IP family',
    ],
  },
  {
    rule: "nodes inside Talos' default pod subnet",
    base: proxmoxCluster,
    broken: (v) => {
      v.nodes.forEach((node: any, i: number) => {
        node.network = { addresses: [`10.244.0.${11 + i}/24`], gateway: "10.244.0.1" };
      });
      v.cluster.vip = "10.244.0.10";
    },
    problems: [
      'nodes[0].network.addresses[0]: overlaps Talos\' default pod subnet 10.244.0.0/16; got "10.244.0.11/24". Set cluster.network.podSubnets to a range the nodes do not use',
    ],
    valid: (v) => {
      v.nodes.forEach((node: any, i: number) => {
        node.network = { addresses: [`10.244.0.${11 + i}/24`], gateway: "10.244.0.1" };
      });
      v.cluster.vip = "10.244.0.10";
      v.cluster.network.podSubnets = ["10.128.0.0/16"];
    },
  },
  {
    rule: "an IPv6 gateway outside the node's subnets (a link-local one is fine)",
    base: mixedCluster,
    broken: (v) => (v.nodes[4].network.gateway6 = "2001:db8:ffff::1"),
    problems: [
      'nodes[4].network.gateway6: is outside every IPv6 subnet of the node; got "2001:db8:ffff::1". The node\'s addresses are 192.0.2.31/24, 2001:db8::31/64',
    ],
    valid: (v) => (v.nodes[4].network.gateway6 = "fe80::1"),
  },
  {
    rule: "a multicast MAC",
    base: mixedCluster,
    broken: (v) => (v.nodes[3].network.mac = "01:00:5e:00:00:21"),
    problems: [
      'nodes[3].network.mac: is a multicast MAC (the first byte is odd); a NIC needs a unicast MAC; got "01:00:5e:00:00:21". Use the NIC\'s own MAC, or a locally administered one such as 02:00:00:00:00:11',
    ],
    valid: (v) => (v.nodes[3].network.mac = "02:00:5e:00:00:21"),
  },
  {
    rule: "a node without an address of the service family",
    base: mixedCluster,
    broken: (v) => {
      v.nodes[4].network.addresses = ["2001:db8::31/64"];
      delete v.nodes[4].network.gateway;
    },
    problems: [
      'nodes[4].network.addresses: has no IPv4 address; got ["2001:db8::31/64"]. Each kubelet needs a node IP of the first service subnet\'s family, IPv4',
    ],
  },
];

// A public maintenance address: the same problem each time, but for its key and value.
const publicCaseList: RuleCase[] = [
  {
    rule: "a public IPv6 maintenance address without allowPublicMaintenance",
    base: mixedCluster,
    broken: (v) => (v.nodes[4].baremetal.maintenanceAddress = "2a01:4f8:c0c:1234::31"),
    problems: [`nodes[4].baremetal.maintenanceAddress: %P; got "2a01:4f8:c0c:1234::31". %H`],
    valid: (v) => {
      v.nodes[4].baremetal.maintenanceAddress = "2a01:4f8:c0c:1234::31";
      v.nodes[4].baremetal.allowPublicMaintenance = true;
    },
  },
  {
    rule: "a public IPv4 maintenance address (the carrier-shared 100.64.0.0/10 counts as public)",
    base: mixedCluster,
    broken: (v) => (v.nodes[4].baremetal.maintenanceAddress = "100.64.1.31"),
    problems: [`nodes[4].baremetal.maintenanceAddress: %P; got "100.64.1.31". %H`],
    valid: (v) => (v.nodes[4].baremetal.maintenanceAddress = "192.168.1.31"),
  },
  {
    rule: "a public address that is also the maintenance address (none given)",
    base: mixedCluster,
    broken: (v) => {
      v.nodes[4].network.addresses[1] = "2a01:4f8:c0c:1234::31/64";
      v.nodes[4].network.gateway6 = "fe80::1";
      v.nodes[4].baremetal.address = "2a01:4f8:c0c:1234::31";
    },
    problems: [`nodes[4].baremetal.address: %P; got "2a01:4f8:c0c:1234::31". %H`],
    valid: (v) => {
      v.nodes[4].network.addresses[1] = "2a01:4f8:c0c:1234::31/64";
      v.nodes[4].network.gateway6 = "fe80::1";
      v.nodes[4].baremetal.address = "2a01:4f8:c0c:1234::31";
      v.nodes[4].baremetal.maintenanceAddress = "fd00:10::31";
    },
  },
];
const publicCases: RuleCase[] = publicCaseList.map((c) => ({
  ...c,
  problems: c.problems.map((p) => p.replace("%P", PUBLIC).replace("%H", PUBLIC_HINT)),
}));

describe("rules: addresses", () => {
  itRefuses(cases);
  itRefuses(publicCases);

  it("tells public addresses (a maintenance push there needs allowPublicMaintenance) from the rest", () => {
    const table: [string, boolean][] = [
      ["10.1.2.3", false], // RFC 1918
      ["172.16.0.9", false],
      ["172.31.255.254", false],
      ["172.32.0.1", true],
      ["192.168.1.31", false],
      ["127.0.0.1", false], // loopback
      ["169.254.10.1", false], // link-local
      ["192.0.2.31", false], // documentation (RFC 5737), as in the example stacks
      ["198.51.100.7", false],
      ["203.0.113.9", false],
      ["198.19.0.14", false], // benchmarking (RFC 2544), as in the benchmark's stacks
      ["198.20.0.1", true],
      ["100.64.0.1", true], // shared address space (RFC 6598): other subscribers reach it
      ["8.8.8.8", true],
      ["::1", false],
      ["fd00:10::31", false], // unique local
      ["fe80::21a:2bff:fe3c:4d5e", false],
      ["2001:db8:300::31", false], // documentation (RFC 3849)
      ["2a01:4f8:c0c:1234::31", true],
      ["2001:4860:4860::8888", true],
    ];
    assert.deepEqual(
      table.map(([ip]) => [ip, isPublicAddress(ip)]),
      table,
    );
  });

  itRefusesMutations({
    "a gateway that is the node's own address": (v) => {
      const i = staticIndexes(v)[0];
      v.nodes[i].network.gateway = v.nodes[i].network.addresses[0].split("/")[0];
      return `nodes[${i}].network.gateway`;
    },
    "a node address that is the broadcast address": (v) => {
      const i = staticIndexes(v).at(-1)!;
      v.nodes[i].network.addresses[0] = "192.0.2.255/24";
      return `nodes[${i}].network.addresses[0]`;
    },
    "a multicast MAC": (v) => {
      const i = staticIndexes(v).at(-1)!;
      v.nodes[i].network.mac = "03:00:00:00:00:99";
      return `nodes[${i}].network.mac`;
    },
    "a pod subnet over the nodes' network": (v) => {
      v.cluster.network.podSubnets = ["192.0.2.0/26"];
      return "cluster.network.podSubnets[0]";
    },
  });
});
