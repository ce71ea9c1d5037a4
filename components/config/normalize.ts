// The normalise phase: a complete stack file (complete.ts) into the PlatformSpec the components
// receive. Defaults are applied here, once; nothing here can fail, since the rules ran first.
import {
  DEFAULT_BACKUP_NAMESPACE,
  DEFAULT_RETENTION_DAYS,
  TALOS_BACKUP_IMAGE,
  defaultDestination,
  parseDestination,
  schedulePeriodMs,
} from "./etcdBackups";
import { stringify } from "yaml";
import { enablesServingCertRotation, SERVING_CERT_APPROVER_MANIFEST } from "../talos/servingCerts";
import { canonicalIp, deriveMac, fqdn, hostPort, hostPrefix, ipFamily } from "../net";
import type {
  CiliumSpec,
  ClusterSpec,
  NodeNetworkSpec,
  NodeSpec,
  OciSpec,
  OpenstackSpec,
  PlatformSpec,
  PoolPlacement,
  ProxmoxSpec,
  EtcdBackupsSpec,
  ServicesSpec,
  SiteSpec,
} from "../spec/types";
import type { CompleteCluster, CompleteNode, CompleteStack, RawNodeNetwork } from "./complete";
import {
  DEFAULT_OCI_SHAPE,
  kubeletAddresses,
  knownSourceAddresses,
  nodeResolvers,
  ociArchitecture,
  recordType,
  serviceFamilies,
  siteOf,
  staticAddresses,
} from "./derived";
import type {
  RawCluster,
  RawDns,
  RawEtcdBackups,
  RawFlux,
  RawGcp,
  RawNode,
  RawOci,
  RawOpenbao,
  RawOpenstack,
  RawPatch,
  RawProxmox,
} from "./schema";

/**
 * The GCP KMS plugin's image in the openbao-plugins collection (named like its sibling
 * ghcr.io/openbao/openbao-plugin-kms-pkcs11): OpenBao 2.7 removed the built-in gcpckms seal.
 */
export const OPENBAO_GCP_KMS_PLUGIN_IMAGE = "ghcr.io/openbao/openbao-plugin-kms-gcp";

/** The whole spec of a complete stack. */
export function normalizeStack(stack: CompleteStack): PlatformSpec {
  const { proxmox, oci, openstack } = stack;
  const rawNodes = stack.nodes.map((entry) => entry.node);
  const cluster = normalizeCluster(stack.cluster, rawNodes, oci, openstack);
  const pools = poolIndexes(rawNodes);
  return {
    cluster,
    proxmox: proxmox && normalizeProxmox(proxmox),
    oci: oci && normalizeOci(oci),
    openstack: openstack && normalizeOpenstack(openstack),
    services: normalizeServices(cluster, stack),
    nodes: stack.nodes.map((entry, i) =>
      normalizeNode(entry, pools[i], cluster, stack.cluster.raw),
    ),
  };
}

/** Each node's position in its pool (the nodes of one platform and role, in stack order). */
export function poolIndexes(nodes: readonly RawNode[]): number[] {
  const pools = new Map<string, number>();
  return nodes.map((node) => {
    const pool = `${node.platform}/${node.role}`;
    const poolIndex = pools.get(pool) ?? 0;
    pools.set(pool, poolIndex + 1);
    return poolIndex;
  });
}

