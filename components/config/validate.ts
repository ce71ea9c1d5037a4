// Turns the raw `talos-platform:*` config values into a validated PlatformSpec, or throws one error
// listing every problem. Runs before any resource exists.
import { stringify } from "yaml";
import { z } from "zod";
import { canonicalIp, deriveMac, hostPort, hostPrefix, ipFamily, parseCidr } from "../net";
import { DEPLOY_KEY_PLACEHOLDER, fluxHandoffPatch } from "../flux/handoff";
import { machinePatches } from "../talos/patches";
import { estimatedUserDataLength, userDataProblem } from "../talos/userData";
import { parseVersion } from "../talos/versions";
import { CHECKS, checkPlainTextCredentials, checkTopLevelKeys } from "./checks";
import {
  FOUNDATION_KEYS,
  FOUNDATION_PROJECT,
  FOUNDATION_SECRET_KEYS,
  FOUNDATION_SETTINGS_KEYS,
} from "./keys";
import { PARSE_OPTIONS } from "./messages";
import { once, Problems, propertyNames } from "./problems";
import { fqdn, IndexedNode, RuleInput, RULES } from "./rules";
import {
  kubeletAddresses,
  knownSourceAddresses,
  nodeResolvers,
  serviceFamilies,
  siteOf,
  staticAddresses,
} from "./sites";
import {
  clusterSchema,
  dnsSchema,
  fluxSchema,
  gcpSchema,
  openbaoSchema,
  nodeSchema,
  nodesSchema,
  ociSchema,
  openstackSchema,
  proxmoxSchema,
  RawCluster,
  RawDns,
  RawFlux,
  RawGcp,
  RawOpenbao,
  RawNode,
  RawOci,
  RawOpenstack,
  RawPatch,
  RawProxmox,
} from "./schema";
import type {
  ClusterSpec,
  Connectivity,
  NodeNetworkSpec,
  NodeSpec,
  OciSpec,
  OpenstackSpec,
  PlatformSpec,
  PoolPlacement,
  ProxmoxSpec,
  ServicesSpec,
  SiteSpec,
} from "../spec/types";

/** The stack's config values, as read (objects already decoded from the stack file). */
export interface RawStackConfig {
  readonly cluster?: unknown;
  readonly nodes?: unknown;
  readonly proxmox?: unknown;
  readonly oci?: unknown;
  readonly openstack?: unknown;
  readonly gcp?: unknown;
  readonly openbao?: unknown;
  readonly dns?: unknown;
  readonly flux?: unknown;
  /** Secret config keys set on the stack; their values are never read here. */
  readonly secretKeys?: ReadonlySet<string>;
  /**
   * Every key set in the project's namespace, secret or not (`cluster`, `proxmoxApiToken`, a
   * misspelt `dsn`). @default the keys given above with a value, and the secret keys
   */
  readonly presentKeys?: ReadonlySet<string>;
  /** The project (config namespace), for messages. @default "talos-platform" */
  readonly project?: string;
}

/** Platform settings keys, in the order their problems are listed. */
const PLATFORM_KEYS = ["proxmox", "oci", "openstack"] as const;
/** Foundation service keys. */
const SERVICE_KEYS = ["gcp", "openbao", "dns", "flux"] as const;

/** Every key the sections know, for "did you mean" (computed when a stack has an unknown key). */
const knownKeys = once(() => [
  ...propertyNames(z.toJSONSchema(clusterSchema, { unrepresentable: "any" })),
  ...propertyNames(z.toJSONSchema(nodeSchema, { unrepresentable: "any" })),
  ...[
    proxmoxSchema,
    ociSchema,
    openstackSchema,
    gcpSchema,
    openbaoSchema,
    dnsSchema,
    fluxSchema,
  ].flatMap((schema) => [...propertyNames(z.toJSONSchema(schema, { unrepresentable: "any" }))]),
]);

