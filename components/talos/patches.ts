// Talos machine-config patch builders. Each returns one document (a v1alpha1 fragment or a Talos 1.13
// network document); renderPatches turns a list into the YAML strings `getConfiguration` takes.
// Pure: no resources, no Outputs.
import { parseAllDocuments, stringify } from "yaml";
import { hostPrefix, ipFamily } from "../net/addresses";
import type { ClusterSpec, NodeNetworkSpec, NodeResolvers, NodeSpec } from "../spec/types";
import { metadataDenyPatch } from "./metadataDeny";

/** One config document or v1alpha1 fragment. */
export type ConfigDocument = Record<string, unknown>;

/** The alias given to a node's primary NIC when it is selected by MAC. */
const PRIMARY_LINK_ALIAS = "net0";

const doc = (kind: string, body: Record<string, unknown>): ConfigDocument => ({
  apiVersion: "v1alpha1",
  kind,
  ...body,
});

/** A static hostname. `auto: off` because generated 1.12+ configs carry `auto: stable`, and a merged document may not hold both sources. */
export function hostnameDocument(hostname: string): ConfigDocument {
  return doc("HostnameConfig", { hostname, auto: "off" });
}

/** Names the NIC with `mac` as `alias`, so later documents need not know the kernel's interface name. */
export function linkAliasDocument(alias: string, mac: string): ConfigDocument {
  return doc("LinkAliasConfig", {
    name: alias,
    selector: { match: `mac(link.permanent_addr) == "${mac.toLowerCase()}"` },
  });
}

/** The link the node's network documents configure: the MAC alias, or the named interface. */
function linkName(network: NodeNetworkSpec): string {
  if (network.mac) return PRIMARY_LINK_ALIAS;
  if (network.interface) return network.interface;
  throw new Error(
    "a node network needs a mac or an interface (validation should have caught this)",
  );
}

/** Static addresses and default routes on the node's link. */
export function linkDocument(network: NodeNetworkSpec): ConfigDocument {
  const routes = [network.gateway, network.gateway6]
    .filter((g): g is string => g !== undefined)
    .map((gateway) => ({ gateway }));
  return doc("LinkConfig", {
    name: linkName(network),
    up: true,
    addresses: network.addresses.map((address) => ({ address })),
    ...(routes.length > 0 ? { routes } : {}),
    ...(network.mtu !== undefined ? { mtu: network.mtu } : {}),
  });
}

/** A layer-2 VIP for the Kubernetes API, announced by one control plane at a time. */
function vipDocument(vip: string, link: string): ConfigDocument {
  return doc("Layer2VIPConfig", { name: vip, link });
}

/** DNS servers and search domains. */
function resolverDocument(
  nameservers: readonly string[],
  searchDomains: readonly string[],
): ConfigDocument {
  return doc("ResolverConfig", {
    ...(nameservers.length > 0 ? { nameservers: nameservers.map((address) => ({ address })) } : {}),
    ...(searchDomains.length > 0 ? { searchDomains: { domains: [...searchDomains] } } : {}),
  });
}

/** NTP servers. */
function timeSyncDocument(servers: readonly string[]): ConfigDocument {
  return doc("TimeSyncConfig", { ntp: { servers: [...servers] } });
}

/** The install disk and the installer image (used by installs and as the upgrade reference). */
function installPatch(disk: string, image: string): ConfigDocument {
  return { machine: { install: { disk, image } } };
}

/** Extra names on the Talos API and Kubernetes API certificates. */
function certSansPatch(sans: readonly string[]): ConfigDocument {
  return { machine: { certSANs: [...sans] }, cluster: { apiServer: { certSANs: [...sans] } } };
}

/** CNI, kube-proxy and subnets. Talos runs no CNI for `cilium` (installed by you) or `none`. */
export function clusterNetworkPatch(network: ClusterSpec["network"]): ConfigDocument {
  return {
    cluster: {
      network: {
        cni: { name: network.cni === "flannel" ? "flannel" : "none" },
        ...(network.podSubnets ? { podSubnets: [...network.podSubnets] } : {}),
        ...(network.serviceSubnets ? { serviceSubnets: [...network.serviceSubnets] } : {}),
      },
      ...(network.kubeProxy ? {} : { proxy: { disabled: true } }),
    },
  };
}