/** The foundation services, each present when its stack key is (OpenBao's unseal key needs GCP). */
export function normalizeServices(
  cluster: ClusterSpec,
  services: {
    readonly gcp?: RawGcp;
    readonly openbao?: RawOpenbao;
    readonly dns?: RawDns;
    readonly flux?: RawFlux;
    readonly etcdBackups?: RawEtcdBackups;
    readonly backend?: unknown;
    /** The values as read (a rule's input): the backend when `backend` is not given. */
    readonly raw?: Readonly<Record<string, unknown>>;
  },
): ServicesSpec {
  const { gcp, openbao, dns, flux, etcdBackups } = services;
  const endpointIsName = ipFamily(cluster.endpoint) === undefined;
  return {
    gcp,
    openbao: openbao &&
      gcp && {
        keyRing: openbao.keyRing ?? `${cluster.name}-openbao`,
        cryptoKey: openbao.cryptoKey ?? "unseal",
        location: openbao.location ?? gcp.region,
        rotationPeriod: openbao.rotationPeriod ?? "7776000s",
        credentials: openbao.credentials ?? "serviceAccountKey",
        kubernetesServiceAccount: {
          namespace: openbao.kubernetesServiceAccount?.namespace ?? "openbao",
          name: openbao.kubernetesServiceAccount?.name ?? "openbao",
        },
        workloadIdentityPoolId: openbao.workloadIdentityPoolId,
        serviceAccountEmail: openbao.serviceAccountEmail,
        ...(openbao.kmsPlugin
          ? {
              kmsPlugin: {
                image: openbao.kmsPlugin.image ?? OPENBAO_GCP_KMS_PLUGIN_IMAGE,
                version: openbao.kmsPlugin.version,
                sha256sum: openbao.kmsPlugin.sha256sum,
              },
            }
          : {}),
      },
    dns: dns && {
      zone: dns.zone,
      domain: fqdn(dns.domain),
      ttl: dns.ttl ?? 300,
      endpointName: endpointIsName ? fqdn(cluster.endpoint) : undefined,
      records: (dns.records ?? []).map((record) => ({
        name: fqdn(record.name),
        type: recordType(record),
        values: record.values,
      })),
    },
    flux: flux && {
      version: flux.version,
      repository: flux.repository,
      branch: flux.branch ?? "main",
      path: flux.path,
      knownHosts: flux.knownHosts,
      ssh: flux.repository.startsWith("ssh://"),
    },
    etcdBackups:
      etcdBackups &&
      normalizeEtcdBackups(etcdBackups, cluster.name, services.backend ?? services.raw?.backend),
  };
}

/**
 * The backup settings with their defaults; undefined when the destination cannot be settled (the
 * etcdBackups rule reports why, so a complete stack always has one).
 */
export function normalizeEtcdBackups(
  raw: RawEtcdBackups,
  clusterName: string,
  backend: unknown,
): EtcdBackupsSpec | undefined {
  const url = raw.destination ?? defaultDestination(backend, clusterName);
  const destination = url === undefined ? undefined : parseDestination(url);
  if (destination === undefined || typeof destination === "string") return undefined;
  return {
    schedule: raw.schedule.trim().replace(/\s+/g, " "),
    periodMs: schedulePeriodMs(raw.schedule),
    retentionDays: raw.retentionDays ?? DEFAULT_RETENTION_DAYS,
    destination,
    ageRecipient: raw.encryption.age,
    namespace: raw.namespace ?? DEFAULT_BACKUP_NAMESPACE,
    image: raw.image ?? TALOS_BACKUP_IMAGE,
  };
}

/** Patches as YAML strings: strings pass through, inline mappings are serialized. */
function patchText(patches: readonly RawPatch[] | undefined): string[] {
  return (patches ?? []).map((patch) => (typeof patch === "string" ? patch : stringify(patch)));
}

/** Every site with a node: its platforms and the prefixes its nodes connect from. */
function normalizeSites(
  cluster: RawCluster,
  nodes: readonly RawNode[],
  oci: RawOci | undefined,
  openstack: RawOpenstack | undefined,
): Record<string, SiteSpec> {
  const sites: Record<string, SiteSpec> = {};
  for (const node of nodes) {
    const name = siteOf(node, oci, openstack);
    const given = cluster.sites?.[name]?.cidrs;
    const known = knownSourceAddresses(node, oci);
    const previous = sites[name];
    const prefixes = (known ?? []).map(hostPrefix);
    sites[name] = {
      name,
      platforms: [...new Set([...(previous?.platforms ?? []), node.platform])],
      cidrs: given ?? [...(previous?.cidrs ?? []), ...prefixes],
      controlPlaneCidrs: given ?? [
        ...(previous?.controlPlaneCidrs ?? []),
        ...(node.role === "controlplane" ? prefixes : []),
      ],
    };
  }
  return sites;
}

