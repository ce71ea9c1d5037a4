// What a parsed stack file implies beyond what it says: a node's site, its static network and the
// addresses it claims, its resolvers, the cluster's service families. Shared by the rules (to report
// problems) and by normalisation (to build the spec), so both read the stack file the same way.
import { ipFamily, IpFamily, parseCidr } from "../net";
import type { NodeResolvers } from "../spec/types";
import type { KeyPath } from "./problems";
import type { IndexedNode } from "./rules/rule";
import type { RawCluster, RawNode, RawOci, RawOpenstack } from "./schema";

/** Talos' default service subnet is IPv4 (10.96.0.0/12). */
const DEFAULT_SERVICE_FAMILIES: readonly IpFamily[] = [4];

/**
 * The IP families of the cluster's services, primary first: Talos picks each kubelet's node IPs from
 * them (one address per family, the primary first), so health checks must name nodes by them.
 */
export function serviceFamilies(cluster: RawCluster | undefined): readonly IpFamily[] {
  const subnets = cluster?.network?.serviceSubnets;
  if (!subnets || subnets.length === 0) return DEFAULT_SERVICE_FAMILIES;
  const families = subnets.map((s) => parseCidr(s)?.family).filter((f): f is IpFamily => !!f);
  return families.length > 0 ? [...new Set(families)] : DEFAULT_SERVICE_FAMILIES;
}

/** The CPU architecture of the OCI nodes: given, else arm64 for Ampere (A1, A2) shapes. */
export function ociArchitecture(oci: RawOci | undefined): "amd64" | "arm64" {
  return oci?.architecture ?? shapeArchitecture(oci?.shape ?? DEFAULT_OCI_SHAPE);
}

/** The CPU architecture of an OCI shape: arm64 for Ampere (`….A1.…`, `….A2.…`), else amd64. */
export function shapeArchitecture(shape: string): "amd64" | "arm64" {
  return /\.A\d\./.test(shape) ? "arm64" : "amd64";
}

/** The OCI shape when the stack names none. */
export const DEFAULT_OCI_SHAPE = "VM.Standard.A1.Flex";

/** A DNS-label form of a region name (`RegionOne` → `regionone`). */
function label(value: string): string {
  return value
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, "-")
    .replace(/^-+|-+$/g, "");
}

/** The site a node is at when the stack names none: its platform, and for clouds the region. */
function defaultSite(
  node: RawNode,
  oci: RawOci | undefined,
  openstack: RawOpenstack | undefined,
): string {
  switch (node.platform) {
    case "proxmox":
    case "baremetal":
      return node.platform;
    case "oci":
      return oci ? `oci-${label(oci.region)}` : "oci";
    case "openstack":
      return openstack?.region ? `openstack-${label(openstack.region)}` : "openstack";
    default: {
      const unhandled: never = node;
      throw new Error(`no default site for ${JSON.stringify(unhandled)}`);
    }
  }
}

/** The node's site: given, or its platform's default. */
export function siteOf(
  node: RawNode,
  oci: RawOci | undefined,
  openstack: RawOpenstack | undefined,
): string {
  return node.site ?? defaultSite(node, oci, openstack);
}

/** True for platforms whose network (and resolvers, NTP) the platform itself configures. */
function isCloud(node: RawNode): boolean {
  return node.platform === "oci" || node.platform === "openstack";
}

/**
 * A node's resolvers and NTP servers, each list taken from the first place that sets it: the node,
 * its site, then the cluster, except that cloud nodes do not inherit the cluster's lists (a
 * machine-config resolver replaces the one the platform hands out, which on a cloud is the one that
 * resolves its internal names).
 */
export function nodeResolvers(node: RawNode, cluster: RawCluster, site: string): NodeResolvers {
  const siteSettings = cluster.sites?.[site];
  const clusterNetwork = isCloud(node) ? {} : (cluster.network ?? {});
  const pick = (key: "nameservers" | "searchDomains" | "ntpServers") =>
    node[key] ?? siteSettings?.[key] ?? clusterNetwork[key] ?? [];
  return {
    nameservers: pick("nameservers"),
    searchDomains: pick("searchDomains"),
    ntpServers: pick("ntpServers"),
  };
}

