// Node addresses that cannot work: a static network missing or without a link to configure, a gateway
// outside the node's subnets or the node itself, a node address that is its subnet's network or
// broadcast address, a node without an address of the cluster's primary service family, pod and
// service ranges overlapping each other or the nodes' networks, MACs that are not unicast.
import { canonicalIp, Cidr, inSubnet, ipFamily, parseCidr } from "../../net";
import {
  addressRange,
  AddressRange,
  hostRole,
  rangeOf,
  rangesOverlap,
  subnetRange,
} from "../../net/ranges";
import { serviceFamilies, staticAddresses, staticNetwork } from "../derived";
import { KeyPath, keyOf } from "../problems";
import type { Rule } from "./rule";

const ipv = (family: number) => `IPv${family}`;

/** Talos' default pod and service subnets (pkg/machinery/constants), used when the stack sets none. */
const TALOS_DEFAULT_SUBNETS = {
  podSubnets: "10.244.0.0/16",
  serviceSubnets: "10.96.0.0/12",
} as const;

/** A subnet written from its network address, `192.0.2.0/24` for `192.0.2.11/24`. */
export const formatRange = (cidr: Cidr) => {
  const range = subnetRange(cidr);
  return `${cidr.family === 4 ? numberToIpv4(range.first) : cidr.ip}/${cidr.prefix}`;
};

function numberToIpv4(n: bigint): string {
  return [24n, 16n, 8n, 0n].map((shift) => String((n >> shift) & 255n)).join(".");
}

/** How messages name the special addresses of a subnet. */
export const ROLE_WORDS = { network: "network address", broadcast: "broadcast address" } as const;

/** True for an IPv6 link-local address (fe80::/10). */
function isLinkLocal6(ip: string): boolean {
  return ipFamily(ip) === 6 && inSubnet(ip, { ip: "fe80::", prefix: 10, family: 6 });
}

/** A static node has a network with a link to configure, gateways on its subnets, its own address. */
export const nodeNetworks: Rule = ({ nodes }, problems) => {
  for (const { index, node } of nodes) {
    const base = ["nodes", index] as const;
    const network = staticNetwork(node);
    if (node.platform !== "proxmox" && node.platform !== "baremetal") continue;
    if (!network) {
      if (node.platform === "proxmox") {
        problems.add([...base, "network"], "required for Proxmox nodes", {
          hint: "Give network.addresses (the VM's static address, e.g. 192.0.2.11/24) and network.gateway",
        });
      }
      continue;
    }
    if (node.platform === "baremetal" && !network.mac && !network.interface) {
      problems.add([...base, "network"], "name the link to configure with mac or interface", {
        hint: "mac selects the NIC by hardware address; interface takes a name such as enp1s0",
      });
    }
    const cidrs = network.addresses.map((a) => parseCidr(a)!);
    for (const [key, family] of [
      ["gateway", 4],
      ["gateway6", 6],
    ] as const) {
      const gateway = network[key];
      // An IPv6 router is commonly reached at its link-local address (fe80::/10), on any subnet.
      if (family === 6 && gateway && isLinkLocal6(gateway)) continue;
      if (gateway && !cidrs.some((c) => c.family === family && inSubnet(gateway, c))) {
        problems.add(
          [...base, "network", key],
          `is outside every IPv${family} subnet of the node`,
          {
            got: gateway,
            hint: `The node's addresses are ${network.addresses.join(", ")}`,
          },
        );
      }
    }
    if (node.platform === "baremetal") {
      const address = canonicalIp(node.baremetal.address);
      if (!cidrs.some((c) => canonicalIp(c.ip) === address)) {
        problems.add(
          [...base, "baremetal", "address"],
          "is not one of network.addresses, so the node would stop answering there once configured",
          {
            got: node.baremetal.address,
            hint: "List it in network.addresses, or use the static address the node will keep",
          },
        );
      }
    }
  }
};

