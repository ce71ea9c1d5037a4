// What the stack file says of the Cilium the operator installs (`cluster.network.cilium`): only with
// `cni: cilium`; native routing only where something routes the pod ranges (not across sites unless
// the operator says so, never through Neutron's port security); a VXLAN underlay family every site
// connects from when the sites are routed to each other.
import { ipFamily, parseCidr } from "../../net";
import { knownSourceAddresses, siteOf } from "../derived";
import type { Rule } from "./rule";

/** The Cilium settings fit the CNI, the sites and the platforms. */
export const ciliumRouting: Rule = (input, problems) => {
  const { cluster, nodes, oci, openstack } = input;
  const network = cluster?.network;
  if (!network) return;
  const at = ["cluster", "network", "cilium"];
  if ((network.cni ?? "flannel") !== "cilium") {
    if (network.cilium) {
      problems.add(at, "is for cni: cilium", {
        got: network.cni ?? "flannel",
        hint: "Set cluster.network.cni: cilium, or remove cluster.network.cilium",
      });
    }
    return;
  }
  // Absent: Cilium's defaults (tunnel mode, IPv4 underlay), checked all the same.
  const cilium = network.cilium ?? {};
  const sites = new Map<string, string[] | undefined>();
  for (const { node } of nodes) {
    const site = siteOf(node, oci, openstack);
    const given = cluster.sites?.[site]?.cidrs;
    const known = given ?? knownSourceAddresses(node, oci);
    const previous = sites.has(site) ? sites.get(site) : [];
    sites.set(site, previous && known ? [...previous, ...known] : undefined);
  }
  const multiSite = sites.size > 1;

  if ((cilium.routingMode ?? "tunnel") === "native") {
    if (multiSite && !cilium.podRangesRoutedBetweenSites) {
      problems.add(
        [...at, "routingMode"],
        "native routing needs the pod ranges routed between the sites",
        {
          got: "native",
          hint: `Nothing routes the pod subnets between ${[...sites.keys()].join(", ")}: use routingMode: tunnel (with underlayProtocol: ipv6 over IPv6 sites), or set podRangesRoutedBetweenSites: true once your routers carry them (docs/platforms.md: Cilium)`,
        },
      );
    }
    const onOpenstack = nodes.find(({ node }) => node.platform === "openstack");
    if (onOpenstack) {
      problems.add(
        [...at, "routingMode"],
        "native routing does not pass OpenStack's port security",
        {
          got: "native",
          hint: `Neutron drops packets from addresses not on the port (pod addresses; the program sets no allowed address pairs), so nodes[${onOpenstack.index}] could not send pod traffic: use routingMode: tunnel`,
        },
      );
    }
    return;
  }

  // Tunnel mode over routed sites: every site's nodes must reach the others in the underlay's family.
  if (!multiSite || network.connectivity !== "routed") return;
  const underlay = cilium.underlayProtocol ?? "ipv4";
  const family = underlay === "ipv6" ? 6 : 4;
  const lacking = [...sites.entries()].filter(
    ([, prefixes]) =>
      prefixes !== undefined &&
      !prefixes.some((p) => (parseCidr(p)?.family ?? ipFamily(p)) === family),
  );
  if (lacking.length > 0) {
    problems.add(
      [...at, "underlayProtocol"],
      `Cilium's VXLAN travels between node addresses of the underlay's family, and ${lacking.map(([s]) => s).join(", ")} connects from no IPv${family} prefix`,
      {
        got: underlay,
        hint:
          family === 4
            ? "Set underlayProtocol: ipv6 (Cilium 1.19+ on dual-stack clusters) when the sites reach each other over IPv6, or list the sites' IPv4 prefixes in cluster.sites.<site>.cidrs"
            : "List the sites' IPv6 prefixes in cluster.sites.<site>.cidrs, or use underlayProtocol: ipv4",
      },
    );
  }
};
