// The node-to-node traffic a Talos cluster needs, as data: which ports, on which nodes, from which
// nodes. Firewalls the program manages are built from it, and docs/platforms.md lists the same
// table for the ones it does not manage. Pure. Ports from Talos' constants (apid 50000, trustd 50001,
// kubelet 10250, etcd 2379-2380, KubeSpan 51820), Talos' flannel manifest (VXLAN 4789) and Cilium's
// system requirements (VXLAN 8472 in tunnel mode, health 4240 and ICMP echo, Hubble 4244).

/** Which nodes: every node, or the control planes. */
export type NodeSet = "all" | "controlplane";

/** One allowed flow into a node. */
export interface PortRule {
  readonly protocol: "tcp" | "udp" | "icmp";
  /** Port range; absent for ICMP. */
  readonly ports?: { readonly from: number; readonly to: number };
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
    { protocol: "icmp", on: "all", from: "all", what: "Cilium health (ICMP echo)" },
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
  ];
}

/** What the operator's workstation needs: the Talos API everywhere, the Kubernetes API on control planes. */
export const WORKSTATION_RULES: readonly PortRule[] = [
  tcp(50000, 50000, "all", "anywhere", "Talos API (apid) from the workstation"),
  tcp(6443, 6443, "controlplane", "anywhere", "Kubernetes API from the workstation"),
];
