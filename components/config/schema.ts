// The shape of a stack file's `talos-platform:*` keys. Structure only: every rule across fields lives
// in rules/.
import { z } from "zod";
import { ipFamily, isDnsName, isMac, parseCidr } from "../net";
import { CA_PHASES, PLATFORMS, ROLES } from "../spec/types";
import { parseVersion } from "../talos/versions";
import { parseDestination, scheduleProblem } from "./etcdBackups";

/**
 * Talos `applyMode` values a stack may ask for (rules/quorum.ts refuses those that could reboot more
 * nodes at once than the cluster can lose, and `staged`, which never leaves maintenance mode on a new
 * node).
 */
const APPLY_MODES = ["auto", "no_reboot", "reboot", "staged", "staged_if_needing_reboot"] as const;

const ip = z.string().refine((v) => ipFamily(v) !== undefined, {
  error: "expected an IPv4 or IPv6 address such as 192.0.2.10 or 2001:db8::10",
});
const ipv4 = z
  .string()
  .refine((v) => ipFamily(v) === 4, { error: "expected an IPv4 address such as 192.0.2.1" });
const ipv6 = z
  .string()
  .refine((v) => ipFamily(v) === 6, { error: "expected an IPv6 address such as 2001:db8::1" });
const cidr = z.string().refine((v) => parseCidr(v) !== undefined, {
  error: "expected an address with its prefix length, such as 192.0.2.11/24 or 2001:db8::11/64",
});
const version = z
  .string({
    // `kubernetesVersion: 1.36` is a YAML number (and 1.30 would read as 1.3).
    error: (issue) =>
      typeof issue.input === "number"
        ? 'is a YAML number, not a version (unquoted, 1.30 reads as 1.3); quote it and give the patch release, e.g. "1.36.3"'
        : undefined,
  })
  .refine((v) => parseVersion(v) !== undefined, {
    error: "expected a version MAJOR.MINOR.PATCH such as v1.13.9 or 1.36.3",
  });
const dnsLabel = z.string().regex(/^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/, {
  error: "expected a lowercase DNS label (letters, digits, hyphens; at most 63 characters)",
});
const hostName = z.string().refine((v) => ipFamily(v) !== undefined || isDnsName(v), {
  error: "expected a DNS name or an IP address, without scheme or port",
});
const mac = z.string().refine(isMac, { error: "expected a MAC address such as bc:24:11:00:00:11" });
const positiveInt = z.int().positive();

/** One CA's rotation record (components/talos/caRotation.ts). */
export const caRotationRecordSchema = z.strictObject({
  /** The CA generation being rotated to: 1 for the first rotation (0 is the machine secrets' own). */
  generation: positiveInt,
  phase: z.enum(CA_PHASES, { error: `expected one of ${CA_PHASES.join(", ")}` }),
  /** The nodes the phase reached while it rolls; absent: every node. */
  nodes: z.array(z.string().min(1)).optional(),
});
const duration = z
  .string()
  .regex(/^(\d+(\.\d+)?(h|m|s|ms))+$/, { error: "expected a Go duration such as 10m or 1h30m" });

/** A Talos config patch: a YAML string (one or more documents) or a mapping written inline in the stack file. */
const patch = z.union([z.string(), z.record(z.string(), z.unknown())], {
  error: "expected a YAML string or a mapping",
});
/** A list of patches, as `cluster.patches.<scope>` and `nodes[].patches` take them. */
export const patchListSchema = z.array(patch);
const patches = patchListSchema;

const nodeNetwork = z.strictObject({
  /** Static addresses with prefix, first one is the node's Talos API address. */
  addresses: z.array(cidr).min(1, { error: "list at least one address" }),
  /** Default IPv4 gateway. */
  gateway: ipv4.optional(),
  /** Default IPv6 gateway. */
  gateway6: ipv6.optional(),
  /** The NIC's MAC: selects the link by hardware address (Proxmox: also the VM NIC's MAC). */
  mac: mac.optional(),
  /** The physical link name (`enp1s0`) when no MAC is given. */
  interface: z.string().min(1).optional(),
  mtu: z.int().min(576).max(9216).optional(),
});

