// Turns the raw `talos-platform:*` config values into a validated PlatformSpec, or throws one error
// listing every problem. Runs before any resource exists.
import { stringify } from "yaml";
import { z } from "zod";
import { deriveMac, hostPort, parseCidr } from "../net";
import { parseVersion } from "../talos/versions";
import { Problems, propertyNames } from "./problems";
import { IndexedNode, RULES } from "./rules";
import {
  clusterSchema,
  nodeSchema,
  nodesSchema,
  proxmoxSchema,
  RawCluster,
  RawNode,
  RawPatch,
  RawProxmox,
} from "./schema";
import type { ClusterSpec, NodeNetworkSpec, NodeSpec, PlatformSpec, ProxmoxSpec } from "./types";

/** The stack's config values, as read (objects already decoded from the stack file). */
export interface RawStackConfig {
  readonly cluster?: unknown;
  readonly nodes?: unknown;
  readonly proxmox?: unknown;
}

const KNOWN_KEYS = [
  ...propertyNames(z.toJSONSchema(clusterSchema, { unrepresentable: "any" })),
  ...propertyNames(z.toJSONSchema(nodeSchema, { unrepresentable: "any" })),
  ...propertyNames(z.toJSONSchema(proxmoxSchema, { unrepresentable: "any" })),
];

function parse<T>(
  key: string,
  schema: z.ZodType<T>,
  raw: unknown,
  problems: Problems,
): T | undefined {
  const result = schema.safeParse(raw);
  if (result.success) return result.data;
  problems.addZodIssues([key], raw, result.error.issues, KNOWN_KEYS);
  return undefined;
}

/**
 * Validates the whole stack config. Every section is checked even when another is broken, so the
 * error lists every problem at once.
 * @throws StackConfigError naming each offending key.
 */
export function validatePlatformConfig(raw: RawStackConfig, stackFile: string): PlatformSpec {
  const problems = new Problems();
  const cluster =
    raw.cluster === undefined
      ? missing("cluster", problems)
      : parse("cluster", clusterSchema, raw.cluster, problems);
  const proxmox =
    raw.proxmox === undefined ? undefined : parse("proxmox", proxmoxSchema, raw.proxmox, problems);
  const rawNodes =
    raw.nodes === undefined
      ? missing("nodes", problems)
      : parse("nodes", nodesSchema, raw.nodes, problems);
  const nodes: IndexedNode[] = [];
  (rawNodes ?? []).forEach((value, index) => {
    const result = nodeSchema.safeParse(value);
    if (result.success) nodes.push({ index, node: result.data });
    else problems.addZodIssues(["nodes", index], value, result.error.issues, KNOWN_KEYS);
  });

  const input = {
    cluster,
    proxmox,
    proxmoxGiven: raw.proxmox !== undefined,
    nodes,
    rawNodes: rawNodes ?? [],
  };
  for (const rule of RULES) rule(input, problems);
  problems.throwIfAny(stackFile);

  // No problems: every section parsed.
  const proxmoxSpec = proxmox && normalizeProxmox(proxmox);
  const clusterSpec = normalizeCluster(
    cluster!,
    nodes.map((n) => n.node),
  );
  return {
    cluster: clusterSpec,
    proxmox: proxmoxSpec,
    nodes: nodes.map(({ index, node }) => normalizeNode(index, node, clusterSpec, proxmoxSpec)),
  };
}

function missing(key: string, problems: Problems): undefined {
  problems.add([key], "required", {
    hint: "See the README's configuration reference and Pulumi.staging.yaml",
  });
  return undefined;
}

/** Patches as YAML strings: strings pass through, inline mappings are serialized. */
function patchText(patches: readonly RawPatch[] | undefined): string[] {
  return (patches ?? []).map((patch) => (typeof patch === "string" ? patch : stringify(patch)));
}

function normalizeCluster(cluster: RawCluster, nodes: readonly RawNode[]): ClusterSpec {
  const endpoint = (cluster.endpoint ?? cluster.vip)!;
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
    },
    allowSchedulingOnControlPlanes:
      cluster.allowSchedulingOnControlPlanes ?? nodes.every((n) => n.role === "controlplane"),
    certSANs: cluster.certSANs ?? [],
    patches: {
      all: patchText(cluster.patches?.all),
      controlplane: patchText(cluster.patches?.controlplane),
      worker: patchText(cluster.patches?.worker),
    },
    applyMode: cluster.applyMode ?? "auto",
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
  };
}

function normalizeNetwork(
  network: NonNullable<RawNode["network"]>,
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
  cluster: ClusterSpec,
  proxmox: ProxmoxSpec | undefined,
): NodeSpec {
  const common = {
    name: node.name,
    role: node.role,
    key: `nodes[${index}]`,
    installDisk: node.installDisk ?? "/dev/sda",
    labels: node.labels ?? {},
    patches: patchText(node.patches),
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
        baremetal: {
          address: node.baremetal.address,
          resetOnDestroy: node.baremetal.resetOnDestroy ?? true,
        },
      };
    default: {
      const unhandled: never = node;
      throw new Error(`unhandled platform in ${JSON.stringify(unhandled)}`);
    }
  }
}
