// The validated, defaulted stack configuration the components receive (built by
// components/config/normalize.ts), and the platform and role lists. Imports nothing, so every folder
// of components/ can use these types without depending on stack-file validation.

/** Platforms a node can run on. A new platform is a new entry here and a new node schema in config. */
export const PLATFORMS = ["proxmox", "baremetal", "oci", "openstack"] as const;
/** One of {@link PLATFORMS}. */
export type Platform = (typeof PLATFORMS)[number];

/** Node roles. */
export const ROLES = ["controlplane", "worker"] as const;
/** One of {@link ROLES}. */
export type Role = (typeof ROLES)[number];

/** Apply modes for configuration changes (see docs/platforms.md, "Config changes without quorum loss"). */
export type ApplyMode = "auto" | "no_reboot" | "reboot" | "staged" | "staged_if_needing_reboot";

/** A node's resolvers and time servers, after node, site and cluster settings are merged. */
export interface NodeResolvers {
  /** Empty: the platform's own (DHCP, metadata service) or Talos' default. */
  readonly nameservers: readonly string[];
  readonly searchDomains: readonly string[];
  /** Empty: Talos' default (time.cloudflare.com). */
  readonly ntpServers: readonly string[];
}

/** A node's static network settings. */
export interface NodeNetworkSpec {
  /** `192.0.2.11/24`, first one is the node's primary address. */
  readonly addresses: readonly string[];
  readonly gateway?: string;
  readonly gateway6?: string;
  /** Lowercase MAC of the NIC, when known. */
  readonly mac?: string;
  /** The physical link name, when no MAC is known. */
  readonly interface?: string;
  readonly mtu?: number;
}

interface NodeSpecCommon {
  readonly name: string;
  readonly role: Role;
  /** Where the node is in the stack file (`nodes[2]`), for error messages. */
  readonly key: string;
  readonly installDisk: string;
  /** The CPU architecture of its Talos image. */
  readonly architecture: "amd64" | "arm64";
  readonly labels: Readonly<Record<string, string>>;
  /** Per-node patches as YAML strings. */
  readonly patches: readonly string[];
  /** The site the node is at (given, or its platform's default). */
  readonly site: string;
  readonly resolvers: NodeResolvers;
}

interface StaticNodeSpec extends NodeSpecCommon {
  /** The address its Talos API answers on (port 50000) once configured. */
  readonly talosAddress: string;
  /**
   * The node IPs its kubelet reports, pinned with `machine.kubelet.nodeIP` when the node has more than
   * one address (the health check matches nodes by them). First: the one health checks name it by.
   */
  readonly kubeletAddresses: readonly string[];
}

/** Where a cloud node goes: its position in its pool (nodes of one platform and role, in stack order). */
export interface PoolPlacement {
  readonly poolIndex: number;
  /** Set when the stack names it, or names the domains/zones to spread over. */
  readonly zone?: string;
}

interface CloudNodeSpec extends NodeSpecCommon {
  /** Push later config changes over the Talos API. */
  readonly pushConfig: boolean;
  /** The Talos API address when the stack declares it; otherwise the instance's own address. */
  readonly declaredAddress?: string;
  /** The primary-family address its kubelet reports, when the stack fixes it; otherwise the instance's. */
  readonly declaredKubeletAddress?: string;
  readonly placement: PoolPlacement;
}

/** A Proxmox VM node. */
export interface ProxmoxNodeSpec extends StaticNodeSpec {
  readonly platform: "proxmox";
  readonly network: NodeNetworkSpec & { readonly mac: string };
  readonly proxmox: {
    readonly host: string;
    readonly vmId: number;
    readonly cores: number;
    /** MiB. */
    readonly memory: number;
    /** GiB. */
    readonly diskSize: number;
    readonly datastore: string;
    readonly bridge: string;
    readonly vlan?: number;
    readonly cpuType: string;
  };
}

/** A bare-metal node booted into maintenance mode. */
export interface BaremetalNodeSpec extends StaticNodeSpec {
  readonly platform: "baremetal";
  readonly network?: NodeNetworkSpec;
  readonly baremetal: {
    readonly address: string;
    /** Where it answers in maintenance mode, when that differs from `address` (first push only). */
    readonly maintenanceAddress?: string;
    readonly resetOnDestroy: boolean;
  };
}