/** How the sites of a multi-site cluster reach each other (see docs/platforms.md). */
const CONNECTIVITY = ["kubespan", "routed"] as const;

/** CNIs the program knows the ports of; `none` leaves the CNI (and its ports) to the operator. */
const CNIS = ["flannel", "cilium", "none"] as const;
const CILIUM_ROUTING_MODES = ["tunnel", "native"] as const;
const CILIUM_UNDERLAYS = ["ipv4", "ipv6"] as const;

/** Image Factory formats of the Proxmox `nocloud` image (see components/nodes/proxmox/imageFormat.ts). */
const PROXMOX_IMAGE_FORMATS = ["qcow2", "raw", "raw.zst", "raw.gz"] as const;

/** How OpenBao's unseal identity authenticates to GCP. */
const OPENBAO_CREDENTIALS = ["serviceAccountKey", "workloadIdentity", "existingKey"] as const;

/** Resolvers and time servers; on a site or a node they override the cluster's. */
const resolvers = {
  nameservers: z.array(ip).optional(),
  searchDomains: z
    .array(z.string().refine(isDnsName, { error: "expected a DNS domain" }))
    .optional(),
  ntpServers: z.array(z.string().min(1)).optional(),
};

const nodeCommon = {
  name: dnsLabel,
  /** The site the node is at. @default its platform (`proxmox`, `baremetal`, `oci-<region>`, `openstack-<region>`) */
  site: dnsLabel.optional(),
  ...resolvers,
  role: z.enum(ROLES, { error: `expected one of ${ROLES.join(", ")}` }),
  /** @default "/dev/sda" (cloud platforms: the platform's boot disk) */
  installDisk: z
    .string()
    .regex(/^\/dev\/\S+$/, { error: "expected a device path such as /dev/sda" })
    .optional(),
  /** Kubernetes node labels. */
  labels: z.record(z.string(), z.string()).optional(),
  patches: patches.optional(),
};

/** Nodes whose network Talos configures statically (the cloud platforms bring their own). */
const staticNetwork = { network: nodeNetwork.optional() };

/** Cloud nodes boot configured from user data; later changes are pushed unless the node is unreachable. */
const cloudCommon = {
  ...nodeCommon,
  /** Push later config changes over the Talos API (port 50000). @default true */
  pushConfig: z.boolean().optional(),
};

const proxmoxVm = z.strictObject({
  /** The Proxmox host (cluster node name) the VM is placed on; must be listed in `proxmox.hosts`. */
  host: z.string().min(1),
  vmId: z.int().min(100, { error: "Proxmox VM IDs start at 100" }).max(999_999_999),
  /** @default 2 */
  cores: positiveInt.optional(),
  /** MiB. @default 4096 */
  memory: z.int().min(1024, { error: "Talos needs at least 1024 MiB" }).optional(),
  /** GiB. @default 32 */
  diskSize: z.int().min(10, { error: "Talos needs a disk of at least 10 GiB" }).optional(),
  /** @default proxmox.datastore */
  datastore: z.string().min(1).optional(),
  /** @default proxmox.bridge */
  bridge: z.string().min(1).optional(),
  vlan: z.int().min(1).max(4094).optional(),
  /** @default proxmox.cpuType */
  cpuType: z.string().min(1).optional(),
});

const proxmoxNode = z.strictObject({
  ...nodeCommon,
  ...staticNetwork,
  platform: z.literal("proxmox"),
  proxmox: proxmoxVm,
});

const baremetalNode = z.strictObject({
  ...nodeCommon,
  ...staticNetwork,
  platform: z.literal("baremetal"),
  baremetal: z.strictObject({
    /** The node's configured address: every push after the first, health checks, talosconfig. IPv6 works. */
    address: ip,
    /** Where the node answers in maintenance mode (DHCP/SLAAC), for the first push only. @default address */
    maintenanceAddress: ip.optional(),
    /**
     * Allow the first (unauthenticated) push to a public maintenance address (`maintenanceAddress`,
     * else `address`). @default false
     */
    allowPublicMaintenance: z.boolean().optional(),
    /** Wipe and reboot the node when it is removed from the stack. @default true */
    resetOnDestroy: z.boolean().optional(),
  }),
});

