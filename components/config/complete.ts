// Between the rules and normalisation: what normalising a stack needs settled, as types. A complete
// stack has its cluster section, every node parsed with its platform's settings, an endpoint, versions
// and (over several sites) a connectivity; normalize.ts then only applies defaults.
import type { SemVer } from "semver";
import type { Connectivity } from "../spec/types";
import { parseVersion } from "../talos/versions";
import { siteOf } from "./derived";
import type { IndexedNode, RuleInput } from "./rules/rule";
import type {
  RawBaremetalNode,
  RawCluster,
  RawDns,
  RawFlux,
  RawEtcdBackups,
  RawGcp,
  RawOci,
  RawOciNode,
  RawOpenbao,
  RawOpenstack,
  RawOpenstackNode,
  RawProxmox,
  RawProxmoxNode,
} from "./schema";

/** The cluster section with what normalising it needs settled. */
export interface CompleteCluster {
  readonly raw: RawCluster;
  /** The API's DNS name or IP: `cluster.endpoint`, else the VIP. */
  readonly endpoint: string;
  readonly talosVersion: SemVer;
  readonly kubernetesVersion: SemVer;
  readonly configContract?: SemVer;
  /** `single` when every node is at one site. */
  readonly connectivity: Connectivity;
}

/** A Proxmox node's static network block. */
export type RawNodeNetwork = NonNullable<RawProxmoxNode["network"]>;

/** A parsed node with its platform's settings (a Proxmox node also with its network). */
export type CompleteNode =
  | {
      readonly platform: "proxmox";
      readonly index: number;
      readonly node: RawProxmoxNode;
      readonly network: RawNodeNetwork;
      readonly settings: RawProxmox;
    }
  | { readonly platform: "baremetal"; readonly index: number; readonly node: RawBaremetalNode }
  | {
      readonly platform: "oci";
      readonly index: number;
      readonly node: RawOciNode;
      readonly settings: RawOci;
    }
  | {
      readonly platform: "openstack";
      readonly index: number;
      readonly node: RawOpenstackNode;
      readonly settings: RawOpenstack;
    };

/** A stack file that passed every rule: what normalize.ts takes. */
export interface CompleteStack {
  readonly cluster: CompleteCluster;
  /** Every node of the stack file, in its order. */
  readonly nodes: readonly CompleteNode[];
  readonly proxmox?: RawProxmox;
  readonly oci?: RawOci;
  readonly openstack?: RawOpenstack;
  readonly gcp?: RawGcp;
  readonly openbao?: RawOpenbao;
  readonly dns?: RawDns;
  readonly flux?: RawFlux;
  readonly etcdBackups?: RawEtcdBackups;
  /** The state backend URL (`talos-platform:backend`), for the backups' default destination. */
  readonly backend?: unknown;
}

/** The cluster section settled; undefined when a rule reports why it cannot be. */
export function completeCluster(input: RuleInput): CompleteCluster | undefined {
  const { cluster, nodes, oci, openstack } = input;
  if (!cluster) return undefined;
  const endpoint = cluster.endpoint ?? cluster.vip;
  const talosVersion = parseVersion(cluster.talosVersion);
  const kubernetesVersion = parseVersion(cluster.kubernetesVersion);
  const sites = new Set(nodes.map(({ node }) => siteOf(node, oci, openstack)));
  const connectivity = sites.size > 1 ? cluster.network?.connectivity : "single";
  if (endpoint === undefined || !talosVersion || !kubernetesVersion || !connectivity) {
    return undefined;
  }
  let configContract: SemVer | undefined;
  if (cluster.configContract !== undefined) {
    configContract = parseVersion(cluster.configContract);
    if (!configContract) return undefined;
  }
  return { raw: cluster, endpoint, talosVersion, kubernetesVersion, configContract, connectivity };
}

/** A node with its platform's settings; undefined when they are missing (a rule reports it). */
export function completeNode(
  { index, node }: IndexedNode,
  { proxmox, oci, openstack }: RuleInput,
): CompleteNode | undefined {
  switch (node.platform) {
    case "proxmox":
      return proxmox && node.network
        ? { platform: "proxmox", index, node, network: node.network, settings: proxmox }
        : undefined;
    case "baremetal":
      return { platform: "baremetal", index, node };
    case "oci":
      return oci && { platform: "oci", index, node, settings: oci };
    case "openstack":
      return openstack && { platform: "openstack", index, node, settings: openstack };
    default: {
      const unhandled: never = node;
      throw new Error(`unhandled platform in ${JSON.stringify(unhandled)}`);
    }
  }
}

/**
 * The stack settled for normalising. Called once every rule passed, so anything missing here is a
 * rule that should exist: it throws naming what is missing.
 */
export function completeStack(input: RuleInput): CompleteStack {
  const cluster = completeCluster(input);
  if (!cluster) throw incomplete(input, "cluster");
  if (input.nodes.length !== input.rawNodes.length) throw incomplete(input, "nodes");
  const nodes = input.nodes.map((entry) => {
    const node = completeNode(entry, input);
    if (!node) throw incomplete(input, `nodes[${entry.index}]`);
    return node;
  });
  const { proxmox, oci, openstack, gcp, openbao, dns, flux, etcdBackups } = input;
  return {
    cluster,
    nodes,
    proxmox,
    oci,
    openstack,
    gcp,
    openbao,
    dns,
    flux,
    etcdBackups,
    backend: input.raw.backend,
  };
}

function incomplete({ stackFile }: RuleInput, key: string): Error {
  return new Error(
    `${stackFile}: ${key} passed every rule but cannot be normalized; a rule for it is missing (a bug)`,
  );
}