/** Each node needs an address of the primary service family: its kubelet's node IP. */
export const kubeletFamily: Rule = ({ cluster, nodes }, problems) => {
  if (!cluster) return;
  const [primary] = serviceFamilies(cluster);
  for (const { index, node } of nodes) {
    const lacks = (addresses: readonly (string | undefined)[]) =>
      !addresses.some((a) => a !== undefined && ipFamily(a) === primary);
    const hint = `Each kubelet needs a node IP of the first service subnet's family, ${ipv(primary)}`;
    switch (node.platform) {
      case "proxmox":
        if (node.network && lacks(staticAddresses(node)))
          problems.add(["nodes", index, "network", "addresses"], `has no ${ipv(primary)} address`, {
            got: node.network.addresses,
            hint,
          });
        break;
      case "baremetal":
        if (node.network && lacks(staticAddresses(node)))
          problems.add(["nodes", index, "network", "addresses"], `has no ${ipv(primary)} address`, {
            got: node.network.addresses,
            hint,
          });
        else if (!node.network && lacks([node.baremetal.address]))
          problems.add(
            ["nodes", index, "baremetal", "address"],
            `is not an ${ipv(primary)} address`,
            {
              got: node.baremetal.address,
              hint: `${hint}. Give network.addresses with one`,
            },
          );
        break;
      case "oci":
        if (primary === 6 && !node.oci?.ipv6Address)
          problems.add(
            ["nodes", index, "oci", "ipv6Address"],
            "required in an IPv6-first cluster",
            {
              hint,
            },
          );
        break;
      case "openstack":
        if (primary === 6 && !node.openstack?.fixedIp6)
          problems.add(
            ["nodes", index, "openstack", "fixedIp6"],
            "required in an IPv6-first cluster",
            {
              hint,
            },
          );
        break;
      default: {
        const unhandled: never = node;
        throw new Error(`no kubelet rule for ${JSON.stringify(unhandled)}`);
      }
    }
  }
};

/** Gateways and node addresses that are the node itself or its subnet's network or broadcast address. */
export const nodeAddresses: Rule = ({ nodes }, problems) => {
  for (const { index, node } of nodes) {
    const network = staticNetwork(node);
    if (!network) continue;
    const cidrs = network.addresses.map((a) => parseCidr(a)!);
    cidrs.forEach((cidr, i) => {
      const role = hostRole(cidr.ip, cidr);
      if (role !== "host") {
        problems.add(
          ["nodes", index, "network", "addresses", i],
          `is the ${ROLE_WORDS[role]} of its subnet ${formatRange(cidr)}, not a host address`,
          {
            got: network.addresses[i],
            hint: "Give the node an address inside the subnet, e.g. the network address + 11",
          },
        );
      }
    });
    for (const key of ["gateway", "gateway6"] as const) {
      const gateway = network[key];
      if (gateway && cidrs.some((cidr) => canonicalIp(cidr.ip) === canonicalIp(gateway))) {
        problems.add(
          ["nodes", index, "network", key],
          "is the node's own address; a gateway is the router the node sends through",
          {
            got: gateway,
            hint: "Use the router's address on the node's subnet",
          },
        );
      }
    }
  }
};

/** A range with the key that declares it, for messages. */
interface Declared {
  readonly range: AddressRange;
  readonly text: string;
  readonly key: KeyPath;
}