/** The Cilium settings, with Cilium's defaults; the metadata deny is on when a node is in a cloud. */
function normalizeCilium(
  cilium: NonNullable<RawCluster["network"]>["cilium"],
  nodes: readonly RawNode[],
): CiliumSpec {
  const cloud = nodes.some((n) => n.platform === "oci" || n.platform === "openstack");
  return {
    routingMode: cilium?.routingMode ?? "tunnel",
    underlayProtocol: cilium?.underlayProtocol ?? "ipv4",
    podRangesRoutedBetweenSites: cilium?.podRangesRoutedBetweenSites ?? false,
    denyPodMetadataAccess: cilium?.denyPodMetadataAccess ?? cloud,
  };
}

/** The cluster-wide settings; `nodes` are the parsed nodes (their sites and roles count). */
export function normalizeCluster(
  complete: CompleteCluster,
  nodes: readonly RawNode[],
  oci: RawOci | undefined,
  openstack: RawOpenstack | undefined,
): ClusterSpec {
  const { raw: cluster, endpoint } = complete;
  const talosVersion = `v${complete.talosVersion.version}`;
  const network = cluster.network ?? {};
  return {
    name: cluster.name,
    endpoint,
    endpointUrl: `https://${hostPort(endpoint, 6443)}`,
    vip: cluster.vip,
    talosVersion,
    kubernetesVersion: complete.kubernetesVersion.version,
    configContract: complete.configContract ? `v${complete.configContract.version}` : talosVersion,
    imageFactory: {
      schematicId: cluster.imageFactory?.schematicId,
      extensions: cluster.imageFactory?.extensions ?? [],
      platformExtensions: cluster.imageFactory?.platformExtensions ?? {},
      architectureExtensions: cluster.imageFactory?.architectureExtensions ?? {},
      extraKernelArgs: cluster.imageFactory?.extraKernelArgs ?? [],
    },
    network: {
      nameservers: network.nameservers ?? [],
      searchDomains: network.searchDomains ?? [],
      ntpServers: network.ntpServers ?? [],
      podSubnets: network.podSubnets,
      serviceSubnets: network.serviceSubnets,
      cni: network.cni ?? "flannel",
      kubeProxy: network.kubeProxy ?? true,
      connectivity: complete.connectivity,
      ...((network.cni ?? "flannel") === "cilium"
        ? { cilium: normalizeCilium(network.cilium, nodes) }
        : {}),
    },
    sites: normalizeSites(cluster, nodes, oci, openstack),
    rollout: { maxUnavailableWorkers: cluster.rollout?.maxUnavailableWorkers ?? 1 },
    allowSchedulingOnControlPlanes:
      cluster.allowSchedulingOnControlPlanes ?? nodes.every((n) => n.role === "controlplane"),
    certSANs: cluster.certSANs ?? [],
    ...(cluster.kubeletServingCertApprover !== false &&
    enablesServingCertRotation([
      ...patchText(cluster.patches?.all),
      ...patchText(cluster.patches?.controlplane),
      ...patchText(cluster.patches?.worker),
      ...nodes.flatMap((node) => patchText(node.patches)),
    ])
      ? { servingCertApprover: SERVING_CERT_APPROVER_MANIFEST }
      : {}),
    patches: {
      all: patchText(cluster.patches?.all),
      controlplane: patchText(cluster.patches?.controlplane),
      worker: patchText(cluster.patches?.worker),
    },
    applyMode: cluster.applyMode ?? "staged_if_needing_reboot",
    protectControlPlanes: cluster.protectControlPlanes ?? true,
    health: { enabled: cluster.health?.enabled ?? true, timeout: cluster.health?.timeout ?? "10m" },
    caRotation: {
      ...(cluster.caRotation?.talos ? { talos: cluster.caRotation.talos } : {}),
      ...(cluster.caRotation?.kubernetes ? { kubernetes: cluster.caRotation.kubernetes } : {}),
    },
  };
}