/** A DNS record's type: given, else AAAA when its first value is an IPv6 address, A otherwise. */
export function recordType(record: {
  readonly type?: "A" | "AAAA" | "CNAME" | "TXT";
  readonly values: readonly string[];
}): "A" | "AAAA" | "CNAME" | "TXT" {
  return record.type ?? (ipFamily(record.values[0] ?? "") === 6 ? "AAAA" : "A");
}

/** The static network block, on the platforms that have one (Proxmox, bare metal). */
export function staticNetwork(node: RawNode) {
  return node.platform === "proxmox" || node.platform === "baremetal" ? node.network : undefined;
}

/** The static addresses of a Proxmox or bare-metal node (without prefixes). */
export function staticAddresses(node: RawNode): string[] {
  return (staticNetwork(node)?.addresses ?? [])
    .map((a) => parseCidr(a)?.ip)
    .filter((a) => a !== undefined);
}

/** An address a node claims as its own in the stack file, and the key that gives it. */
export interface ClaimedAddress {
  /** The address (without prefix), as written. */
  readonly ip: string;
  readonly path: KeyPath;
  /** `nodes[1].network.addresses[0]`, for messages. */
  readonly key: string;
}

/**
 * Every fixed address a node claims, in stack-file order: its static addresses, its bare-metal
 * address, its OCI private IP, its OpenStack fixed IPs.
 */
export function claimedAddresses({ index, node }: IndexedNode): ClaimedAddress[] {
  const owner = `nodes[${index}]`;
  const claimed: ClaimedAddress[] = [];
  staticNetwork(node)?.addresses.forEach((address, i) => {
    const ip = parseCidr(address)?.ip;
    if (ip) {
      const path = ["nodes", index, "network", "addresses", i];
      claimed.push({ ip, path, key: `${owner}.network.addresses[${i}]` });
    }
  });
  const fixed: [string | undefined, string][] =
    node.platform === "baremetal"
      ? [[node.baremetal.address, "baremetal.address"]]
      : node.platform === "oci"
        ? [[node.oci?.privateIp, "oci.privateIp"]]
        : node.platform === "openstack"
          ? [
              [node.openstack?.fixedIp, "openstack.fixedIp"],
              [node.openstack?.fixedIp6, "openstack.fixedIp6"],
            ]
          : [];
  for (const [ip, key] of fixed) {
    if (ip) claimed.push({ ip, path: ["nodes", index, ...key.split(".")], key: `${owner}.${key}` });
  }
  return claimed;
}

/**
 * The node IPs a static node's kubelet reports: its first address of each service family, primary
 * first. Missing families are skipped (a rule reports a node without a primary-family address).
 */
export function kubeletAddresses(addresses: readonly string[], families: readonly IpFamily[]) {
  return families
    .map((family) => addresses.find((a) => ipFamily(a) === family))
    .filter((a): a is string => a !== undefined);
}

/**
 * The addresses a node is known to connect from, or undefined when one is known only once the
 * machine exists (a DHCP or public IP): firewalls of other sites let these in.
 */
export function knownSourceAddresses(node: RawNode, oci: RawOci | undefined): string[] | undefined {
  switch (node.platform) {
    case "proxmox":
    case "baremetal":
      return staticAddresses(node);
    case "oci": {
      if (node.oci?.assignPublicIp ?? oci?.assignPublicIp) return undefined;
      const known = [node.oci?.privateIp, node.oci?.ipv6Address].filter((a) => a !== undefined);
      return known.length > 0 ? known : undefined;
    }
    case "openstack": {
      const known = [node.openstack?.fixedIp, node.openstack?.fixedIp6].filter(
        (a) => a !== undefined,
      );
      return known.length > 0 ? known : undefined;
    }
    default: {
      const unhandled: never = node;
      throw new Error(`no source addresses for ${JSON.stringify(unhandled)}`);
    }
  }
}
