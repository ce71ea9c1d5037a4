// components/config/rules/sites.ts: clusters over several sites (connectivity, per-site settings,
// what routed sites need).
import { cloudCluster, itRefuses, mixedCluster, proxmoxCluster, RuleCase } from "../../fixtures";

const cases: RuleCase[] = [
  {
    rule: "nodes at two sites without connectivity",
    base: mixedCluster,
    broken: (v) => delete v.nodes[4].site,
    problems: [
      "cluster.network.connectivity: required because the nodes are at 2 sites (proxmox, baremetal). Use kubespan (a WireGuard mesh, UDP 51820) or routed (the node addresses reach each other); see docs/platforms.md, Sites",
    ],
  },
  {
    rule: "settings for a site no node is at",
    base: proxmoxCluster,
    broken: (v) => (v.cluster.sites = { hom: { nameservers: ["192.0.2.53"] } }),
    problems: [
      "cluster.sites.hom: no node is at this site. Sites with nodes: proxmox (a node's site is nodes[].site, else its platform and region)",
    ],
  },
  {
    rule: "a node that did not parse, whose site's settings are then not reported as unused",
    base: mixedCluster,
    broken: (v) => {
      v.nodes[4].site = "edge";
      v.nodes[4].installDisk = "nvme0n1";
      v.cluster.network.connectivity = "routed";
      v.cluster.sites = { edge: { nameservers: ["192.0.2.53"] } };
    },
    problems: ['nodes[4].installDisk: expected a device path such as /dev/sda; got "nvme0n1"'],
    valid: (v) => {
      v.nodes[4].site = "edge";
      v.cluster.network.connectivity = "routed";
      v.cluster.sites = { edge: { nameservers: ["192.0.2.53"] } };
    },
  },
  {
    rule: "a routed site whose nodes' addresses the OpenStack security group cannot know",
    base: cloudCluster,
    broken: (v) => delete v.nodes[4].oci.privateIp,
    problems: [
      "cluster.sites.oci-eu-frankfurt-1.cidrs: required: nodes[4] connects from an address known only once it exists, and the OpenStack security group must let this site in. List the prefixes its nodes connect from, e.g. [2001:db8:200::/56]",
    ],
  },
  {
    rule: "an OCI node behind a public IPv4 in a routed cluster with control planes elsewhere",
    base: cloudCluster,
    broken: (v) => {
      v.nodes[3].oci = { assignPublicIp: true };
      v.cluster.sites = { "oci-eu-frankfurt-1": { cidrs: ["198.51.100.0/24"] } };
    },
    problems: [
      "nodes[3].oci.assignPublicIp: its kubelet reports the private VNIC address, which control planes at other sites cannot reach (the public IPv4 is NAT); got true. Give it oci.ipv6Address, or use cluster.network.connectivity: kubespan",
    ],
  },
];

describe("rules: sites", () => {
  itRefuses(cases);
});