const ociInstance = z.strictObject({
  /** @default oci.shape */
  shape: z.string().min(1).optional(),
  /** Flex shapes only. @default 2 */
  ocpus: z.number().positive().optional(),
  /** Flex shapes only. @default 12 */
  memoryGbs: z.number().min(2, { error: "Talos needs at least 2 GB" }).optional(),
  /** @default 50 */
  bootVolumeGbs: z.int().min(50, { error: "OCI boot volumes start at 50 GB" }).optional(),
  /** @default oci.subnetId */
  subnetId: z.string().min(1).optional(),
  /** A fixed private IPv4 in the subnet. */
  privateIp: ipv4.optional(),
  /** Assign an IPv6 address from the subnet. @default false */
  assignIpv6: z.boolean().optional(),
  /** A fixed IPv6 address from the subnet's IPv6 prefix (implies assignIpv6). */
  ipv6Address: ipv6.optional(),
  /** Give the VNIC a public IPv4; the Talos API is then reached there. @default oci.assignPublicIp */
  assignPublicIp: z.boolean().optional(),
  /** @default oci.nsgIds */
  nsgIds: z.array(z.string().min(1)).optional(),
  /** Overrides the spread over availability domains. */
  availabilityDomain: z.string().min(1).optional(),
  /** Overrides the spread over fault domains. */
  faultDomain: z
    .string()
    .regex(/^FAULT-DOMAIN-[123]$/, { error: "expected FAULT-DOMAIN-1, -2 or -3" })
    .optional(),
});

const ociNode = z.strictObject({
  ...cloudCommon,
  platform: z.literal("oci"),
  oci: ociInstance.optional(),
});

const openstackInstance = z.strictObject({
  /** @default openstack.flavor */
  flavor: z.string().min(1).optional(),
  /** Boot volume size in GiB, created from the Talos image. @default 20 */
  volumeSize: z.int().min(10, { error: "Talos needs a disk of at least 10 GiB" }).optional(),
  volumeType: z.string().min(1).optional(),
  /** An extra data volume in GiB, formatted and mounted by Talos as the user volume `data` (/var/mnt/data). */
  dataVolumeSize: z.int().min(1).optional(),
  /** Overrides the spread over openstack.availabilityZones. */
  availabilityZone: z.string().min(1).optional(),
  /** Fixed IPv4 on the network's subnet. */
  fixedIp: ipv4.optional(),
  /** Fixed IPv6 on the network's IPv6 subnet. */
  fixedIp6: ipv6.optional(),
  /** The port's MAC (the config selects the link by it). @default derived from cluster and node name */
  mac: mac.optional(),
});

const openstackNode = z.strictObject({
  ...cloudCommon,
  platform: z.literal("openstack"),
  openstack: openstackInstance.optional(),
});

/** One machine of the cluster. */
export const nodeSchema = z.discriminatedUnion(
  "platform",
  [proxmoxNode, baremetalNode, ociNode, openstackNode],
  {
    error: `expected platform to be one of ${PLATFORMS.join(", ")}`,
  },
);

/**
 * What every node has whatever its platform (its other keys ignored): checked on its own when the
 * platform is unknown, so a misspelt role is not hidden by a misspelt platform.
 */
export const nodeCommonSchema = z.object(nodeCommon);

/** The `talos-platform:nodes` key. */
export const nodesSchema = z.array(z.unknown(), { error: "expected a list of nodes" });

