// The node-to-node traffic a Talos cluster needs, as data: which ports, on which nodes, from which
// nodes. Firewalls the program manages are built from it, and docs/platforms.md lists the same
// table for the ones it does not manage. Pure. Ports from Talos' constants (apid 50000, trustd 50001,
// kubelet 10250, etcd 2379-2380, KubeSpan 51820), Talos' flannel manifest (VXLAN 4789) and Cilium's
// system requirements (VXLAN 8472 in tunnel mode, health 4240 and ICMP echo, Hubble 4244). ICMP
// from IANA's registries: IPv4 type 3 code 4 (fragmentation needed) and ICMPv6 type 2 (packet too
// big) for path MTU discovery, ICMPv6 133-136 for neighbour discovery (RFC 4861).
import type { SiteSpec } from "../spec/types";
import { ipFamily, parseCidr } from "./addresses";

/** Which nodes: every node, or the control planes. */
export type NodeSet = "all" | "controlplane";

/** An ICMP message type, and its code when only one is allowed. */
export interface IcmpType {
  readonly type: number;
  readonly code?: number;
}

/** One allowed flow into a node. */
export interface PortRule {
  readonly protocol: "tcp" | "udp" | "icmp";
  /** Port range; absent for ICMP. */
  readonly ports?: { readonly from: number; readonly to: number };
  /** ICMP: the message allowed per IP family (ICMPv4, ICMPv6); a family absent is not opened. */
  readonly icmp?: { readonly v4?: IcmpType; readonly v6?: IcmpType };
  /**
   * IPv6 neighbour discovery: needed where the cloud's firewall filters it (OCI's NSGs); Neutron's
   * firewall drivers always let it in, so OpenStack skips it.
   */
  readonly neighbourDiscovery?: true;
  /** The nodes it is opened on. */
  readonly on: NodeSet;
  /** Who may connect: nodes of the cluster, or anyone (an authenticated protocol behind NAT). */
  readonly from: NodeSet | "anywhere";
  /** Short description (the firewall rule's). */
  readonly what: string;
  /** Only sources of this IP family (Cilium's VXLAN travels over one underlay family); absent: both. */
  readonly family?: 4 | 6;
}

const tcp = (from: number, to: number, on: NodeSet, source: PortRule["from"], what: string) =>
  ({ protocol: "tcp", ports: { from, to }, on, from: source, what }) as const;
const udp = (port: number, on: NodeSet, source: PortRule["from"], what: string) =>
  ({ protocol: "udp", ports: { from: port, to: port }, on, from: source, what }) as const;

/** The flows between Talos itself and Kubernetes' own components, whatever the CNI. */
const TALOS_AND_KUBERNETES: readonly PortRule[] = [
  tcp(50000, 50000, "all", "controlplane", "Talos API (apid) from control planes"),
  tcp(50001, 50001, "controlplane", "all", "trustd: nodes fetch their certificates"),
  tcp(6443, 6443, "controlplane", "all", "Kubernetes API"),
  tcp(2379, 2380, "controlplane", "controlplane", "etcd between control planes"),
  tcp(10250, 10250, "all", "controlplane", "kubelet API from the API server"),
];

/** How the Cilium the operator installs routes pods (Cilium's defaults: tunnel, IPv4 underlay). */
export interface CiliumRouting {
  readonly routingMode: "tunnel" | "native";
  readonly underlayProtocol: "ipv4" | "ipv6";
}

/**
 * Cilium's node-to-node flows. Tunnel mode: VXLAN between node addresses of the underlay's family
 * only. Native routing: no VXLAN; pod addresses travel as they are (the network routes them).
 */
function ciliumRules(routing: CiliumRouting): PortRule[] {
  const family = routing.underlayProtocol === "ipv6" ? 6 : 4;
  return [
    ...(routing.routingMode === "tunnel"
      ? [
          {
            ...udp(8472, "all", "all", `Cilium VXLAN (tunnel mode, IPv${family} underlay)`),
            family,
          } as const,
        ]
      : []),
    tcp(4240, 4240, "all", "all", "Cilium health checks"),
    tcp(4244, 4244, "all", "all", "Hubble peers"),
    {
      protocol: "icmp",
      icmp: { v4: { type: 8 }, v6: { type: 128 } },
      on: "all",
      from: "all",
      what: "Cilium health (ICMP echo)",
    },
  ];
}

/** Each CNI's node-to-node flows. `none`: the operator's CNI, whose ports the program cannot know. */
function cniRules(cni: "flannel" | "cilium" | "none", cilium?: CiliumRouting): PortRule[] {
  switch (cni) {
    case "flannel":
      return [udp(4789, "all", "all", "flannel VXLAN")];
    case "cilium":
      return ciliumRules(cilium ?? { routingMode: "tunnel", underlayProtocol: "ipv4" });
    case "none":
      return [];
  }
}

/** KubeSpan's WireGuard port: everything between nodes travels inside it. */
const KUBESPAN_RULE: PortRule = udp(
  51820,
  "all",
  "anywhere",
  "KubeSpan (WireGuard; peers behind NAT change source address)",
);