function normalizeProxmox(proxmox: RawProxmox): ProxmoxSpec {
  return {
    endpoint: proxmox.endpoint,
    insecure: proxmox.insecure ?? false,
    hosts: proxmox.hosts.map((h) => ({
      name: h.name,
      imageDatastore: h.imageDatastore ?? "local",
    })),
    datastore: proxmox.datastore ?? "local-lvm",
    bridge: proxmox.bridge ?? "vmbr0",
    cpuType: proxmox.cpuType ?? "x86-64-v2-AES",
    imageFormat: proxmox.imageFormat ?? "qcow2",
    ssh: proxmox.ssh && { username: proxmox.ssh.username, agent: proxmox.ssh.agent ?? false },
    sshAddresses: Object.fromEntries(
      proxmox.hosts.flatMap((h) => (h.sshAddress ? [[h.name, h.sshAddress]] : [])),
    ),
  };
}

function normalizeOci(oci: RawOci): OciSpec {
  return {
    region: oci.region,
    compartmentId: oci.compartmentId,
    subnetId: oci.subnetId,
    nsgIds: oci.nsgIds ?? [],
    availabilityDomains: oci.availabilityDomains,
    shape: oci.shape ?? DEFAULT_OCI_SHAPE,
    architecture: ociArchitecture(oci),
    image: oci.image,
    assignPublicIp: oci.assignPublicIp ?? false,
    hostnameLabel: oci.hostnameLabel ?? true,
    manageNsgs: oci.manageNsgs ?? true,
    apiAllowedCidrs: oci.apiAllowedCidrs ?? ["0.0.0.0/0", "::/0"],
    freeformTags: oci.freeformTags ?? {},
  };
}

function normalizeOpenstack(openstack: RawOpenstack): OpenstackSpec {
  return {
    region: openstack.region,
    networkId: openstack.networkId,
    subnetId: openstack.subnetId,
    subnet6Id: openstack.subnet6Id,
    flavor: openstack.flavor,
    availabilityZones: openstack.availabilityZones,
    volumeAvailabilityZone: openstack.volumeAvailabilityZone,
    controlPlaneServerGroup: openstack.controlPlaneServerGroup ?? "anti-affinity",
    image: openstack.image ?? { upload: true },
    apiAllowedCidrs: openstack.apiAllowedCidrs ?? ["0.0.0.0/0", "::/0"],
  };
}

/** A cloud node's pool position and, when the stack lists domains or names one, its zone. */
function placement(
  poolIndex: number,
  zones: readonly string[] | undefined,
  explicit: string | undefined,
): PoolPlacement {
  return { poolIndex, zone: explicit ?? zones?.[poolIndex % zones.length] };
}

function normalizeNetwork(network: RawNodeNetwork, mac: string | undefined): NodeNetworkSpec {
  return {
    addresses: network.addresses,
    gateway: network.gateway,
    gateway6: network.gateway6,
    mac: mac?.toLowerCase(),
    interface: network.interface,
    mtu: network.mtu,
  };
}