/** Lets workloads run on control planes (clusters without workers). */
function schedulingPatch(allow: boolean): ConfigDocument {
  return { cluster: { allowSchedulingOnControlPlanes: allow } };
}

/** Kubernetes node labels. */
function nodeLabelsPatch(labels: Readonly<Record<string, string>>): ConfigDocument {
  return { machine: { nodeLabels: { ...labels } } };
}

/** The certificate SANs a cluster needs: its endpoint, its VIP, and any extras, once each. */
function clusterSans(cluster: ClusterSpec): string[] {
  return [
    ...new Set([cluster.endpoint, ...(cluster.vip ? [cluster.vip] : []), ...cluster.certSANs]),
  ];
}

/**
 * KubeSpan: a WireGuard mesh between every node (UDP 51820), peers found through Talos' discovery
 * service, so nodes at different sites reach each other's addresses without routes between them.
 */
function kubeSpanDocuments(): ConfigDocument[] {
  return [
    doc("KubeSpanConfig", { enabled: true }),
    // KubeSpan finds its peers through cluster discovery (on by default; stated, not assumed).
    { cluster: { discovery: { enabled: true } } },
  ];
}

/** Pins the node IPs the kubelet reports (the health check finds nodes by them). */
function kubeletNodeIpPatch(addresses: readonly string[]): ConfigDocument {
  return { machine: { kubelet: { nodeIP: { validSubnets: addresses.map(hostPrefix) } } } };
}

/**
 * The address a control plane's etcd must advertise to its peers, where Talos' default could pick
 * another one. Without `cluster.etcd.advertisedSubnets`, etcd advertises only the node's first routed
 * address, and Talos orders addresses IPv4 first, then by value (v1.13: the etcd spec controller takes
 * `advertisedIPs[:1]`; addressutil's compare). The health check's "etcd members to be control plane
 * nodes" wants every member's peer address among the addresses it names control planes by (their
 * kubelet addresses), so a dual-stack control plane whose kubelet is pinned to its IPv6 address would
 * fail it forever. Pinned: an IPv6 kubelet address (IPv4, SLAAC or temporary addresses may sort first)
 * and an IPv4 one that is not the node's lowest static IPv4 address. A cloud VNIC or port holds one
 * private IPv4 address, so an IPv4 cloud node needs no pin. Talos leaves the VIP out by itself.
 */
export function etcdAdvertisedAddress(node: NodeSpec): string | undefined {
  if (node.role !== "controlplane") return undefined;
  const cloud = node.platform === "oci" || node.platform === "openstack";
  const address = cloud ? node.declaredKubeletAddress : node.kubeletAddresses[0];
  if (address === undefined) return undefined;
  if (ipFamily(address) === 6) return address;
  if (cloud) return undefined;
  const statics =
    node.network?.addresses.map((cidr) => cidr.split("/")[0]) ??
    (node.platform === "baremetal" ? [node.baremetal.address] : []);
  return statics.some((other) => ipFamily(other) === 4 && ipv4Value(other) < ipv4Value(address))
    ? address
    : undefined;
}

const ipv4Value = (address: string): number =>
  address.split(".").reduce((value, octet) => value * 256 + Number(octet), 0);

/** Makes etcd advertise exactly `address` (Talos filters the node's current addresses by it). */
function etcdAdvertisedSubnetsPatch(address: string): ConfigDocument {
  return { cluster: { etcd: { advertisedSubnets: [hostPrefix(address)] } } };
}

/**
 * True when one of the operator's patches sets `cluster.etcd.advertisedSubnets`: Talos appends
 * lists when it merges patches, so a generated pin beside it would advertise both.
 */
