// The layer-2 VIP of the Kubernetes API (`cluster.vip`), every check in one place: no node claims its
// address; every control plane can carry it (on a link in the VIP's subnet; OCI cannot carry one; an
// OpenStack VIP needs a port of its own); the control planes share one site; it is neither a gateway
// nor a control-plane subnet's network or broadcast address.
import { canonicalIp, inSubnet, parseCidr } from "../../net";
import { hostRole } from "../../net/ranges";
import { claimedAddresses, siteOf, staticNetwork } from "../derived";
import { formatRange, ROLE_WORDS } from "./addresses";
import type { RuleInput, Rule } from "./rule";
import type { Problems } from "../problems";

/** No node claims the VIP's address. */
function unclaimed(vip: string, { nodes }: RuleInput, problems: Problems): void {
  const address = canonicalIp(vip);
  for (const entry of nodes) {
    for (const claimed of claimedAddresses(entry)) {
      if (canonicalIp(claimed.ip) === address) {
        problems.add(claimed.path, `address ${address} is already used by cluster.vip`, {
          hint: "Each address belongs to one node",
        });
      }
    }
  }
}

/** Every control plane can carry the VIP; false when one runs on OCI (already reported). */
function carried(vip: string, { nodes, openstack }: RuleInput, problems: Problems): boolean {
  let onOci = false;
  const outside: string[] = [];
  for (const { index, node } of nodes) {
    if (node.role !== "controlplane") continue;
    if (node.platform === "oci") {
      onOci = true;
      problems.add(
        ["cluster", "vip"],
        `cannot float between OCI instances such as nodes[${index}]`,
        {
          hint: "OCI networks do not carry layer-2 VIPs: use cluster.endpoint with a DNS name or a network load balancer",
        },
      );
      continue;
    }
    if (node.platform === "openstack") {
      // The VIP becomes a port of its own, allowed on each control plane's port.
      if (openstack && !openstack.subnetId) {
        problems.add(
          ["openstack", "subnetId"],
          `required for the VIP port, because control plane nodes[${index}] runs on OpenStack and cluster.vip is set`,
        );
      }
      continue;
    }
    const network = staticNetwork(node);
    if (!network) {
      // A Proxmox node without a network is reported by itself already.
      if (node.platform !== "proxmox") {
        problems.add(
          ["nodes", index, "network"],
          "required on control planes when cluster.vip is set (the VIP needs a link)",
        );
      }
    } else if (!network.addresses.some((a) => inSubnet(vip, parseCidr(a)!))) {
      outside.push(`nodes[${index}] has ${network.addresses.join(", ")}`);
    }
  }
  if (outside.length > 0) {
    problems.add(["cluster", "vip"], "is not in the subnet of every control plane", {
      got: vip,
      hint: `A layer-2 VIP must share a subnet with every control plane; ${outside.join("; ")}`,
    });
  }
  return !onOci;
}

/** The control planes are at one site: a layer-2 VIP cannot span sites. */
function oneSite(vip: string, { nodes, oci, openstack }: RuleInput, problems: Problems): void {
  const sites = [
    ...new Set(
      nodes
        .filter(({ node }) => node.role === "controlplane")
        .map(({ node }) => siteOf(node, oci, openstack)),
    ),
  ];
  if (sites.length > 1) {
    problems.add(
      ["cluster", "vip"],
      `a layer-2 VIP cannot span sites, and the control planes are at ${sites.join(", ")}`,
      {
        got: vip,
        hint: "Drop it and give cluster.endpoint a DNS name or a load balancer (docs/platforms.md, Sites)",
      },
    );
  }
}

/** The VIP is neither a gateway nor a control plane subnet's network or broadcast address. */
function usable(vip: string, { nodes }: RuleInput, problems: Problems): void {
  for (const { index, node } of nodes) {
    const network = staticNetwork(node);
    const gatewayKey = (["gateway", "gateway6"] as const).find(
      (key) => network?.[key] && canonicalIp(network[key]!) === canonicalIp(vip),
    );
    if (gatewayKey) {
      problems.add(
        ["cluster", "vip"],
        `is the gateway of nodes[${index}] (network.${gatewayKey})`,
        {
          got: vip,
          hint: "The VIP needs an unused address of the control planes' subnet",
        },
      );
      return;
    }
  }
  for (const { index, node } of nodes) {
    if (node.role !== "controlplane") continue;
    for (const address of staticNetwork(node)?.addresses ?? []) {
      const cidr = parseCidr(address)!;
      if (!inSubnet(vip, cidr)) continue;
      const role = hostRole(vip, cidr);
      if (role !== "host") {
        problems.add(
          ["cluster", "vip"],
          `is the ${ROLE_WORDS[role]} of subnet ${formatRange(cidr)} (nodes[${index}])`,
          {
            got: vip,
            hint: "The VIP needs an unused host address of the control planes' subnet",
          },
        );
        return;
      }
    }
  }
}

/** Every check of the VIP, in the order its problems are listed. */
export const vip: Rule = (input, problems) => {
  const address = input.cluster?.vip;
  if (!address) return;
  unclaimed(address, input, problems);
  // An OCI control plane is reported as one that cannot carry the VIP; its site would only add noise.
  if (carried(address, input, problems)) oneSite(address, input, problems);
  usable(address, input, problems);
};