/** The `talos-platform:cluster` key. */
export const clusterSchema = z.strictObject({
  name: dnsLabel,
  /** DNS name or IP of the Kubernetes API (without scheme/port). @default vip */
  endpoint: hostName.optional(),
  /** A layer-2 virtual IP shared by the control planes. */
  vip: ip.optional(),
  talosVersion: version,
  kubernetesVersion: version,
  /** The Talos version whose config defaults to follow. @default talosVersion */
  configContract: version.optional(),
  imageFactory: z
    .strictObject({
      /** An existing schematic ID; used when no extensions or kernel args are listed. */
      schematicId: z
        .string()
        .regex(/^[0-9a-f]{64}$/, { error: "expected a 64-character hex schematic ID" })
        .optional(),
      /** Official system extensions for every node, e.g. siderolabs/intel-ucode. */
      extensions: z.array(z.string().min(1)).optional(),
      /** Extra extensions per platform, e.g. proxmox: [siderolabs/qemu-guest-agent]. */
      platformExtensions: z.partialRecord(z.enum(PLATFORMS), z.array(z.string().min(1))).optional(),
      /** Extra extensions per CPU architecture, e.g. amd64: [siderolabs/intel-ucode]. */
      architectureExtensions: z
        .partialRecord(z.enum(["amd64", "arm64"]), z.array(z.string().min(1)))
        .optional(),
      extraKernelArgs: z.array(z.string().min(1)).optional(),
    })
    .optional(),
  network: z
    .strictObject({
      nameservers: z.array(ip).optional(),
      searchDomains: z
        .array(z.string().refine(isDnsName, { error: "expected a DNS domain" }))
        .optional(),
      ntpServers: z.array(z.string().min(1)).optional(),
      podSubnets: z.array(cidr).optional(),
      serviceSubnets: z.array(cidr).optional(),
      /**
       * `cilium` and `none` leave installing the CNI to you (Talos runs none); `cilium` also opens Cilium's
       * ports on the firewalls the program manages. @default "flannel"
       */
      cni: z.enum(CNIS, { error: `expected one of ${CNIS.join(", ")}` }).optional(),
      /** @default true */
      kubeProxy: z.boolean().optional(),
      /** How the sites reach each other; required when nodes are at more than one site. */
      connectivity: z
        .enum(CONNECTIVITY, { error: `expected one of ${CONNECTIVITY.join(", ")}` })
        .optional(),
      /**
       * With `cni: cilium`: how the Cilium you install routes pods (the firewalls and validation follow
       * it), and the policy the program adds (docs/platforms.md: Cilium).
       */
      cilium: z
        .strictObject({
          /** Cilium's `routingMode`. @default "tunnel" */
          routingMode: z
            .enum(CILIUM_ROUTING_MODES, {
              error: `expected one of ${CILIUM_ROUTING_MODES.join(", ")}`,
            })
            .optional(),
          /** Cilium's `underlayProtocol`: the node-address family VXLAN travels over (tunnel). @default "ipv4" */
          underlayProtocol: z
            .enum(CILIUM_UNDERLAYS, { error: `expected one of ${CILIUM_UNDERLAYS.join(", ")}` })
            .optional(),
          /** You route the pod ranges between sites (native routing over several sites). @default false */
          podRangesRoutedBetweenSites: z.boolean().optional(),
          /**
           * A CiliumClusterwideNetworkPolicy denying pods the cloud metadata service (169.254.169.254),
           * which serves cloud nodes' machine configs. @default true when a node is on OCI or OpenStack
           */
          denyPodMetadataAccess: z.boolean().optional(),
        })
        .optional(),
    })
    .optional(),
  /** Per-site settings, by site name: resolvers, NTP, and the prefixes the site's nodes connect from. */
  sites: z
    .record(
      dnsLabel,
      z.strictObject({
        ...resolvers,
        /** Prefixes the site's nodes reach other sites from (firewall sources). @default the nodes' fixed addresses */
        cidrs: z.array(cidr).optional(),
      }),
    )
    .optional(),
  /** Rebooting nodes for staged changes (`rollout`). */
  rollout: z
    .strictObject({
      /** Workers rebooted at once; control planes always go one at a time. @default 1 */
      maxUnavailableWorkers: positiveInt.optional(),
    })
    .optional(),
  /** @default true when the cluster has no workers */
  allowSchedulingOnControlPlanes: z.boolean().optional(),
  /** Extra names and IPs for the API server and Talos API certificates. */
  certSANs: z.array(hostName).optional(),
  /**
   * Install the Kubelet Serving Certificate Approver (control planes' extraManifests) when a patch
   * enables `rotate-server-certificates`; `false` when the cluster brings its own approver.
   * @default true
   */
  kubeletServingCertApprover: z.boolean().optional(),
  patches: z
    .strictObject({
      all: patches.optional(),
      controlplane: patches.optional(),
      worker: patches.optional(),
    })
    .optional(),
  /** How config changes reach running nodes. @default "staged_if_needing_reboot" */
  applyMode: z.enum(APPLY_MODES, { error: `expected one of ${APPLY_MODES.join(", ")}` }).optional(),
  /** Protect control-plane machines from deletion. @default true */
  protectControlPlanes: z.boolean().optional(),
  /**
   * Where a CA rotation stands (written by `rotate-ca`, docs/day-two.md#ca-rotation): per CA, the
   * generation being rotated to and its phase, and while a phase is rolling, the nodes it reached.
   */
  caRotation: z
    .strictObject({
      talos: caRotationRecordSchema.optional(),
      kubernetes: caRotationRecordSchema.optional(),
    })
    .optional(),
  health: z
    .strictObject({
      /** Run the health check on `up` (never on preview). @default true */
      enabled: z.boolean().optional(),
      /** @default "10m" */
      timeout: duration.optional(),
    })
    .optional(),
});