function patchesSetAdvertisedSubnets(patches: readonly string[]): boolean {
  return patches.some((text) =>
    parseAllDocuments(text).some((document) => {
      const value: unknown = document.toJS();
      const cluster = (value as { cluster?: { etcd?: Record<string, unknown> } } | null)?.cluster;
      return cluster?.etcd?.advertisedSubnets !== undefined;
    }),
  );
}

/**
 * The user volume `data`: the node's whole extra disk (OpenStack's data volume), formatted by Talos
 * and mounted at /var/mnt/data. `disk` volumes take no sizes (a `partition` would need a minSize).
 * The disk is the Cinder volume itself, by its serial: Nova gives an attached volume its id as the
 * disk's serial, which virtio-blk cuts to 20 characters (virtio-scsi keeps it whole). `!system_disk`
 * would also match the config drive (writable on some clouds) or a flavor's ephemeral disk, and
 * Talos refuses a `disk` volume whose selector matches more than one disk.
 */
export function dataVolumeDocument(volumeId: string): ConfigDocument {
  const serials = [...new Set([volumeId.slice(0, VIRTIO_BLK_SERIAL_LENGTH), volumeId])];
  return doc("UserVolumeConfig", {
    name: DATA_VOLUME_NAME,
    volumeType: "disk",
    provisioning: {
      diskSelector: {
        match: serials.map((s) => `disk.serial == ${JSON.stringify(s)}`).join(" || "),
      },
    },
  });
}

/** How much of a volume id a virtio-blk disk's serial keeps (VIRTIO_BLK_ID_BYTES). */
const VIRTIO_BLK_SERIAL_LENGTH = 20;

/** What a node's config needs from its platform's resources, known once they exist. */
export interface MachineFacts {
  /** The Cinder id of an OpenStack node's data volume (`openstack.dataVolumeSize`). */
  readonly dataVolumeId?: string;
}

/** The name of the user volume on a node's extra data disk (mounted at /var/mnt/<name>). */
const DATA_VOLUME_NAME = "data";

/** A node's resolver and time documents; none where it keeps the platform's or Talos' defaults. */
function resolverDocuments(resolvers: NodeResolvers): ConfigDocument[] {
  const { nameservers, searchDomains, ntpServers } = resolvers;
  return [
    ...(nameservers.length + searchDomains.length > 0
      ? [resolverDocument(nameservers, searchDomains)]
      : []),
    ...(ntpServers.length > 0 ? [timeSyncDocument(ntpServers)] : []),
  ];
}

/** Documents every node of the cluster gets, before role or node specifics. */
export function clusterDocuments(cluster: ClusterSpec): ConfigDocument[] {
  return [
    certSansPatch(clusterSans(cluster)),
    clusterNetworkPatch(cluster.network),
    ...(cluster.network.connectivity === "kubespan" ? kubeSpanDocuments() : []),
  ];
}

/** True when the kubelet's node IPs must be pinned: more than one address, or SLAAC/DHCP extras. */
function pinsKubeletAddresses(node: NodeSpec): boolean {
  switch (node.platform) {
    case "proxmox":
      return node.network.addresses.length > 1;
    case "baremetal":
      // A bare-metal NIC may also carry SLAAC or DHCP addresses the kubelet could pick instead.
      return true;
    case "oci":
    case "openstack":
      return false;
    default: {
      const unhandled: never = node;
      throw new Error(`no kubelet rule for ${JSON.stringify(unhandled)}`);
    }
  }
}

/** The node's primary link, when its config names it: the documents that set it up, and its name. */
function primaryLink(node: NodeSpec): { documents: ConfigDocument[]; link: string } | undefined {
  switch (node.platform) {
    case "proxmox":
    case "baremetal": {
      const network = node.network;
      if (!network) return undefined;
      const alias = network.mac ? [linkAliasDocument(PRIMARY_LINK_ALIAS, network.mac)] : [];
      return { documents: [...alias, linkDocument(network)], link: linkName(network) };
    }
    case "openstack":
      // Addresses come from the platform (DHCP, metadata); the alias only gives the VIP a link.
      return {
        documents: [linkAliasDocument(PRIMARY_LINK_ALIAS, node.openstack.mac)],
        link: PRIMARY_LINK_ALIAS,
      };
    case "oci":
      return undefined;
    default: {
      const unhandled: never = node;
      throw new Error(`no link rule for ${JSON.stringify(unhandled)}`);
    }
  }
}