/** An OCI instance that boots with its config as user data. */
export interface OciNodeSpec extends CloudNodeSpec {
  readonly platform: "oci";
  readonly oci: {
    readonly shape: string;
    /** Flex shapes take ocpus and memory. */
    readonly flex: boolean;
    readonly ocpus: number;
    readonly memoryGbs: number;
    readonly bootVolumeGbs: number;
    readonly subnetId: string;
    readonly privateIp?: string;
    readonly assignIpv6: boolean;
    /** A fixed IPv6 from the subnet's prefix. */
    readonly ipv6Address?: string;
    readonly assignPublicIp: boolean;
    /** Set the VNIC's hostname label (needs DNS on the subnet). */
    readonly hostnameLabel: boolean;
    readonly nsgIds: readonly string[];
    /** Set when given on the node; otherwise spread (see placement). */
    readonly faultDomain?: string;
  };
}

/** An OpenStack instance that boots from a volume with its config as user data on a config drive. */
export interface OpenstackNodeSpec extends CloudNodeSpec {
  readonly platform: "openstack";
  readonly openstack: {
    readonly flavor: string;
    readonly volumeSize: number;
    readonly volumeType?: string;
    readonly dataVolumeSize?: number;
    readonly fixedIp?: string;
    readonly fixedIp6?: string;
    /** The port's MAC, lowercase; the config names the link `net0` by it. */
    readonly mac: string;
  };
}

/** Any node. */
export type NodeSpec = ProxmoxNodeSpec | BaremetalNodeSpec | OciNodeSpec | OpenstackNodeSpec;

/** Nodes that receive their config as user data at creation. */
export type CloudNodeSpecs = OciNodeSpec | OpenstackNodeSpec;

/** A CPU architecture of Talos images. */
export type Architecture = "amd64" | "arm64";

/** Image Factory settings. */
export interface ImageFactorySpec {
  /** A fixed schematic ID, used when no extensions or kernel args are listed. */
  readonly schematicId?: string;
  readonly extensions: readonly string[];
  readonly platformExtensions: Readonly<Partial<Record<Platform, readonly string[]>>>;
  readonly architectureExtensions: Readonly<Partial<Record<Architecture, readonly string[]>>>;
  readonly extraKernelArgs: readonly string[];
}

/** How the sites of a cluster reach each other. */
export type Connectivity = "single" | "kubespan" | "routed";

/** One site: where some of the nodes are. */
export interface SiteSpec {
  readonly name: string;
  /** The platforms of the site's nodes. */
  readonly platforms: readonly Platform[];
  /** Prefixes the site's nodes connect from, for other sites' firewalls (given, or their fixed addresses). */
  readonly cidrs: readonly string[];
  /** The same for its control planes only (the given `cidrs` when given). */
  readonly controlPlaneCidrs: readonly string[];
}

/** What the program knows of the Cilium you install (`cni: cilium`). */
export interface CiliumSpec {
  /** Cilium's `routingMode`: VXLAN between nodes, or pod addresses routed by the network. */
  readonly routingMode: "tunnel" | "native";
  /** Cilium's `underlayProtocol`: the node-address family VXLAN travels over. */
  readonly underlayProtocol: "ipv4" | "ipv6";
  /** The operator routes the pod ranges between sites. */
  readonly podRangesRoutedBetweenSites: boolean;
  /** Control planes apply a policy denying pods the cloud metadata service. */
  readonly denyPodMetadataAccess: boolean;
}