/** The `talos-platform:proxmox` key. */
export const proxmoxSchema = z.strictObject({
  /** The Proxmox API URL, e.g. https://pve1.example.net:8006/. */
  endpoint: z.url({ protocol: /^https$/, error: "expected an https:// URL of the Proxmox API" }),
  /** Accept a self-signed API certificate. @default false */
  insecure: z.boolean().optional(),
  /** The Proxmox hosts VMs may be placed on. */
  hosts: z
    .array(
      z.strictObject({
        name: z.string().min(1),
        /** File-based datastore the Talos image is downloaded to (content `import`, or `iso` with ssh). @default "local" */
        imageDatastore: z.string().min(1).optional(),
        /** Where the provider reaches the host over SSH (only with proxmox.ssh). @default the address the API reports */
        sshAddress: hostName.optional(),
      }),
    )
    .min(1, { error: "list at least one host" }),
  /** Default VM disk datastore. @default "local-lvm" */
  datastore: z.string().min(1).optional(),
  /** Default VM bridge. @default "vmbr0" */
  bridge: z.string().min(1).optional(),
  /** Default VM CPU type. @default "x86-64-v2-AES" */
  cpuType: z.string().min(1).optional(),
  /**
   * The Image Factory format of the nocloud image: `qcow2`/`raw` are imported through the API (Proxmox
   * VE 8.4+); `raw.zst`/`raw.gz` are decompressed by Proxmox and imported over SSH. @default "qcow2"
   */
  imageFormat: z
    .enum(PROXMOX_IMAGE_FORMATS, { error: `expected one of ${PROXMOX_IMAGE_FORMATS.join(", ")}` })
    .optional(),
  /** SSH to the Proxmox hosts, for the compressed-image formats on Proxmox VE before 8.4. */
  ssh: z
    .strictObject({
      /** The Linux user on the hosts (an API token has no user to inherit). */
      username: z.string().min(1),
      /** Use the SSH agent at SSH_AUTH_SOCK; else the proxmoxSshPrivateKey credential. @default false */
      agent: z.boolean().optional(),
    })
    .optional(),
});