/**
 * ICMP every node needs from anywhere: path MTU discovery (a router on the way reports a packet too
 * big; blocked, large packets vanish, e.g. over a VPN or VXLAN), and IPv6 neighbour discovery.
 */
export const ICMP_RULES: readonly PortRule[] = [
  {
    protocol: "icmp",
    icmp: { v4: { type: 3, code: 4 }, v6: { type: 2 } },
    on: "all",
    from: "anywhere",
    what: "path MTU discovery (fragmentation needed, packet too big)",
  },
  ...(
    [
      [133, "router solicitation"],
      [134, "router advertisement"],
      [135, "neighbour solicitation"],
      [136, "neighbour advertisement"],
    ] as const
  ).map(([type, name]): PortRule => ({
    protocol: "icmp",
    icmp: { v6: { type } },
    on: "all",
    from: "anywhere",
    what: `IPv6 neighbour discovery (${name})`,
    neighbourDiscovery: true,
  })),
];

/**
 * The flows a cluster's nodes need from each other. With KubeSpan node-to-node traffic goes through
 * the WireGuard mesh, so its port is what the firewalls between nodes must open; the Talos,
 * Kubernetes and CNI ports are opened too, for nodes of the same site before the mesh is up.
 */
export function nodePortRules(network: {
  readonly cni: "flannel" | "cilium" | "none";
  readonly connectivity: "single" | "kubespan" | "routed";
  readonly cilium?: CiliumRouting;
}): PortRule[] {
  return [
    ...TALOS_AND_KUBERNETES,
    ...cniRules(network.cni, network.cilium),
    ...(network.connectivity === "kubespan" ? [KUBESPAN_RULE] : []),
    ...ICMP_RULES,
  ];
}

/** What the operator's workstation needs: the Talos API everywhere, the Kubernetes API on control planes. */
export const WORKSTATION_RULES: readonly PortRule[] = [
  tcp(50000, 50000, "all", "anywhere", "Talos API (apid) from the workstation"),
  tcp(6443, 6443, "controlplane", "anywhere", "Kubernetes API from the workstation"),
];

/** Where an allowed flow may come from: the platform's group of those nodes, or a prefix. */
export type Remote = { readonly group: NodeSet } | { readonly prefix: string };

/** One flow a managed firewall lets in: the flow, from where, and its description. */
export interface AllowedFlow {
  readonly rule: PortRule;
  readonly remote: Remote;
  readonly what: string;
}

/**
 * What every firewall the program manages (OpenStack security groups, OCI network security groups)
 * lets into a platform's nodes: each flow of the table from the platform's own groups of nodes, from
 * the other sites' prefixes when routed (KubeSpan tunnels them), from anywhere where the table says
 * so, and the APIs from `apiAllowedCidrs`. The platform turns each into its own rules.
 */
export function allowedFlows(args: {
  readonly network: Parameters<typeof nodePortRules>[0];
  /** The sites other than the platform's, whose prefixes are let in when routed. */
  readonly otherSites: readonly SiteSpec[];
  readonly apiAllowedCidrs: readonly string[];
}): AllowedFlow[] {
  const flows: AllowedFlow[] = [];
  for (const rule of nodePortRules(args.network)) {
    if (rule.from === "anywhere") {
      for (const prefix of ["0.0.0.0/0", "::/0"])
        flows.push({ rule, remote: { prefix }, what: rule.what });
      continue;
    }
    flows.push({ rule, remote: { group: rule.from }, what: rule.what });
    if (args.network.connectivity !== "routed") continue;
    for (const site of args.otherSites) {
      const prefixes = rule.from === "controlplane" ? site.controlPlaneCidrs : site.cidrs;
      for (const prefix of prefixes)
        flows.push({ rule, remote: { prefix }, what: `${rule.what} (site ${site.name})` });
    }
  }
  for (const cidr of args.apiAllowedCidrs) {
    for (const rule of WORKSTATION_RULES)
      flows.push({ rule, remote: { prefix: cidr }, what: rule.what });
  }
  return flows;
}

/**
 * The IP families a flow from a remote is opened for: a prefix's own family, both for a group; a
 * flow of one family (Cilium's VXLAN underlay) only in it; an ICMP flow only where it names a
 * message of that family.
 */
export function flowFamilies(rule: PortRule, remote: Remote): (4 | 6)[] {
  const families = (
    "prefix" in remote
      ? [(parseCidr(remote.prefix)?.family ?? ipFamily(remote.prefix)) === 6 ? 6 : 4]
      : [4, 6]
  ).filter((family): family is 4 | 6 => !rule.family || family === rule.family);
  if (rule.protocol !== "icmp") return families;
  return families.filter((family) => (family === 4 ? rule.icmp?.v4 : rule.icmp?.v6) !== undefined);
}

/** The ICMP message a flow allows in one family, when it is an ICMP flow. */
export function icmpOf(rule: PortRule, family: 4 | 6): IcmpType | undefined {
  return family === 4 ? rule.icmp?.v4 : rule.icmp?.v6;
}