function parse<T>(
  key: string,
  schema: z.ZodType<T>,
  raw: unknown,
  problems: Problems,
): T | undefined {
  const result = schema.safeParse(raw, PARSE_OPTIONS);
  if (result.success) return result.data;
  problems.addZodIssues([key], raw, result.error.issues, knownKeys());
  return undefined;
}

/** The keys `raw` sets, when the caller did not say which keys the stack has. */
function keysGiven(raw: RawStackConfig): Set<string> {
  const given = FOUNDATION_SETTINGS_KEYS.filter((key) => raw[key] !== undefined);
  return new Set<string>([...given, ...(raw.secretKeys ?? [])]);
}

/**
 * Validates the whole stack config. Every section is checked even when another is broken, so the
 * error lists every problem at once. Pure: callable on a stack file's values without the Pulumi
 * runtime (see `stackFileValues`).
 * @throws StackConfigError naming each offending key.
 */
export function validatePlatformConfig(raw: RawStackConfig, stackFile: string): PlatformSpec {
  const problems = new Problems();
  const secretKeys = raw.secretKeys ?? new Set<string>();
  const presentKeys = raw.presentKeys ?? keysGiven(raw);
  checkTopLevelKeys(raw.project ?? FOUNDATION_PROJECT, presentKeys, FOUNDATION_KEYS, problems);
  checkPlainTextCredentials(FOUNDATION_SECRET_KEYS, presentKeys, secretKeys, stackFile, problems);
  const cluster =
    raw.cluster === undefined
      ? missing("cluster", problems)
      : parse("cluster", clusterSchema, raw.cluster, problems);
  const optional = <T>(
    key: (typeof PLATFORM_KEYS | typeof SERVICE_KEYS)[number],
    schema: z.ZodType<T>,
  ) => (raw[key] === undefined ? undefined : parse(key, schema, raw[key], problems));
  const proxmox = optional("proxmox", proxmoxSchema);
  const oci = optional("oci", ociSchema);
  const openstack = optional("openstack", openstackSchema);
  const gcp = optional("gcp", gcpSchema);
  const openbao = optional("openbao", openbaoSchema);
  const dns = optional("dns", dnsSchema);
  const flux = optional("flux", fluxSchema);
  const rawNodes =
    raw.nodes === undefined
      ? missing("nodes", problems)
      : parse("nodes", nodesSchema, raw.nodes, problems);
  const nodes: IndexedNode[] = [];
  (rawNodes ?? []).forEach((value, index) => {
    const result = nodeSchema.safeParse(value, PARSE_OPTIONS);
    if (result.success) nodes.push({ index, node: result.data });
    else problems.addZodIssues(["nodes", index], value, result.error.issues, knownKeys());
  });

  const platformsGiven = new Set(PLATFORM_KEYS.filter((key) => raw[key] !== undefined));
  const input: RuleInput = {
    cluster,
    proxmox,
    oci,
    openstack,
    platformsGiven,
    openbao,
    dns,
    flux,
    servicesGiven: new Set(SERVICE_KEYS.filter((key) => raw[key] !== undefined)),
    secretKeys,
    presentKeys,
    nodes,
    rawNodes: rawNodes ?? [],
    raw: raw as Readonly<Record<string, unknown>>,
  };
  for (const rule of [...RULES, ...CHECKS]) rule(input, problems);

  // Normalizing needs the cluster; cloud nodes' user-data sizes are estimated even when other
  // sections have problems, so the report is complete.
  const normalize = () => {
    const context: NormalizeContext | undefined = cluster && {
      cluster: normalizeCluster(
        cluster,
        nodes.map((n) => n.node),
        oci,
        openstack,
      ),
      rawCluster: cluster,
      rawOci: oci,
      rawOpenstack: openstack,
      proxmox: proxmox && normalizeProxmox(proxmox),
      oci: oci && normalizeOci(oci),
      openstack: openstack && normalizeOpenstack(openstack),
    };
    const normalized = context ? normalizeNodes(nodes, context) : [];
    const services = context && normalizeServices(context.cluster, gcp, openbao, dns, flux);
    if (context && services)
      checkUserDataEstimates(context.cluster, services, normalized, problems);
    return { context, normalized, services };
  };
  let result: ReturnType<typeof normalize> | undefined;
  try {
    result = normalize();
  } catch (error) {
    // Normalizing a stack that has problems may trip over them; those problems are the report.
    if (problems.all.length === 0) throw error;
  }
  problems.throwIfAny(stackFile);

  // No problems: every section parsed and every node normalized.
  const { context, normalized, services } = result!;
  const {
    cluster: clusterSpec,
    proxmox: proxmoxSpec,
    oci: ociSpec,
    openstack: openstackSpec,
  } = context!;
  return {
    cluster: clusterSpec,
    proxmox: proxmoxSpec,
    oci: ociSpec,
    openstack: openstackSpec,
    services: services!,
    nodes: normalized.map((node) => node!),
  };
}

