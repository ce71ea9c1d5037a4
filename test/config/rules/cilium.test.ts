// components/config/rules/cilium.ts: what cluster.network.cilium may say: only with cni: cilium,
// native routing only where the pod ranges are routed (not across sites unless declared, never through
// OpenStack's port security), a VXLAN underlay family every routed site connects from.
import { cloudCluster, itRefuses, mixedCluster, proxmoxCluster, RuleCase } from "../../fixtures";

const cases: RuleCase[] = [
  {
    rule: "Cilium settings without cni: cilium",
    base: proxmoxCluster,
    broken: (v) => (v.cluster.network.cilium = { routingMode: "tunnel" }),
    problems: [
      'cluster.network.cilium: is for cni: cilium; got "flannel". Set cluster.network.cni: cilium, or remove cluster.network.cilium',
    ],
    valid: (v) => {
      v.cluster.network.cni = "cilium";
      v.cluster.network.cilium = { routingMode: "tunnel" };
    },
  },
  {
    rule: "native routing across sites nothing routes the pod ranges between",
    base: mixedCluster,
    broken: (v) => {
      delete v.nodes[4].site;
      v.cluster.network.connectivity = "routed";
      v.cluster.network.cni = "cilium";
      v.cluster.network.cilium = { routingMode: "native" };
    },
    problems: [
      'cluster.network.cilium.routingMode: native routing needs the pod ranges routed between the sites; got "native". Nothing routes the pod subnets between proxmox, baremetal: use routingMode: tunnel (with underlayProtocol: ipv6 over IPv6 sites), or set podRangesRoutedBetweenSites: true once your routers carry them (docs/platforms.md: Cilium)',
    ],
    valid: (v) => {
      delete v.nodes[4].site;
      v.cluster.network.connectivity = "routed";
      v.cluster.network.cni = "cilium";
      v.cluster.network.cilium = { routingMode: "native", podRangesRoutedBetweenSites: true };
    },
  },
  {
    rule: "native routing with OpenStack nodes, even with the pod ranges routed",
    base: cloudCluster,
    broken: (v) => {
      v.cluster.network.cni = "cilium";
      v.cluster.network.cilium = { routingMode: "native", podRangesRoutedBetweenSites: true };
    },
    problems: [
      'cluster.network.cilium.routingMode: native routing does not pass OpenStack\'s port security; got "native". Neutron drops packets from addresses not on the port (pod addresses; the program sets no allowed address pairs), so nodes[6] could not send pod traffic: use routingMode: tunnel',
    ],
    valid: (v) => {
      v.cluster.network.cni = "cilium";
      v.cluster.network.cilium = { routingMode: "tunnel" };
    },
  },
  {
    rule: "an IPv4 VXLAN underlay between sites that reach each other over IPv6 only",
    base: cloudCluster,
    broken: (v) => {
      v.cluster.network.cni = "cilium";
      v.cluster.sites = {
        proxmox: { cidrs: ["2001:db8:100::/48"] },
        "oci-eu-frankfurt-1": { cidrs: ["2001:db8:400::/56"] },
        openstack: { cidrs: ["2001:db8:500::/56"] },
      };
    },
    problems: [
      "cluster.network.cilium.underlayProtocol: Cilium's VXLAN travels between node addresses of the underlay's family, and proxmox, oci-eu-frankfurt-1, openstack connects from no IPv4 prefix; got \"ipv4\". Set underlayProtocol: ipv6 (Cilium 1.19+ on dual-stack clusters) when the sites reach each other over IPv6, or list the sites' IPv4 prefixes in cluster.sites.<site>.cidrs",
    ],
    valid: (v) => {
      v.cluster.network.cni = "cilium";
      v.cluster.network.cilium = { underlayProtocol: "ipv6" };
      v.cluster.sites = {
        proxmox: { cidrs: ["2001:db8:100::/48"] },
        "oci-eu-frankfurt-1": { cidrs: ["2001:db8:400::/56"] },
        openstack: { cidrs: ["2001:db8:500::/56"] },
      };
    },
  },
  {
    rule: "an IPv6 VXLAN underlay from a site whose nodes have IPv4 addresses only",
    base: cloudCluster,
    broken: (v) => {
      v.cluster.network.cni = "cilium";
      v.cluster.network.cilium = { underlayProtocol: "ipv6" };
    },
    problems: [
      "cluster.network.cilium.underlayProtocol: Cilium's VXLAN travels between node addresses of the underlay's family, and proxmox, oci-eu-frankfurt-1, openstack connects from no IPv6 prefix; got \"ipv6\". List the sites' IPv6 prefixes in cluster.sites.<site>.cidrs, or use underlayProtocol: ipv4",
    ],
  },
];

describe("rules: cilium", () => {
  itRefuses(cases);
});