/** The `talos-platform:oci` key: where OCI nodes go. Credentials come from the environment. */
export const ociSchema = z.strictObject({
  region: z.string().min(1),
  compartmentId: z.string().regex(/^ocid1\.(compartment|tenancy)\./, {
    error: "expected a compartment OCID (ocid1.compartment...)",
  }),
  /** Default subnet of the nodes' VNICs. */
  subnetId: z
    .string()
    .regex(/^ocid1\.subnet\./, { error: "expected a subnet OCID (ocid1.subnet...)" }),
  /** Default network security groups. */
  nsgIds: z.array(z.string().min(1)).optional(),
  /** Availability domains to spread nodes over; looked up from the compartment when omitted. */
  availabilityDomains: z.array(z.string().min(1)).min(1).optional(),
  /** @default "VM.Standard.A1.Flex" */
  shape: z.string().min(1).optional(),
  /** @default "arm64" for Ampere (A1/A2) shapes, else "amd64" */
  architecture: z.enum(["amd64", "arm64"]).optional(),
  /** The Talos `oracle` image: an existing image OCID, or an object-storage URL of the .qcow2 to import. */
  image: z.union(
    [
      z.strictObject({
        id: z
          .string()
          .regex(/^ocid1\.image\./, { error: "expected an image OCID (ocid1.image...)" }),
      }),
      z.strictObject({
        objectStorageUri: z.url({
          protocol: /^https$/,
          error: "expected an https:// object storage URL",
        }),
      }),
    ],
    {
      error: "give either image.id (an image OCID) or image.objectStorageUri (a .qcow2 to import)",
    },
  ),
  /** @default false */
  assignPublicIp: z.boolean().optional(),
  /** Give each VNIC a hostname label (needs a subnet and VCN with DNS enabled). @default true */
  hostnameLabel: z.boolean().optional(),
  /** Create the nodes' and control planes' network security groups with the cluster's flows. @default true */
  manageNsgs: z.boolean().optional(),
  /** Networks allowed to reach the Talos (50000) and Kubernetes (6443) APIs through the managed NSGs. @default ["0.0.0.0/0", "::/0"] */
  apiAllowedCidrs: z.array(cidr).optional(),
  freeformTags: z.record(z.string(), z.string()).optional(),
});

/** The `talos-platform:openstack` key: where OpenStack nodes go. Credentials come from OS_* variables. */
export const openstackSchema = z.strictObject({
  region: z.string().min(1).optional(),
  /** The network the nodes' ports are on. */
  networkId: z.string().min(1),
  /** The IPv4 subnet of fixed IPs and of the VIP port. */
  subnetId: z.string().min(1).optional(),
  /** The IPv6 subnet of fixed IPv6 addresses. */
  subnet6Id: z.string().min(1).optional(),
  /** Default flavor. */
  flavor: z.string().min(1),
  /** Availability zones to spread nodes over. */
  availabilityZones: z.array(z.string().min(1)).min(1).optional(),
  /**
   * The Cinder availability zone of the nodes' boot and data volumes, when Cinder's zones are not
   * Nova's (many clouds' Cinder has only `nova`). @default the instance's zone (without `:host`)
   */
  volumeAvailabilityZone: z.string().min(1).optional(),
  /** The Nova server-group policy of the control planes' instances. @default "anti-affinity" */
  controlPlaneServerGroup: z.enum(["anti-affinity", "soft-anti-affinity", "none"]).optional(),
  /** The Talos `openstack` image: an existing Glance image by name, or uploaded by the program. @default { upload: true } */
  image: z
    .union(
      [z.strictObject({ name: z.string().min(1) }), z.strictObject({ upload: z.literal(true) })],
      {
        error: "give either image.name (an existing Glance image) or image.upload: true",
      },
    )
    .optional(),
  /** Networks allowed to reach the Talos (50000-50001) and Kubernetes (6443) APIs. @default ["0.0.0.0/0", "::/0"] */
  apiAllowedCidrs: z.array(cidr).optional(),
});

/** The `talos-platform:gcp` key: the GCP project of the unseal key and DNS. Credentials from the environment. */
export const gcpSchema = z.strictObject({
  project: z
    .string()
    .regex(/^[a-z][a-z0-9-]{4,28}[a-z0-9]$/, { error: "expected a GCP project ID" }),
  region: z.string().min(1),
});