/** Cluster-wide settings. */
export interface ClusterSpec {
  readonly name: string;
  /** Host part of the Kubernetes API endpoint (DNS name or IP). */
  readonly endpoint: string;
  /** `https://<endpoint>:6443`. */
  readonly endpointUrl: string;
  readonly vip?: string;
  /** `v1.13.9`. */
  readonly talosVersion: string;
  /** `1.36.3` (no `v`). */
  readonly kubernetesVersion: string;
  /** `v1.13.9`: the Talos version whose config defaults are followed. */
  readonly configContract: string;
  readonly imageFactory: ImageFactorySpec;
  readonly network: {
    readonly nameservers: readonly string[];
    readonly searchDomains: readonly string[];
    readonly ntpServers: readonly string[];
    readonly podSubnets?: readonly string[];
    readonly serviceSubnets?: readonly string[];
    /** `cilium` and `none`: Talos installs no CNI. */
    readonly cni: "flannel" | "cilium" | "none";
    readonly kubeProxy: boolean;
    /** How the sites reach each other; `single` when every node is at one site. */
    readonly connectivity: Connectivity;
    /** With `cni: cilium`: how the Cilium you install routes pods, and the policy the program adds. */
    readonly cilium?: CiliumSpec;
  };
  /** Every site with a node, by name, with its settings. */
  readonly sites: Readonly<Record<string, SiteSpec>>;
  readonly rollout: { readonly maxUnavailableWorkers: number };
  readonly allowSchedulingOnControlPlanes: boolean;
  readonly certSANs: readonly string[];
  /**
   * The manifest of the approver of kubelet serving CSRs, installed with the control planes'
   * extraManifests: when a patch enables `rotate-server-certificates` and the stack brings none.
   */
  readonly servingCertApprover?: string;
  /** Cluster-wide patches as YAML strings, by scope. */
  readonly patches: {
    readonly all: readonly string[];
    readonly controlplane: readonly string[];
    readonly worker: readonly string[];
  };
  readonly applyMode: ApplyMode;
  readonly protectControlPlanes: boolean;
  readonly health: { readonly enabled: boolean; readonly timeout: string };
  /** Where each CA's rotation stands (`rotate-ca`); a CA never rotated has none. */
  readonly caRotation: {
    readonly talos?: CaRotationRecord;
    readonly kubernetes?: CaRotationRecord;
  };
}

/**
 * A CA rotation's phases, in order (Talos' `rotate-ca`): the new CA generated (nothing on the nodes
 * yet), accepted beside the old one, issuing (the old one only accepted), the old one removed.
 */
export const CA_PHASES = ["generated", "accepted", "issuing", "removed"] as const;
/** One of {@link CA_PHASES}. */
export type CaPhase = (typeof CA_PHASES)[number];

/** Where one CA's rotation stands, as the stack file records it. */
export interface CaRotationRecord {
  /** The generation rotated to: 1 for the first rotation; 0 is the machine secrets' own CA. */
  readonly generation: number;
  readonly phase: CaPhase;
  /** The nodes the phase reached while it rolls (the others are one phase behind); absent: all. */
  readonly nodes?: readonly string[];
}

/** Proxmox connection and defaults. */
export interface ProxmoxSpec {
  readonly endpoint: string;
  readonly insecure: boolean;
  readonly hosts: readonly { readonly name: string; readonly imageDatastore: string }[];
  readonly datastore: string;
  readonly bridge: string;
  readonly cpuType: string;
  readonly imageFormat: "qcow2" | "raw" | "raw.zst" | "raw.gz";
  /** SSH for the compressed-image formats; absent: API only. */
  readonly ssh?: { readonly username: string; readonly agent: boolean };
  /** SSH addresses by host name, where given. */
  readonly sshAddresses: Readonly<Record<string, string>>;
}

/** OCI region, compartment, network and image. */
export interface OciSpec {
  readonly region: string;
  readonly compartmentId: string;
  readonly subnetId: string;
  readonly nsgIds: readonly string[];
  /** When absent, looked up from the compartment at run time. */
  readonly availabilityDomains?: readonly string[];
  readonly shape: string;
  readonly architecture: "amd64" | "arm64";
  readonly image: { readonly id: string } | { readonly objectStorageUri: string };
  readonly assignPublicIp: boolean;
  readonly hostnameLabel: boolean;
  /** Create the cluster's NSGs (nodes, control planes) and put every VNIC in them. */
  readonly manageNsgs: boolean;
  /** Who may reach the Talos and Kubernetes APIs through the managed NSGs. */
  readonly apiAllowedCidrs: readonly string[];
  readonly freeformTags: Readonly<Record<string, string>>;
}