/** Pod and service subnets overlap neither each other nor the nodes' networks, VIP and fixed addresses. */
export const clusterRanges: Rule = ({ cluster, nodes }, problems) => {
  if (!cluster) return;
  const declared = (kind: "podSubnets" | "serviceSubnets"): Declared[] => {
    const given = cluster.network?.[kind];
    if (given) {
      return given.map((text, i) => ({
        range: rangeOf(text)!,
        text,
        key: ["cluster", "network", kind, i],
      }));
    }
    const text = TALOS_DEFAULT_SUBNETS[kind];
    return [
      {
        range: rangeOf(text)!,
        text: `Talos' default ${kind === "podSubnets" ? "pod" : "service"} subnet ${text}`,
        key: ["cluster", "network", kind],
      },
    ];
  };
  const pods = declared("podSubnets");
  const services = declared("serviceSubnets");
  const isDefault = (d: Declared) => d.key.length === 3;

  // Within one list: no range overlapping another.
  for (const [kind, list] of [
    ["podSubnets", pods],
    ["serviceSubnets", services],
  ] as const) {
    list.forEach((range, i) => {
      const earlier = list.findIndex(
        (other, j) => j < i && rangesOverlap(other.range, range.range),
      );
      if (earlier >= 0) {
        problems.add(
          range.key,
          `overlaps cluster.network.${kind}[${earlier}] (${list[earlier].text})`,
          {
            got: range.text,
            hint: "List separate ranges, one per IP family",
          },
        );
      }
    });
  }
  // The API server and the controller manager take one service range per family
  // (--service-cluster-ip-range: one CIDR, or an IPv4 and an IPv6 one for dual stack).
  services.forEach((range, i) => {
    const earlier = services.findIndex(
      (other, j) => j < i && other.range.family === range.range.family,
    );
    if (earlier >= 0 && !rangesOverlap(services[earlier].range, range.range)) {
      problems.add(
        range.key,
        `is a second IPv${range.range.family} service subnet (after cluster.network.serviceSubnets[${earlier}]); Kubernetes takes one service range per IP family`,
        {
          got: range.text,
          hint: "Keep one IPv4 and at most one IPv6 service subnet (the first one's family is primary); widen that one if it is too small",
        },
      );
    }
  });

  for (const pod of pods) {
    for (const service of services) {
      if (rangesOverlap(pod.range, service.range)) {
        problems.add(
          isDefault(service) ? pod.key : service.key,
          `overlaps ${isDefault(service) ? service.text : `cluster.network.podSubnets (${pod.text})`}`,
          {
            got: isDefault(service) ? pod.text : service.text,
            hint: "Pods and services need separate ranges",
          },
        );
      }
    }
  }

  // Node-side ranges: each node's subnets, the VIP and the fixed addresses of cloud nodes.
  const nodeRanges: Declared[] = [];
  if (cluster.vip)
    nodeRanges.push({
      range: addressRange(cluster.vip),
      text: cluster.vip,
      key: ["cluster", "vip"],
    });
  for (const { index, node } of nodes) {
    staticNetwork(node)?.addresses.forEach((text, i) =>
      nodeRanges.push({
        range: rangeOf(text)!,
        text,
        key: ["nodes", index, "network", "addresses", i],
      }),
    );
    const fixed: [string | undefined, KeyPath][] =
      node.platform === "oci"
        ? [[node.oci?.privateIp, ["nodes", index, "oci", "privateIp"]]]
        : node.platform === "openstack"
          ? [
              [node.openstack?.fixedIp, ["nodes", index, "openstack", "fixedIp"]],
              [node.openstack?.fixedIp6, ["nodes", index, "openstack", "fixedIp6"]],
            ]
          : node.platform === "baremetal"
            ? [[node.baremetal.address, ["nodes", index, "baremetal", "address"]]]
            : [];
    for (const [ip, key] of fixed)
      if (ip) nodeRanges.push({ range: addressRange(ip), text: ip, key });
  }
  const contains = (outer: AddressRange, inner: AddressRange) =>
    outer.family === inner.family && outer.first <= inner.first && inner.last <= outer.last;
  for (const clusterRange of [...pods, ...services]) {
    const overlapping = nodeRanges.filter((n) => rangesOverlap(clusterRange.range, n.range));
    // One problem per node network: drop a VIP or an address inside a network already listed.
    const distinct = overlapping.filter(
      (n, i) =>
        !overlapping.some(
          (other, j) =>
            j !== i && contains(other.range, n.range) && (!contains(n.range, other.range) || j < i),
        ),
    );
    if (distinct.length === 0) continue;
    if (isDefault(clusterRange)) {
      for (const nodeRange of distinct) {
        problems.add(nodeRange.key, `overlaps ${clusterRange.text}`, {
          got: nodeRange.text,
          hint: `Set cluster.network.${clusterRange.key[2]} to a range the nodes do not use`,
        });
      }
    } else {
      const networks = distinct.map((n) => `${keyOf(n.key)} (${n.text})`).join(", ");
      problems.add(clusterRange.key, `overlaps the node network of ${networks}`, {
        got: clusterRange.text,
        hint: "Pod and service ranges must be separate from the networks the nodes are on",
      });
    }
  }
};