/** Each node normalized, in stack order; undefined where its platform's settings are missing. */
function normalizeNodes(
  nodes: readonly IndexedNode[],
  context: NormalizeContext,
): (NodeSpec | undefined)[] {
  const pools = new Map<string, number>();
  return nodes.map(({ index, node }) => {
    const pool = `${node.platform}/${node.role}`;
    const poolIndex = pools.get(pool) ?? 0;
    pools.set(pool, poolIndex + 1);
    const settingsMissing =
      (node.platform === "proxmox" && (!context.proxmox || !node.network)) ||
      (node.platform === "oci" && !context.oci) ||
      (node.platform === "openstack" && !context.openstack);
    return settingsMissing ? undefined : normalizeNode(index, node, poolIndex, context);
  });
}

/** The installer reference of the longest form, standing in for the real one in size estimates. */
const INSTALLER_PLACEHOLDER = `factory.talos.dev/openstack-installer/${"0".repeat(64)}:v1.13.99`;

/**
 * Cloud nodes carry their whole config as user data, which the platforms limit. The config itself is
 * generated later, so this estimates from the patches (exact check: TalosCluster, before any machine).
 */
function checkUserDataEstimates(
  cluster: ClusterSpec,
  services: ServicesSpec,
  nodes: readonly (NodeSpec | undefined)[],
  problems: Problems,
): void {
  for (const node of nodes) {
    if (node?.platform !== "oci" && node?.platform !== "openstack") continue;
    const flux = services.flux;
    const servicePatches =
      flux && node.role === "controlplane" ? [fluxHandoffPatch(flux, DEPLOY_KEY_PLACEHOLDER)] : [];
    const patches = machinePatches(cluster, node, INSTALLER_PLACEHOLDER, servicePatches);
    const problem = userDataProblem(node, estimatedUserDataLength(node.role, patches), true);
    if (problem) problems.addMessage(problem);
  }
}

