// Clusters over several sites (a node's site: nodes[].site, else its platform and region): how the
// sites reach each other, settings only for sites that have nodes, and, with `routed`, the prefixes
// other sites' firewalls must let in and kubelet addresses that control planes elsewhere can reach.
import { knownSourceAddresses, siteOf } from "../derived";
import type { IndexedNode, Rule, RuleInput } from "./rule";

/** Each node with its site. */
function sitesOf({ nodes, oci, openstack }: RuleInput): { entry: IndexedNode; site: string }[] {
  return nodes.map((entry) => ({ entry, site: siteOf(entry.node, oci, openstack) }));
}

/** Nodes at more than one site say how the sites reach each other; every site listed has a node. */
export const connectivity: Rule = (input, problems) => {
  const { cluster } = input;
  if (!cluster) return;
  const placed = sitesOf(input);
  const sites = [...new Set(placed.map((p) => p.site))];
  if (sites.length > 1 && !cluster.network?.connectivity) {
    problems.add(
      ["cluster", "network", "connectivity"],
      `required because the nodes are at ${sites.length} sites (${sites.join(", ")})`,
      {
        hint: "Use kubespan (a WireGuard mesh, UDP 51820) or routed (the node addresses reach each other); see docs/platforms.md, Sites",
      },
    );
  }
  // A node that did not parse may be at any site (it is reported on its own): a site without a
  // parsed node is then no sign of a stray setting.
  if (input.nodes.length < input.rawNodes.length) return;
  for (const name of Object.keys(cluster.sites ?? {})) {
    if (!sites.includes(name)) {
      problems.add(["cluster", "sites", name], "no node is at this site", {
        hint: `Sites with nodes: ${sites.join(", ")} (a node's site is nodes[].site, else its platform and region)`,
      });
    }
  }
};

/**
 * With `routed` sites, the OpenStack security group lets other sites' nodes in by their prefixes, so
 * every other site's must be known; and a control plane must be able to reach every node at the
 * address its kubelet reports (the health check talks to each node there).
 */
export const routedSites: Rule = (input, problems) => {
  const { cluster, oci } = input;
  if (cluster?.network?.connectivity !== "routed") return;
  const placed = sitesOf(input);
  const sites = [...new Set(placed.map((p) => p.site))];
  if (sites.length < 2) return;
  const openstackSites = new Set(
    placed.filter((p) => p.entry.node.platform === "openstack").map((p) => p.site),
  );
  if (openstackSites.size > 0) {
    for (const site of sites) {
      if (openstackSites.has(site) && openstackSites.size === 1) continue;
      if (cluster.sites?.[site]?.cidrs) continue;
      const unknown = placed.find(
        (p) => p.site === site && knownSourceAddresses(p.entry.node, oci) === undefined,
      );
      if (unknown) {
        problems.add(
          ["cluster", "sites", site, "cidrs"],
          `required: nodes[${unknown.entry.index}] connects from an address known only once it exists, and the OpenStack security group must let this site in`,
          { hint: "List the prefixes its nodes connect from, e.g. [2001:db8:200::/56]" },
        );
      }
    }
  }
  const controlPlaneSites = new Set(
    placed.filter((p) => p.entry.node.role === "controlplane").map((p) => p.site),
  );
  for (const { entry, site } of placed) {
    const { node, index } = entry;
    if (node.platform !== "oci") continue;
    const publicIp = node.oci?.assignPublicIp ?? oci?.assignPublicIp ?? false;
    const remote = [...controlPlaneSites].some((s) => s !== site);
    if (publicIp && remote && !node.oci?.ipv6Address) {
      problems.add(
        ["nodes", index, "oci", "assignPublicIp"],
        "its kubelet reports the private VNIC address, which control planes at other sites cannot reach (the public IPv4 is NAT)",
        {
          got: true,
          hint: "Give it oci.ipv6Address, or use cluster.network.connectivity: kubespan",
        },
      );
    }
  }
};