/** True for a multicast (or broadcast) MAC: the low bit of the first byte is set. */
function isMulticastMac(mac: string): boolean {
  return (parseInt(mac.slice(0, 2), 16) & 1) === 1;
}

/** MACs of NICs are unicast and not all zeros: Proxmox refuses others, and the NIC would not work. */
export const unicastMacs: Rule = ({ nodes }, problems) => {
  for (const { index, node } of nodes) {
    const macs: [string | undefined, KeyPath][] = [
      [staticNetwork(node)?.mac, ["nodes", index, "network", "mac"]],
      [
        node.platform === "openstack" ? node.openstack?.mac : undefined,
        ["nodes", index, "openstack", "mac"],
      ],
    ];
    for (const [mac, key] of macs) {
      if (!mac) continue;
      if (isMulticastMac(mac)) {
        problems.add(key, "is a multicast MAC (the first byte is odd); a NIC needs a unicast MAC", {
          got: mac,
          hint: "Use the NIC's own MAC, or a locally administered one such as 02:00:00:00:00:11",
        });
      } else if (/^(00:){5}00$/.test(mac)) {
        problems.add(key, "is the all-zeros MAC, which no NIC can use", { got: mac });
      }
    }
  }
};

/**
 * Ranges a maintenance-mode push may go to without `baremetal.allowPublicMaintenance`: addresses no
 * Internet host can reach the node at. Private (RFC 1918, IPv6 unique local fc00::/7), loopback,
 * link-local, the documentation ranges (RFC 5737, RFC 3849: never routed, and what the example
 * stacks stand in for a LAN with) and the benchmarking range 198.18.0.0/15 (RFC 2544, not globally
 * reachable; the benchmark's stacks use it). Everything else counts as public, the shared address
 * space 100.64.0.0/10 (RFC 6598) too: the carrier's other subscribers share it.
 */
const NON_PUBLIC_RANGES: readonly string[] = [
  "10.0.0.0/8",
  "172.16.0.0/12",
  "192.168.0.0/16",
  "127.0.0.0/8",
  "169.254.0.0/16",
  "192.0.2.0/24",
  "198.51.100.0/24",
  "203.0.113.0/24",
  "198.18.0.0/15",
  "::1/128",
  "fc00::/7",
  "fe80::/10",
  "2001:db8::/32",
];

/** True when `ip` lies in none of {@link NON_PUBLIC_RANGES}: the Internet may reach it. */
export function isPublicAddress(ip: string): boolean {
  return !NON_PUBLIC_RANGES.some((range) => inSubnet(ip, parseCidr(range)!));
}

/**
 * A bare-metal node's first push goes to Talos' maintenance mode, which authenticates nobody: the
 * node takes the first config anyone sends it, and the program does not verify the node's
 * certificate, so whoever is in the path reads the whole machine config (the cluster's CA keys and
 * tokens). On a public address that is anyone on the Internet: refused unless the stack says so.
 */
export const publicMaintenance: Rule = ({ nodes }, problems) => {
  for (const { index, node } of nodes) {
    if (node.platform !== "baremetal") continue;
    const { baremetal } = node;
    if (baremetal.allowPublicMaintenance === true) continue;
    const key = baremetal.maintenanceAddress !== undefined ? "maintenanceAddress" : "address";
    const address = baremetal.maintenanceAddress ?? baremetal.address;
    if (ipFamily(address) === undefined || !isPublicAddress(address)) continue;
    problems.add(
      ["nodes", index, "baremetal", key],
      "is a public address, and the first push goes there unauthenticated (Talos maintenance mode): anyone who reaches it first can claim the node, and anyone in the path reads its machine config with the cluster's keys",
      {
        got: address,
        hint: `Push the first config over a private network (the node's LAN address as baremetal.maintenanceAddress), or set nodes[${index}].baremetal.allowPublicMaintenance: true to accept the risk`,
      },
    );
  }
};