/** One node's spec; `poolIndex` is its position in its pool (see poolIndexes). */
export function normalizeNode(
  entry: CompleteNode,
  poolIndex: number,
  cluster: ClusterSpec,
  rawCluster: RawCluster,
): NodeSpec {
  const { index, node } = entry;
  const site = siteOf(
    node,
    entry.platform === "oci" ? entry.settings : undefined,
    entry.platform === "openstack" ? entry.settings : undefined,
  );
  const families = serviceFamilies(rawCluster);
  const common = {
    name: node.name,
    role: node.role,
    key: `nodes[${index}]`,
    // OpenStack instances see their boot volume as a virtio-blk disk.
    installDisk: node.installDisk ?? (node.platform === "openstack" ? "/dev/vda" : "/dev/sda"),
    labels: node.labels ?? {},
    patches: patchText(node.patches),
    site,
    resolvers: nodeResolvers(node, rawCluster, site),
  };
  switch (entry.platform) {
    case "proxmox": {
      const vm = entry.node.proxmox;
      const proxmox = normalizeProxmox(entry.settings);
      const mac = (entry.network.mac ?? deriveMac(`${cluster.name}/${vm.vmId}`)).toLowerCase();
      const network = { ...normalizeNetwork(entry.network, mac), mac };
      return {
        ...common,
        architecture: "amd64",
        platform: "proxmox",
        network,
        // The schema admits only addresses with a prefix.
        talosAddress: network.addresses[0].split("/")[0],
        kubeletAddresses: kubeletAddresses(staticAddresses(node), families),
        proxmox: {
          host: vm.host,
          vmId: vm.vmId,
          cores: vm.cores ?? 2,
          memory: vm.memory ?? 4096,
          diskSize: vm.diskSize ?? 32,
          datastore: vm.datastore ?? proxmox.datastore,
          bridge: vm.bridge ?? proxmox.bridge,
          vlan: vm.vlan,
          cpuType: vm.cpuType ?? proxmox.cpuType,
        },
      };
    }
    case "baremetal": {
      const { network, baremetal } = entry.node;
      return {
        ...common,
        architecture: "amd64",
        platform: "baremetal",
        network: network && normalizeNetwork(network, network.mac),
        talosAddress: baremetal.address,
        kubeletAddresses: kubeletAddresses(
          network ? staticAddresses(node) : [baremetal.address],
          families,
        ),
        baremetal: {
          address: baremetal.address,
          ...(baremetal.maintenanceAddress &&
          canonicalIp(baremetal.maintenanceAddress) !== canonicalIp(baremetal.address)
            ? { maintenanceAddress: baremetal.maintenanceAddress }
            : {}),
          resetOnDestroy: baremetal.resetOnDestroy ?? true,
        },
      };
    }
    case "oci": {
      const oci = normalizeOci(entry.settings);
      const settings = entry.node.oci ?? {};
      const shape = settings.shape ?? oci.shape;
      const assignPublicIp = settings.assignPublicIp ?? oci.assignPublicIp;
      return {
        ...common,
        architecture: oci.architecture,
        platform: "oci",
        pushConfig: entry.node.pushConfig ?? true,
        // The Talos API is reached on a VNIC address, never the public IPv4: that is NAT in front of
        // the VNIC, which Talos on OCI never learns, so its certificate cannot name it.
        declaredAddress: settings.ipv6Address ?? settings.privateIp,
        // The kubelet reports the VNIC's private addresses, never the (NATed) public IP.
        declaredKubeletAddress: families[0] === 6 ? settings.ipv6Address : settings.privateIp,
        placement: placement(poolIndex, oci.availabilityDomains, settings.availabilityDomain),
        oci: {
          shape,
          flex: shape.endsWith(".Flex"),
          ocpus: settings.ocpus ?? 2,
          memoryGbs: settings.memoryGbs ?? 12,
          bootVolumeGbs: settings.bootVolumeGbs ?? 50,
          subnetId: settings.subnetId ?? oci.subnetId,
          privateIp: settings.privateIp,
          assignIpv6: (settings.assignIpv6 ?? false) || settings.ipv6Address !== undefined,
          ipv6Address: settings.ipv6Address,
          assignPublicIp,
          hostnameLabel: oci.hostnameLabel,
          nsgIds: settings.nsgIds ?? oci.nsgIds,
          faultDomain: settings.faultDomain,
        },
      };
    }
    case "openstack": {
      const openstack = normalizeOpenstack(entry.settings);
      const settings = entry.node.openstack ?? {};
      return {
        ...common,
        architecture: "amd64",
        platform: "openstack",
        pushConfig: entry.node.pushConfig ?? true,
        declaredAddress:
          families[0] === 6
            ? (settings.fixedIp6 ?? settings.fixedIp)
            : (settings.fixedIp ?? settings.fixedIp6),
        declaredKubeletAddress: families[0] === 6 ? settings.fixedIp6 : settings.fixedIp,
        placement: placement(poolIndex, openstack.availabilityZones, settings.availabilityZone),
        openstack: {
          flavor: settings.flavor ?? openstack.flavor,
          volumeSize: settings.volumeSize ?? 20,
          volumeType: settings.volumeType,
          dataVolumeSize: settings.dataVolumeSize,
          fixedIp: settings.fixedIp,
          fixedIp6: settings.fixedIp6,
          mac: (settings.mac ?? deriveMac(`${cluster.name}/openstack/${node.name}`)).toLowerCase(),
        },
      };
    }
    default: {
      const unhandled: never = entry;
      throw new Error(`unhandled platform in ${JSON.stringify(unhandled)}`);
    }
  }
}