/** Documents specific to one node: identity, disk, image, network, VIP. */
export function nodeDocuments(
  cluster: ClusterSpec,
  node: NodeSpec,
  installerImage: string,
  facts: MachineFacts = {},
): ConfigDocument[] {
  const documents: ConfigDocument[] = [
    hostnameDocument(node.name),
    installPatch(node.installDisk, installerImage),
    ...resolverDocuments(node.resolvers),
  ];
  if (
    (node.platform === "proxmox" || node.platform === "baremetal") &&
    pinsKubeletAddresses(node) &&
    node.kubeletAddresses.length > 0
  ) {
    documents.push(kubeletNodeIpPatch(node.kubeletAddresses));
  }
  if (node.platform === "openstack" && node.openstack.dataVolumeSize !== undefined) {
    if (facts.dataVolumeId === undefined)
      throw new Error(`${node.name}: its data volume's id is needed for its UserVolumeConfig`);
    documents.push(dataVolumeDocument(facts.dataVolumeId));
  }
  if (node.role === "controlplane")
    documents.push(schedulingPatch(cluster.allowSchedulingOnControlPlanes));
  // Talos applies extraManifests from the control planes (appending lists of several patches).
  if (node.role === "controlplane" && cluster.servingCertApprover)
    documents.push({ cluster: { extraManifests: [cluster.servingCertApprover] } });
  // Control planes apply the cluster's manifests: the policy keeping pods off the metadata service.
  if (node.role === "controlplane" && cluster.network.cilium?.denyPodMetadataAccess)
    documents.push(metadataDenyPatch());
  const advertised = etcdAdvertisedAddress(node);
  if (
    advertised !== undefined &&
    !patchesSetAdvertisedSubnets([
      ...cluster.patches.all,
      ...cluster.patches[node.role],
      ...node.patches,
    ])
  ) {
    documents.push(etcdAdvertisedSubnetsPatch(advertised));
  }
  if (Object.keys(node.labels).length > 0) documents.push(nodeLabelsPatch(node.labels));
  const primary = primaryLink(node);
  if (primary) {
    documents.push(...primary.documents);
    if (node.role === "controlplane" && cluster.vip) {
      documents.push(vipDocument(cluster.vip, primary.link));
    }
  }
  return documents;
}

/**
 * Documents already rendered, by their JSON: most documents are the same on every node (the cluster's
 * network, SANs, resolvers), and rendering YAML is the costly part of building a node's patches.
 * Bounded: cleared when full, so the documents unique to one node never pile up.
 */
const rendered = new Map<string, string>();
const RENDERED_MAX = 256;

/** Serializes documents, one YAML patch per document. */
function renderPatches(documents: readonly ConfigDocument[]): string[] {
  return documents.map((document) => {
    const key = JSON.stringify(document);
    let yaml = rendered.get(key);
    if (yaml === undefined) {
      yaml = stringify(document);
      if (rendered.size >= RENDERED_MAX) rendered.clear();
      rendered.set(key, yaml);
    }
    return yaml;
  });
}

/**
 * Every patch for one node, in merge order: generated cluster documents, generated node documents,
 * documents of foundation services (the Flux handoff on control planes), then the stack file's
 * cluster-wide, role and node patches, so an operator's patch always has the last word.
 */
export function machinePatches(
  cluster: ClusterSpec,
  node: NodeSpec,
  installerImage: string,
  servicePatches: readonly ConfigDocument[] = [],
  facts: MachineFacts = {},
): string[] {
  return [
    ...renderPatches([
      ...clusterDocuments(cluster),
      ...nodeDocuments(cluster, node, installerImage, facts),
      ...servicePatches,
    ]),
    ...cluster.patches.all,
    ...cluster.patches[node.role],
    ...node.patches,
  ];
}
