// The validated, defaulted stack configuration the components receive. Built only by validate.ts.
import type { Platform, Role } from "./schema";

/** Apply modes for later configuration changes. */
export type ApplyMode = "auto" | "no_reboot" | "reboot" | "staged" | "staged_if_needing_reboot";

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
  readonly network?: NodeNetworkSpec;
  readonly labels: Readonly<Record<string, string>>;
  /** Per-node patches as YAML strings. */
  readonly patches: readonly string[];
  /** The address its Talos API answers on (port 50000), before and after configuration. */
  readonly talosAddress: string;
}

/** A Proxmox VM node. */
export interface ProxmoxNodeSpec extends NodeSpecCommon {
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
export interface BaremetalNodeSpec extends NodeSpecCommon {
  readonly platform: "baremetal";
  readonly baremetal: { readonly address: string; readonly resetOnDestroy: boolean };
}

/** Any node. */
export type NodeSpec = ProxmoxNodeSpec | BaremetalNodeSpec;

/** Image Factory settings. */
export interface ImageFactorySpec {
  /** A fixed schematic ID, used when no extensions or kernel args are listed. */
  readonly schematicId?: string;
  readonly extensions: readonly string[];
  readonly platformExtensions: Readonly<Partial<Record<Platform, readonly string[]>>>;
  readonly extraKernelArgs: readonly string[];
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
    readonly cni: "flannel" | "none";
    readonly kubeProxy: boolean;
  };
  readonly allowSchedulingOnControlPlanes: boolean;
  readonly certSANs: readonly string[];
  /** Cluster-wide patches as YAML strings, by scope. */
  readonly patches: {
    readonly all: readonly string[];
    readonly controlplane: readonly string[];
    readonly worker: readonly string[];
  };
  readonly applyMode: ApplyMode;
  readonly protectControlPlanes: boolean;
  readonly health: { readonly enabled: boolean; readonly timeout: string };
}

/** Proxmox connection and defaults. */
export interface ProxmoxSpec {
  readonly endpoint: string;
  readonly insecure: boolean;
  readonly hosts: readonly { readonly name: string; readonly imageDatastore: string }[];
  readonly datastore: string;
  readonly bridge: string;
  readonly cpuType: string;
}

/** Everything one stack declares, validated. */
export interface PlatformSpec {
  readonly cluster: ClusterSpec;
  readonly nodes: readonly NodeSpec[];
  readonly proxmox?: ProxmoxSpec;
}
