// The node-to-node traffic a Talos cluster needs, as data: which ports, on which nodes, from which
// nodes. Firewalls the program manages are built from it, and docs/platforms.md lists the same
// table for the ones it does not manage. Pure. Ports from Talos' constants (apid 50000, trustd 50001,
// kubelet 10250, etcd 2379-2380, KubeSpan 51820), Talos' flannel manifest (VXLAN 4789) and Cilium's
// system requirements (VXLAN 8472, health 4240 and ICMP echo, Hubble 4244).

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

/** Each CNI's node-to-node flows. `none`: the operator's CNI, whose ports the program cannot know. */
const CNI_RULES: Readonly<Record<"flannel" | "cilium" | "none", readonly PortRule[]>> = {
  flannel: [udp(4789, "all", "all", "flannel VXLAN")],
  cilium: [
    udp(8472, "all", "all", "Cilium VXLAN (tunnel mode)"),
    tcp(4240, 4240, "all", "all", "Cilium health checks"),
    tcp(4244, 4244, "all", "all", "Hubble peers"),
    { protocol: "icmp", on: "all", from: "all", what: "Cilium health (ICMP echo)" },
  ],
  none: [],
};

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
}): PortRule[] {
  return [
    ...TALOS_AND_KUBERNETES,
    ...CNI_RULES[network.cni],
    ...(network.connectivity === "kubespan" ? [KUBESPAN_RULE] : []),
  ];
}

/** What the operator's workstation needs: the Talos API everywhere, the Kubernetes API on control planes. */
export const WORKSTATION_RULES: readonly PortRule[] = [
  tcp(50000, 50000, "all", "anywhere", "Talos API (apid) from the workstation"),
  tcp(6443, 6443, "controlplane", "anywhere", "Kubernetes API from the workstation"),
];