/** The `talos-platform:openbao` key: the KMS key OpenBao's gcpckms seal auto-unseals with. */
export const openbaoSchema = z.strictObject({
  /** @default "<cluster>-openbao" */
  keyRing: z
    .string()
    .regex(/^[a-zA-Z0-9_-]{1,63}$/, {
      error: "expected a key ring name (letters, digits, - and _)",
    })
    .optional(),
  /** @default "unseal" */
  cryptoKey: z
    .string()
    .regex(/^[a-zA-Z0-9_-]{1,63}$/, { error: "expected a key name (letters, digits, - and _)" })
    .optional(),
  /** @default gcp.region */
  location: z.string().min(1).optional(),
  /** @default "7776000s" (90 days) */
  rotationPeriod: z
    .string()
    .regex(/^\d+s$/, { error: "expected seconds such as 7776000s" })
    .optional(),
  /**
   * How OpenBao authenticates to GCP: a key the program creates, keyless Workload Identity
   * Federation trusting the cluster's service-account tokens, or a key from the credentials store.
   * @default "serviceAccountKey"
   */
  credentials: z
    .enum(OPENBAO_CREDENTIALS, { error: `expected one of ${OPENBAO_CREDENTIALS.join(", ")}` })
    .optional(),
  /** The Kubernetes service account OpenBao runs as (workloadIdentity). @default { namespace: openbao, name: openbao } */
  kubernetesServiceAccount: z
    .strictObject({ namespace: dnsLabel.optional(), name: dnsLabel.optional() })
    .optional(),
  /**
   * The Workload Identity pool's ID (workloadIdentity). GCP keeps a deleted pool's ID for 30 days,
   * so a stack destroyed and created again within them needs another one (or the pool undeleted).
   * @default "<cluster>-openbao"
   */
  workloadIdentityPoolId: z
    .string()
    .regex(/^(?!gcp-)[a-z0-9-]{4,32}$/, {
      error: "expected 4 to 32 lowercase letters, digits and hyphens, not starting with gcp-",
    })
    .optional(),
  /** The service account whose key the gcpUnsealCredentials credential holds (existingKey). */
  serviceAccountEmail: z
    .string()
    .regex(/^[a-z0-9-]+@[a-z0-9-]+\.iam\.gserviceaccount\.com$/, {
      error: "expected a service-account email such as openbao@project.iam.gserviceaccount.com",
    })
    .optional(),
  /**
   * The GCP KMS plugin OpenBao 2.7 and later need for the gcpckms seal (no longer built in): put in
   * the `sealConfig` output's `plugin "kms" "gcpckms"` block. None: the seal stanza alone (OpenBao
   * 2.6 and earlier, built-in seal).
   */
  kmsPlugin: z
    .strictObject({
      /** @default "ghcr.io/openbao/openbao-plugin-kms-gcp" */
      image: z.string().min(1).optional(),
      /** The plugin release (image tag), e.g. v0.1.0. */
      version: z
        .string()
        .regex(/^v?\d+\.\d+\.\d+\S*$/, { error: "expected a version such as v0.1.0" }),
      /** SHA-256 of the plugin binary for the nodes' architecture (OpenBao checks it). */
      sha256sum: z
        .string()
        .regex(/^[0-9a-f]{64}$/, { error: "expected the binary's SHA-256: 64 hex digits" }),
    })
    .optional(),
});

/** The `talos-platform:dns` key: records in an existing Cloud DNS managed zone. */
export const dnsSchema = z.strictObject({
  /** The managed zone's resource name, e.g. example-net. */
  zone: z
    .string()
    .regex(/^[a-z][a-z0-9-]{0,62}$/, { error: "expected a managed zone name such as example-net" }),
  /** The zone's DNS name, e.g. example.net (a trailing dot is optional). */
  domain: z.string().refine((v) => isDnsName(v.replace(/\.$/, "")), {
    error: "expected a DNS domain such as example.net",
  }),
  /** @default 300 */
  ttl: z.int().min(30).max(86_400).optional(),
  /** More names, e.g. an ingress wildcard. The API endpoint's record is created by itself. */
  records: z
    .array(
      z.strictObject({
        name: z.string().refine((v) => isDnsName(v.replace(/^\*\./, "").replace(/\.$/, "")), {
          error: "expected a DNS name",
        }),
        type: z.enum(["A", "AAAA", "CNAME", "TXT"]).optional(),
        values: z.array(z.string().min(1)).min(1),
      }),
    )
    .optional(),
});

/** The `talos-platform:flux` key: the Git repository Flux takes over from once the cluster is up. */
export const fluxSchema = z.strictObject({
  /** Flux release whose install manifests Talos applies at bootstrap, e.g. v2.7.3. */
  version: z
    .string()
    .regex(/^v\d+\.\d+\.\d+$/, { error: "expected a Flux release such as v2.7.3" }),
  /** `ssh://git@github.com/org/repo.git` (deploy key) or `https://…` (public). */
  repository: z
    .string()
    .regex(/^(ssh|https):\/\/\S+$/, { error: "expected an ssh:// or https:// Git URL" }),
  /** @default "main" */
  branch: z.string().min(1).optional(),
  /** The folder Flux reconciles, e.g. clusters/staging. */
  path: z.string().min(1),
  /** SSH known_hosts line(s) of the Git server; required for ssh:// repositories. */
  knownHosts: z.string().min(1).optional(),
});