function normalizeServices(
  cluster: ClusterSpec,
  gcp: RawGcp | undefined,
  openbao: RawOpenbao | undefined,
  dns: RawDns | undefined,
  flux: RawFlux | undefined,
): ServicesSpec {
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
        serviceAccountEmail: openbao.serviceAccountEmail,
      },
    dns: dns && {
      zone: dns.zone,
      domain: fqdn(dns.domain),
      ttl: dns.ttl ?? 300,
      endpointName: endpointIsName ? fqdn(cluster.endpoint) : undefined,
      records: (dns.records ?? []).map((record) => ({
        name: fqdn(record.name),
        type: record.type ?? (ipFamily(record.values[0]) === 6 ? "AAAA" : "A"),
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
  };
}

/** Settings every node's normalization may need. */
interface NormalizeContext {
  readonly cluster: ClusterSpec;
  readonly rawCluster: RawCluster;
  readonly rawOci?: RawOci;
  readonly rawOpenstack?: RawOpenstack;
  readonly proxmox?: ProxmoxSpec;
  readonly oci?: OciSpec;
  readonly openstack?: OpenstackSpec;
}

function missing(key: string, problems: Problems): undefined {
  problems.add([key], "required", {
    hint: "See docs/configuration.md and Pulumi.staging.yaml",
  });
  return undefined;
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

function normalizeCluster(
  cluster: RawCluster,
  nodes: readonly RawNode[],
  oci: RawOci | undefined,
  openstack: RawOpenstack | undefined,
): ClusterSpec {
  const endpoint = (cluster.endpoint ?? cluster.vip)!;
  const sites = normalizeSites(cluster, nodes, oci, openstack);
  const connectivity: Connectivity =
    Object.keys(sites).length > 1 ? cluster.network!.connectivity! : "single";
  const talosVersion = `v${parseVersion(cluster.talosVersion)!.version}`;
  const network = cluster.network ?? {};
  return {
    name: cluster.name,
    endpoint,
    endpointUrl: `https://${hostPort(endpoint, 6443)}`,
    vip: cluster.vip,
    talosVersion,
    kubernetesVersion: parseVersion(cluster.kubernetesVersion)!.version,
    configContract: cluster.configContract
      ? `v${parseVersion(cluster.configContract)!.version}`
      : talosVersion,
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
      connectivity,
    },
    sites,
    rollout: { maxUnavailableWorkers: cluster.rollout?.maxUnavailableWorkers ?? 1 },
    allowSchedulingOnControlPlanes:
      cluster.allowSchedulingOnControlPlanes ?? nodes.every((n) => n.role === "controlplane"),
    certSANs: cluster.certSANs ?? [],
    patches: {
      all: patchText(cluster.patches?.all),
      controlplane: patchText(cluster.patches?.controlplane),
      worker: patchText(cluster.patches?.worker),
    },
    applyMode: cluster.applyMode ?? "staged_if_needing_reboot",
    protectControlPlanes: cluster.protectControlPlanes ?? true,
    health: { enabled: cluster.health?.enabled ?? true, timeout: cluster.health?.timeout ?? "10m" },
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
  const shape = oci.shape ?? "VM.Standard.A1.Flex";
  return {
    region: oci.region,
    compartmentId: oci.compartmentId,
    subnetId: oci.subnetId,
    nsgIds: oci.nsgIds ?? [],
    availabilityDomains: oci.availabilityDomains,
    shape,
    // Ampere shapes (A1, A2) are arm64.
    architecture: oci.architecture ?? (/\.A\d\./.test(shape) ? "arm64" : "amd64"),
    image: oci.image,
    assignPublicIp: oci.assignPublicIp ?? false,
    hostnameLabel: oci.hostnameLabel ?? true,
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

function normalizeNetwork(
  network: NonNullable<Extract<RawNode, { platform: "proxmox" }>["network"]>,
  mac: string | undefined,
): NodeNetworkSpec {
  return {
    addresses: network.addresses,
    gateway: network.gateway,
    gateway6: network.gateway6,
    mac: mac?.toLowerCase(),
    interface: network.interface,
    mtu: network.mtu,
  };
}

function normalizeNode(
  index: number,
  node: RawNode,
  poolIndex: number,
  context: NormalizeContext,
): NodeSpec {
  const { cluster, proxmox, oci, openstack } = context;
  const site = siteOf(node, context.rawOci, context.rawOpenstack);
  const families = serviceFamilies(context.rawCluster);
  const common = {
    name: node.name,
    role: node.role,
    key: `nodes[${index}]`,
    // OpenStack instances see their boot volume as a virtio-blk disk.
    installDisk: node.installDisk ?? (node.platform === "openstack" ? "/dev/vda" : "/dev/sda"),
    architecture: node.platform === "oci" ? oci!.architecture : ("amd64" as const),
    labels: node.labels ?? {},
    patches: patchText(node.patches),
    site,
    resolvers: nodeResolvers(node, context.rawCluster, site),
  };
  switch (node.platform) {
    case "proxmox": {
      const vm = node.proxmox;
      const mac = (node.network!.mac ?? deriveMac(`${cluster.name}/${vm.vmId}`)).toLowerCase();
      const network = { ...normalizeNetwork(node.network!, mac), mac };
      return {
        ...common,
        platform: "proxmox",
        network,
        talosAddress: parseCidr(network.addresses[0])!.ip,
        kubeletAddresses: kubeletAddresses(staticAddresses(node), families),
        proxmox: {
          host: vm.host,
          vmId: vm.vmId,
          cores: vm.cores ?? 2,
          memory: vm.memory ?? 4096,
          diskSize: vm.diskSize ?? 32,
          datastore: vm.datastore ?? proxmox!.datastore,
          bridge: vm.bridge ?? proxmox!.bridge,
          vlan: vm.vlan,
          cpuType: vm.cpuType ?? proxmox!.cpuType,
        },
      };
    }
    case "baremetal":
      return {
        ...common,
        platform: "baremetal",
        network: node.network && normalizeNetwork(node.network, node.network.mac),
        talosAddress: node.baremetal.address,
        kubeletAddresses: kubeletAddresses(
          node.network ? staticAddresses(node) : [node.baremetal.address],
          families,
        ),
        baremetal: {
          address: node.baremetal.address,
          ...(node.baremetal.maintenanceAddress &&
          canonicalIp(node.baremetal.maintenanceAddress) !== canonicalIp(node.baremetal.address)
            ? { maintenanceAddress: node.baremetal.maintenanceAddress }
            : {}),
          resetOnDestroy: node.baremetal.resetOnDestroy ?? true,
        },
      };
    case "oci": {
      const settings = node.oci ?? {};
      const shape = settings.shape ?? oci!.shape;
      const assignPublicIp = settings.assignPublicIp ?? oci!.assignPublicIp;
      return {
        ...common,
        platform: "oci",
        pushConfig: node.pushConfig ?? true,
        // With a public IP the Talos API is reached there, known once the instance exists.
        declaredAddress: assignPublicIp ? undefined : (settings.ipv6Address ?? settings.privateIp),
        // The kubelet reports the VNIC's private addresses, never the (NATed) public IP.
        declaredKubeletAddress: families[0] === 6 ? settings.ipv6Address : settings.privateIp,
        placement: placement(poolIndex, oci!.availabilityDomains, settings.availabilityDomain),
        oci: {
          shape,
          flex: shape.endsWith(".Flex"),
          ocpus: settings.ocpus ?? 2,
          memoryGbs: settings.memoryGbs ?? 12,
          bootVolumeGbs: settings.bootVolumeGbs ?? 50,
          subnetId: settings.subnetId ?? oci!.subnetId,
          privateIp: settings.privateIp,
          assignIpv6: (settings.assignIpv6 ?? false) || settings.ipv6Address !== undefined,
          ipv6Address: settings.ipv6Address,
          assignPublicIp,
          hostnameLabel: oci!.hostnameLabel,
          nsgIds: settings.nsgIds ?? oci!.nsgIds,
          faultDomain: settings.faultDomain,
        },
      };
    }
    case "openstack": {
      const settings = node.openstack ?? {};
      return {
        ...common,
        platform: "openstack",
        pushConfig: node.pushConfig ?? true,
        declaredAddress:
          families[0] === 6
            ? (settings.fixedIp6 ?? settings.fixedIp)
            : (settings.fixedIp ?? settings.fixedIp6),
        declaredKubeletAddress: families[0] === 6 ? settings.fixedIp6 : settings.fixedIp,
        placement: placement(poolIndex, openstack!.availabilityZones, settings.availabilityZone),
        openstack: {
          flavor: settings.flavor ?? openstack!.flavor,
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
      const unhandled: never = node;
      throw new Error(`unhandled platform in ${JSON.stringify(unhandled)}`);
    }
  }
}