/** OpenStack region, network, flavor and image. */
export interface OpenstackSpec {
  readonly region?: string;
  readonly networkId: string;
  readonly subnetId?: string;
  readonly subnet6Id?: string;
  readonly flavor: string;
  readonly availabilityZones?: readonly string[];
  /** The Cinder zone of the volumes; none: each volume in its instance's Nova zone. */
  readonly volumeAvailabilityZone?: string;
  /**
   * The Nova server group the control planes' instances are created in: `anti-affinity` puts each
   * on its own compute host (Nova refuses to schedule one otherwise), `soft-anti-affinity` only tries.
   */
  readonly controlPlaneServerGroup: "anti-affinity" | "soft-anti-affinity" | "none";
  readonly image: { readonly name: string } | { readonly upload: true };
  readonly apiAllowedCidrs: readonly string[];
}

/** The GCP project the foundation's cloud services live in. */
export interface GcpSpec {
  readonly project: string;
  readonly region: string;
}

/** The KMS key OpenBao auto-unseals with. */
export interface OpenbaoSpec {
  readonly keyRing: string;
  readonly cryptoKey: string;
  readonly location: string;
  readonly rotationPeriod: string;
  readonly credentials: "serviceAccountKey" | "workloadIdentity" | "existingKey";
  /** OpenBao's Kubernetes service account (workloadIdentity). */
  readonly kubernetesServiceAccount: { readonly namespace: string; readonly name: string };
  /** The Workload Identity pool's ID, when the stack names one (workloadIdentity). */
  readonly workloadIdentityPoolId?: string;
  /** The existing key's service account (existingKey). */
  readonly serviceAccountEmail?: string;
  /** The GCP KMS plugin (OpenBao 2.7+, where gcpckms is no longer built in). */
  readonly kmsPlugin?: {
    readonly image: string;
    readonly version: string;
    readonly sha256sum: string;
  };
}

/** One DNS record, its name fully qualified with a trailing dot. */
export interface DnsRecordSpec {
  readonly name: string;
  readonly type: "A" | "AAAA" | "CNAME" | "TXT";
  readonly values: readonly string[];
}

/** Records in an existing Cloud DNS zone. */
export interface DnsSpec {
  readonly zone: string;
  /** `example.net.` */
  readonly domain: string;
  readonly ttl: number;
  /** The API endpoint's name (a DNS name), when it lies in the zone. */
  readonly endpointName?: string;
  readonly records: readonly DnsRecordSpec[];
}

/** The Git repository Flux takes over from. */
export interface FluxSpec {
  readonly version: string;
  readonly repository: string;
  readonly branch: string;
  readonly path: string;
  readonly knownHosts?: string;
  /** An ssh:// repository, read with a deploy key. */
  readonly ssh: boolean;
}

/** Where off-site etcd backups are kept. */
export type BackupDestination =
  | {
      readonly kind: "gs";
      readonly bucket: string;
      /** The object-name prefix, ending in `/` (`etcd/<cluster>/`). */
      readonly prefix: string;
      /** `gs://<bucket>/<prefix>` */
      readonly url: string;
    }
  | {
      readonly kind: "file";
      /** An absolute folder: a stand-in for the bucket (tests, labs); the in-cluster job cannot write there. */
      readonly dir: string;
      /** `file://<dir>/` */
      readonly url: string;
    };

/** Off-site etcd backups: talos-backup as a CronJob, writing age-encrypted snapshots to one prefix. */
export interface EtcdBackupsSpec {
  /** Five-field cron, UTC. */
  readonly schedule: string;
  /** The longest gap between two runs of the schedule: a backup older than twice this is overdue. */
  readonly periodMs: number;
  readonly retentionDays: number;
  readonly destination: BackupDestination;
  /** The age X25519 public key snapshots are encrypted to. */
  readonly ageRecipient: string;
  /** The namespace the job runs in, the only one allowed Talos API access. */
  readonly namespace: string;
  readonly image: string;
}

/** Foundation services around the cluster; each present only when its stack key is. */
export interface ServicesSpec {
  readonly gcp?: GcpSpec;
  readonly openbao?: OpenbaoSpec;
  readonly dns?: DnsSpec;
  readonly flux?: FluxSpec;
  readonly etcdBackups?: EtcdBackupsSpec;
}

/** Everything one stack declares, validated. */
export interface PlatformSpec {
  readonly services: ServicesSpec;
  readonly cluster: ClusterSpec;
  readonly nodes: readonly NodeSpec[];
  readonly proxmox?: ProxmoxSpec;
  readonly oci?: OciSpec;
  readonly openstack?: OpenstackSpec;
}