/** An age X25519 recipient (public key): `age1` and 58 bech32 characters. */
const ageRecipient = z.string().regex(/^age1[qpzry9x8gf2tvdw0s3jn54khce6mua7l]{58}$/, {
  error: "expected an age X25519 public key (age1…, 62 characters), as age-keygen prints it",
});

/**
 * The `talos-platform:etcdBackups` key: scheduled, encrypted etcd snapshots off the cluster, taken by
 * siderolabs/talos-backup as a CronJob (docs/day-two.md: Off-site etcd backups).
 */
export const etcdBackupsSchema = z.strictObject({
  /** Five-field cron schedule, UTC, e.g. "0 *\/6 * * *". */
  schedule: z.string().superRefine((value, ctx) => {
    const problem = scheduleProblem(value);
    if (problem) ctx.addIssue({ code: "custom", message: problem });
  }),
  /** Days a backup is kept (`etcd backups <env> --prune`). @default 30 */
  retentionDays: z.int().min(1).max(3650).optional(),
  /** `gs://<bucket>/<folder>/`, or `file:///<folder>` (no in-cluster job). @default gs://<state bucket>/etcd/<cluster>/ */
  destination: z
    .string()
    .superRefine((value, ctx) => {
      const parsed = parseDestination(value);
      if (typeof parsed === "string") ctx.addIssue({ code: "custom", message: parsed });
    })
    .optional(),
  /**
   * How snapshots are encrypted before they leave the cluster: talos-backup encrypts with an age
   * public key only (the bucket's own encryption at rest applies besides).
   */
  encryption: z.strictObject({ age: ageRecipient }),
  /** The namespace the job runs in, the only one allowed Talos API access. @default "talos-backup" */
  namespace: dnsLabel.optional(),
  /** talos-backup's image. @default "ghcr.io/siderolabs/talos-backup:v0.1.0-beta.3" */
  image: z
    .string()
    .regex(/^\S+[:@]\S+$/, { error: "expected an image with a tag or digest" })
    .optional(),
});

/** A node as written in the stack file. */
export type RawNode = z.infer<typeof nodeSchema>;
/** A Proxmox node as written in the stack file. */
export type RawProxmoxNode = z.infer<typeof proxmoxNode>;
/** A bare-metal node as written in the stack file. */
export type RawBaremetalNode = z.infer<typeof baremetalNode>;
/** An OCI node as written in the stack file. */
export type RawOciNode = z.infer<typeof ociNode>;
/** An OpenStack node as written in the stack file. */
export type RawOpenstackNode = z.infer<typeof openstackNode>;
/** The OCI settings as written in the stack file. */
export type RawOci = z.infer<typeof ociSchema>;
/** The OpenStack settings as written in the stack file. */
export type RawOpenstack = z.infer<typeof openstackSchema>;
/** The GCP settings as written in the stack file. */
export type RawGcp = z.infer<typeof gcpSchema>;
/** The OpenBao unseal-key settings as written in the stack file. */
export type RawOpenbao = z.infer<typeof openbaoSchema>;
/** The DNS settings as written in the stack file. */
export type RawDns = z.infer<typeof dnsSchema>;
/** The off-site etcd backup settings as written in the stack file. */
export type RawEtcdBackups = z.infer<typeof etcdBackupsSchema>;
/** The Flux handoff settings as written in the stack file. */
export type RawFlux = z.infer<typeof fluxSchema>;
/** The cluster settings as written in the stack file. */
export type RawCluster = z.infer<typeof clusterSchema>;
/** The Proxmox settings as written in the stack file. */
export type RawProxmox = z.infer<typeof proxmoxSchema>;
/** A config patch as written in the stack file. */
export type RawPatch = z.infer<typeof patch>;
